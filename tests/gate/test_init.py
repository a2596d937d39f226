"""``toll init`` on fresh repositories: real MCP servers started from the project's own
declarations, real skill folders, and then ``pytest --toll`` run on the ledger it wrote."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from pytest_toll.gate.starter import budget_for, discover, server_entry

ROOT = Path(__file__).resolve().parents[2]
SDK_SERVER = ROOT / "tests" / "servers" / "sdk_server.py"
DEMO = ROOT / "examples" / "demo"


def clean_env() -> dict[str, str]:
    """Not an xdist worker, not on GitHub; ``PYTEST_ADDOPTS`` (tests/conftest.py) stays."""
    return {
        key: value
        for key, value in os.environ.items()
        if key == "PYTEST_ADDOPTS"
        or (not key.startswith(("PYTEST_", "GITHUB_")) and key != "COV_CORE_SOURCE")
    }


def run(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def write_json(path: Path, data: Mapping[str, object]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2), encoding="utf-8")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository with an .mcp.json (a real stdio server, an SSE one, a broken one), a
    VS Code config naming the first server again, and a skills/ folder."""
    write_json(
        tmp_path / ".mcp.json",
        {
            "mcpServers": {
                "files": {"command": sys.executable, "args": [str(SDK_SERVER)]},
                "remote": {"type": "sse", "url": "http://127.0.0.1:9/sse"},
                "gone": {"command": str(tmp_path / "no-such-server")},
            }
        },
    )
    write_json(
        tmp_path / ".vscode" / "mcp.json",
        {"servers": {"files": {"type": "stdio", "command": "elsewhere"}}},
    )
    shutil.copytree(DEMO / "skills", tmp_path / "skills")
    return tmp_path


def test_init_writes_a_ledger_that_the_gate_passes(project: Path) -> None:
    done = run(["-m", "pytest_toll", "init"], project)
    assert done.returncode == 0, done.stderr
    assert "wrote toll.yaml: 1 server(s), 2 skill(s)" in done.stdout
    text = (project / "toll.yaml").read_text(encoding="utf-8")
    assert "  files:\n" in text and "    pin: " in text
    assert "      read_file: " in text  # per-tool pins
    # Servers that cannot be measured are written commented out, with the reason.
    assert "  # remote: not measured — an SSE server" in text
    assert '  #   url: "http://127.0.0.1:9/sse"' in text
    assert "  # gone: not measured — " in text and "command not found" in text
    # A second, different declaration of "files" is kept apart by where it lives.
    assert (
        ".vscode/mcp.json: files: also declared in .mcp.json, differently; written as "
        "vscode-files" in done.stderr
    )
    assert "  # vscode-files: not measured — " in text
    assert '  release-notes:\n    path: "skills/release-notes"\n' in text
    assert "pin: {metadata: 40, body: 146, references: 111}" in text
    # Budget = pin × 1.25 rounded up to the next hundred.
    assert f"budget: {budget_for(40 + 146 + 111)}" in text

    gate = run(["-m", "pytest", "--toll", "-p", "no:cacheprovider"], project)
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "3 entries: 3 passed (3 ok)" in gate.stdout


def test_init_never_overwrites_a_ledger(project: Path) -> None:
    (project / "toll.yaml").write_text("version: 1\n", encoding="utf-8")
    done = run(["-m", "pytest_toll", "init"], project)
    assert done.returncode == 4
    assert "toll.yaml exists; toll init never overwrites a ledger" in done.stderr
    assert (project / "toll.yaml").read_text(encoding="utf-8") == "version: 1\n"


def test_init_with_nothing_declared_is_could_not_judge(tmp_path: Path) -> None:
    done = run(["-m", "pytest_toll", "init"], tmp_path)
    assert done.returncode == 2
    assert "nothing to measure" in done.stderr
    assert not (tmp_path / "toll.yaml").exists()


def test_init_print_writes_nothing_and_takes_transcripts(tmp_path: Path) -> None:
    shutil.copytree(DEMO / "transcripts", tmp_path / "transcripts")
    done = run(["-m", "pytest_toll", "init", "--print"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert 'transcripts:\n  roots: ["transcripts"]\n' in done.stdout
    assert "waste_ratio_pin: 0.0922" in done.stdout
    assert list(tmp_path.iterdir()) == [tmp_path / "transcripts"]


def test_budget_headroom_rounds_up_to_a_hundred() -> None:
    assert budget_for(289) == 400
    assert budget_for(320) == 400
    assert budget_for(321) == 500
    assert budget_for(3) == 100
    assert budget_for(1000, headroom=1.5) == 1500


def test_server_declarations_in_each_shape(tmp_path: Path) -> None:
    entry, reason = server_entry(
        {
            "type": "stdio",
            "command": "node",
            "args": ["${workspaceFolder}/server.js"],
            "env": {"A": 1},
        },
        "where",
    )
    assert (entry, reason) == ({"command": ["node", "server.js"], "env": {"A": "1"}}, None)
    entry, reason = server_entry(
        {"type": "http", "url": "https://x.test/mcp", "headers": {"K": "${T}"}}, "where"
    )
    assert (entry, reason) == ({"url": "https://x.test/mcp", "headers": {"K": "${T}"}}, None)
    assert server_entry({"type": "stdio"}, "where") == ({}, "neither a command nor a url")
    write_json(
        tmp_path / "claude_desktop_config.json",
        {"mcpServers": {"desk": {"command": "python3", "args": ["-m", "desk"]}}},
    )
    write_json(tmp_path / ".cursor" / "mcp.json", {"other": {}})
    found = discover(tmp_path)
    assert [(s.name, s.origin, dict(s.entry)) for s in found.found["servers"]] == [
        ("desk", "claude_desktop_config.json", {"command": ["python3", "-m", "desk"]})
    ]
    assert found.notes == (".cursor/mcp.json: no mcpServers object; nothing taken from it",)
