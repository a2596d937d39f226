"""The definitions job's text views: ``toll weigh`` and ``toll fix`` print exactly what
``definitions/render.py`` makes of their reports, and importing the views measures nothing."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from pytest_toll.definitions.fix import fix_source
from pytest_toll.definitions.render import render_fix, render_weigh
from pytest_toll.definitions.source import weigh_source
from tests.cli import run_toll as toll

TOOLS = Path(__file__).resolve().parents[1] / "fixtures" / "tools"


def test_weigh_prints_the_view_of_its_report() -> None:
    file = TOOLS / "pydantic_server.json"
    report = weigh_source(tools_file=file)
    printed = toll("weigh", "--tools", str(file))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == render_weigh(report) + "\n"
    lines = printed.stdout.splitlines()
    assert lines[0] == f"toll weigh: {report.target}"
    assert f"{report.claude:,}  total, claude serialization (o200k)" in [
        line.strip() for line in lines
    ]


def test_fix_prints_the_view_of_its_plan_and_names_the_file_written(tmp_path: Path) -> None:
    file = TOOLS / "pydantic_server.json"
    out = tmp_path / "fixed.json"
    plan = fix_source(tools_file=file)
    printed = toll("fix", "--tools", str(file), "--write", str(out))
    assert printed.returncode == 0, printed.stderr
    assert printed.stdout == render_fix(plan, written=out) + "\n"
    assert printed.stdout.splitlines()[-1] == (
        f"wrote {out}: every safe edit applied (toll weigh --tools {out})"
    )
    assert render_fix(plan).splitlines()[-1] == (
        "safe edits keep each schema's meaning; --write OUT writes them all"
    )


def test_the_views_load_no_server_client_and_no_tokenizer() -> None:
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pytest_toll.definitions.render; print('\\n'.join(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert "pytest_toll.definitions.render" in loaded
    measuring = {
        "pytest_toll.definitions.mcp",
        "pytest_toll.definitions.source",
        "pytest_toll.definitions.fix",
        "pytest_toll.definitions.weigh",
        "tiktoken",
    }
    assert measuring.isdisjoint(loaded)
