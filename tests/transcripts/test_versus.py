"""Versus: two real commands, run without a shell, their output counted."""

from __future__ import annotations

import json
import shlex
import sys

import pytest

from pytest_toll import cli
from pytest_toll.core.tokens import count
from pytest_toll.transcripts.versus import versus


def _python(code: str) -> str:
    return f"{shlex.quote(sys.executable)} -c {shlex.quote(code)}"


def test_versus_runs_real_processes_without_a_shell() -> None:
    report = versus(_python("print('word ' * 100)"), _python("print('word')"))
    assert report.first.tokens == count("word " * 100 + "\n")
    assert report.second.tokens == count("word\n")
    assert report.saved == report.first.tokens - report.second.tokens
    assert report.as_dict()["b"]["exit_code"] == 0
    # no shell: a pipe is an argument, not a pipeline
    echoed = versus("echo a | wc -l", "echo b")
    assert echoed.first.tokens == count("a | wc -l\n")


def test_versus_refuses_a_failing_command(capsys: pytest.CaptureFixture[str]) -> None:
    failing = _python("import sys; print('oops'); sys.exit(3)")
    assert cli.main(["versus", failing, _python("print(1)")]) == 2
    assert "exited with 3" in capsys.readouterr().err
    assert cli.main(["versus", failing, _python("print(1)"), "--allow-failure", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["a"]["exit_code"] == 3 and data["a"]["tokens"] == count("oops\n")
    assert cli.main(["versus", "no-such-command-xyz", "true"]) == 2
    assert "command not found" in capsys.readouterr().err
