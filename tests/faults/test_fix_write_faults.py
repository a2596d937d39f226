"""``toll fix --write`` writes whole or not at all, onto its own input too: a full disk
(here the process's file-size limit, which fails an oversize write with EFBIG as a full
disk fails it with ENOSPC) leaves the input exactly as it was."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

resource = pytest.importorskip("resource", reason="RLIMIT_FSIZE is POSIX")

TOOLS = [
    {
        "name": f"tool_{index}",
        "title": f"Tool {index}",
        "description": "Does one thing well, and says so at some length. " * 4,
        "inputSchema": {
            "type": "object",
            "title": "Arguments",
            "properties": {"path": {"type": "string", "title": "Path", "description": "a path"}},
            "additionalProperties": False,
        },
    }
    for index in range(40)
]
#: Bytes any one file may grow to in the child: less than the fixed list, more than nothing.
FILE_SIZE_LIMIT = 4096


def _limit_file_size() -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_SIZE_LIMIT, FILE_SIZE_LIMIT))


def fix_write(source: Path, out: Path, *, limited: bool) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_toll", "fix", "--tools", str(source), "--write", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
        env={k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")},
        preexec_fn=_limit_file_size if limited else None,
    )


def test_a_full_disk_leaves_its_own_input_whole(tmp_path: Path) -> None:
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(TOOLS, indent=2), encoding="utf-8")
    before = source.read_bytes()
    done = fix_write(source, source, limited=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{source}: cannot write" in done.stderr
    assert "Traceback" not in done.stderr
    assert source.read_bytes() == before
    assert [path.name for path in tmp_path.iterdir()] == ["tools.json"]  # no temporary left


def test_a_full_disk_leaves_an_existing_output_whole(tmp_path: Path) -> None:
    source, out = tmp_path / "tools.json", tmp_path / "fixed.json"
    source.write_text(json.dumps(TOOLS, indent=2), encoding="utf-8")
    out.write_text("the previous output\n", encoding="utf-8")
    done = fix_write(source, out, limited=True)
    assert done.returncode == 2, done.stdout + done.stderr
    assert out.read_text(encoding="utf-8") == "the previous output\n"


def test_a_write_onto_its_input_keeps_the_mode(tmp_path: Path) -> None:
    source = tmp_path / "tools.json"
    source.write_text(json.dumps(TOOLS, indent=2), encoding="utf-8")
    source.chmod(0o640)
    done = fix_write(source, source, limited=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert stat.S_IMODE(source.stat().st_mode) == 0o640
    fixed = json.loads(source.read_text(encoding="utf-8"))
    assert len(fixed) == len(TOOLS)
    assert "title" not in fixed[0]["inputSchema"]["properties"]["path"]  # an edit applied
