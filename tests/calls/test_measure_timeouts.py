"""``toll measure``'s two deadlines: ``--timeout`` for the MCP server (as ``toll weigh`` and
``toll fix`` name it) and ``--count-timeout`` for Anthropic's count_tokens; the 0.1.0
spellings (``--server-timeout``, and ``--timeout`` for count_tokens where it has no other
meaning) still work, hidden, with a notice."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pytest

from pytest_toll.cli import build_parser
from tests.cli import run_main as toll

SERVERS = Path(__file__).parents[1] / "servers"


def _hanging_server(tmp_path: Path) -> str:
    return f"{sys.executable} {SERVERS / 'raw_server.py'} hang {tmp_path / 'child.pid'}"


@pytest.mark.parametrize("option", ["--timeout", "--server-timeout"])
def test_the_server_timeout_reaches_the_server(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = toll(
        capsys,
        "measure",
        "--model",
        "gpt-6.2-sol",
        "--server",
        _hanging_server(tmp_path),
        option,
        "1",
    )
    assert code == 2
    assert "no answer to initialize within the 1s timeout" in err
    deprecated = "toll: --server-timeout is deprecated; use --timeout\n"
    assert (deprecated in err) == (option == "--server-timeout")


def test_timeout_with_exact_and_no_server_names_the_count_timeout(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """In 0.1.0 ``toll measure --exact --timeout 60`` bounded count_tokens; now it would bound
    nothing, so it is a usage error that names the option to use, not a silent change."""
    code, out, err = toll(
        capsys, "measure", "--model", "claude-sonnet-5", "--exact", "--timeout", "60"
    )
    assert (code, out) == (2, "")
    assert err == (
        "toll: error: --timeout is the MCP server's timeout (--server, --url); "
        "count_tokens' timeout is --count-timeout\n"
    )


#: The least each verb needs to parse.
REQUIRED = {"measure": ["--model", "m"], "calibrate": ["--model", "m", "x.txt"], "context": []}


def _verb_parser(verb: str) -> argparse.ArgumentParser:
    for action in build_parser(verb)._actions:
        if isinstance(action, argparse._SubParsersAction):
            return action.choices[verb]  # type: ignore[no-any-return]
    raise AssertionError(f"no sub-parser for toll {verb}")


@pytest.mark.parametrize("verb", sorted(REQUIRED))
def test_count_timeout_is_one_name_in_every_verb(verb: str) -> None:
    args = _verb_parser(verb).parse_args([*REQUIRED[verb], "--count-timeout", "7"])
    assert args.count_timeout == 7.0


@pytest.mark.parametrize("verb", ["calibrate", "context"])
def test_timeout_is_still_the_count_timeout_where_there_is_no_server(
    verb: str, capsys: pytest.CaptureFixture[str]
) -> None:
    args = _verb_parser(verb).parse_args([*REQUIRED[verb], "--timeout", "7"])
    assert args.count_timeout == 7.0
    assert capsys.readouterr().err == "toll: --timeout is deprecated; use --count-timeout\n"


def test_the_old_spellings_are_hidden_from_help() -> None:
    measure = _verb_parser("measure").format_help()
    assert "--server-timeout" not in measure
    assert "--timeout" in measure and "--count-timeout" in measure
    for verb in ("calibrate", "context"):
        text = _verb_parser(verb).format_help()
        assert "--count-timeout" in text
        assert "--timeout" not in text.replace("--count-timeout", "")
