"""Running the ``toll`` command from tests: as a real process, or in this one."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_toll.cli import main


def run_toll(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[str]:
    """``toll ARGS`` as a child process; no Anthropic key or URL leaks in from the machine."""
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    environment.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "pytest_toll", *args],
        input=stdin.decode() if stdin is not None else None,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
        timeout=120,
    )


def run_main(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``toll ARGV`` in this process: its exit code, stdout and stderr."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
