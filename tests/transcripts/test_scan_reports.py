"""Drift, context and versus: exact numbers from fixtures and real processes."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

import pytest

from pytest_toll import cli
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.tokens import count
from pytest_toll.transcripts.scan import context_of, drift, find_session, versus

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
MAIN = FIXTURES / "claude" / "repo" / "sess-main.jsonl"
A_PY = "def answer():\n    return 42\n"
LOG = "abc123 first commit\ndef456 second commit\n"


def _call(name: str, **arguments: object) -> int:
    return count(name + json.dumps(arguments, ensure_ascii=False))


def test_drift_sums_growth_against_what_was_added() -> None:
    report = drift([FIXTURES], workers=1)
    rows = {row.model: row for row in report.rows}
    # msg_1 → msg_2: the reply, its thinking, two calls and their two results; msg_2 → msg_3
    # carries an image, so that turn is skipped rather than guessed.
    claude = count("Let me look.") + count("Looking.")
    claude += _call("Bash", command="cd /repo && git log --oneline -5") + _call(
        "Read", file_path="/repo/a.py"
    )
    claude += count(A_PY) + count(LOG)
    assert (
        rows["claude-sonnet-4-5"].turns,
        rows["claude-sonnet-4-5"].reported,
        rows["claude-sonnet-4-5"].counted,
    ) == (1, 310, claude)
    codex = _call("apply_patch", input="*** Begin Patch") + count(
        "Success. Updated the following files:\nM a.py\n"
    )
    codex += _call("shell", command=["bash", "-lc", "git status"]) + count(
        "On branch main\nnothing to commit\n"
    )
    assert (
        rows["gpt-5-codex"].turns,
        rows["gpt-5-codex"].reported,
        rows["gpt-5-codex"].counted,
    ) == (1, 300, codex)
    assert rows["gpt-5-codex"].ratio == round(300 / codex, 4)
    data = report.as_dict()
    assert (
        data["kind"] == "drift"
        and data["tolerance"] == 0.05
        and "method" in data
        and "limits" in data
    )


def test_drift_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["drift", "--root", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert "claude-sonnet-4-5" in out and "method: " in out and "limits: " in out
    (tmp_path / "one.jsonl").write_bytes((FIXTURES / "corrupt" / "sess-bad.jsonl").read_bytes())
    assert cli.main(["drift", "--root", str(tmp_path)]) == 2
    assert "no two consecutive turns" in capsys.readouterr().err


def test_context_slices_of_the_main_session() -> None:
    report = context_of(MAIN)
    results = [
        A_PY,
        LOG,
        A_PY,
        "fatal: not a git repository",
        "a.py:1: TODO\n... [120 lines truncated] ...",
        "nobody asked",
        "The file /repo/a.py has been updated.",
        A_PY,
        LOG,
    ]
    calls = [
        _call("Bash", command="cd /repo && git log --oneline -5"),
        _call("Read", file_path="/repo/a.py"),
        _call("Read", file_path="a.py"),
        _call("Bash", command="sudo timeout 30 env X=1 git log -p"),
        _call("Bash", command='python3 -c "print(1)"'),
        _call("Grep", pattern="TODO", path="/repo"),
        _call("mcp__files__list", dir="/repo"),
        _call("Read", file_path="/repo/shot.png"),
        _call("WebFetch", url="https://example.org/x"),
        _call("Edit", file_path="/repo/a.py", old_string="42", new_string="43"),
        _call("Read", file_path="/repo/a.py"),
        _call("Bash", command="cd /repo && git log --oneline -5"),
    ]
    assert report.slices == {
        "tool_results": sum(map(count, results)),
        "tool_calls": sum(calls),
        "user_messages": count("Please look at the repo"),
        "assistant_replies": count("Let me look.") + count("Looking."),
        "images": 7,
    }
    assert (report.session, report.model, report.turns, report.images) == (
        "sess-main",
        "claude-sonnet-4-5",
        3,
        1,
    )
    assert report.reported_prompt == 1605 and report.gap == 1605 - report.counted
    assert (
        report.input_tokens,
        report.output_tokens,
        report.cache_read_tokens,
        report.cache_write_tokens,
    ) == (115, 120, 2500, 1500)


def _session(
    path: Path, model: str, turns: list[tuple[int, int, int, int]], compact_after: int | None = None
) -> None:
    lines = []
    for index, (inp, read, write, out) in enumerate(turns):
        usage = {
            "input_tokens": inp,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
            "output_tokens": out,
        }
        message = {
            "id": f"m{index}",
            "role": "assistant",
            "model": model,
            "content": [{"type": "text", "text": f"reply {index}"}],
            "usage": usage,
        }
        lines.append({"type": "assistant", "sessionId": path.stem, "message": message})
        if compact_after == index:
            lines.append({"type": "system", "subtype": "compact_boundary", "sessionId": path.stem})
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")


def test_context_window_cost_and_compaction(tmp_path: Path) -> None:
    path = tmp_path / "opus.jsonl"
    _session(
        path, "claude-opus-4-7", [(1000, 0, 2000, 100), (10, 3000, 850_000, 200)], compact_after=0
    )
    report = context_of(path)
    assert report.slices["assistant_replies"] == count("reply 1")  # reply 0 was compacted away
    assert report.window == 1_000_000 and report.used == 0.853 and report.near_limit
    cost = (1010 * 5 + 300 * 25 + 3000 * 0.5 + 852_000 * 6.25) / 1_000_000
    assert report.priced and report.cost_usd == round(cost, 6)
    unknown = tmp_path / "mystery.jsonl"
    _session(unknown, "mystery-model-1", [(10, 0, 0, 1)])
    data = context_of(unknown).as_dict()
    assert data["window"] is None and "cost_usd" not in data


def test_context_cli_and_session_lookup(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert find_session([FIXTURES], "sess-ma") == MAIN
    assert cli.main(["context", "sess-main", "--root", str(FIXTURES), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["session"] == "sess-main"
    assert cli.main(["context", "sess-main", "--root", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert "cost: unpriced (claude-sonnet-4-5)" in out and "not in a transcript" in out
    assert cli.main(["context", "nope", "--root", str(FIXTURES)]) == 2
    with pytest.raises(CouldNotJudge):
        find_session([tmp_path], None)


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


def test_drift_counts_a_copied_turn_once(tmp_path: Path) -> None:
    for name in ("first.jsonl", "resumed.jsonl"):
        (tmp_path / name).write_bytes(MAIN.read_bytes())
    (row,) = drift([tmp_path], workers=1).rows
    assert (row.model, row.turns, row.reported) == ("claude-sonnet-4-5", 1, 310)
