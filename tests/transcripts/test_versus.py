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


def test_versus_never_prints_a_zero_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    long, short = _python("print('word ' * 2000)"), _python("print('w')")
    assert cli.main(["versus", long, short]) == 0
    report = versus(long, short)
    assert report.ratio is not None and 0 < report.ratio < 0.005  # four significant digits
    verdict = capsys.readouterr().out.splitlines()[-1]
    times = report.first.tokens / report.second.tokens
    assert f"(A is {times:,.0f}× B)" in verdict and "0.00×" not in verdict
    assert cli.main(["versus", long, _python("pass")]) == 0
    assert "(B prints nothing)" in capsys.readouterr().out
    assert cli.main(["versus", short, long]) == 0
    assert f"(B is {report.first.tokens / report.second.tokens:,.2f}× A)" in capsys.readouterr().out
