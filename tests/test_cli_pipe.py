"""A reader that closes the pipe early (``toll … | head``) ends the command quietly."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_toll.cli import EXIT_BROKEN_PIPE


@pytest.mark.parametrize("json_output", [False, True])
def test_a_closed_pipe_ends_quietly(tmp_path: Path, json_output: bool) -> None:
    tools = [{"name": f"tool_{n}", "description": "Reads one thing. " * 4} for n in range(3000)]
    (tmp_path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    argv = [sys.executable, "-m", "pytest_toll", "weigh", "--tools", "tools.json"]
    argv += ["--rule", "E125=off", *(["--json"] if json_output else [])]
    # The output is far larger than a pipe's buffer, so the writer blocks until we read.
    process = subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdout is not None and process.stderr is not None
    first = process.stdout.read(100)  # what `head -c 100` reads
    process.stdout.close()
    errors = process.stderr.read().decode()
    assert process.wait(timeout=120) == EXIT_BROKEN_PIPE
    assert first.startswith(b"{" if json_output else b"toll weigh: ")
    assert errors == ""  # no BrokenPipeError traceback, no "Exception ignored" at exit
