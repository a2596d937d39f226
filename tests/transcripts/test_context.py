"""Context: one session's slices at its last turn, window, cost, compaction."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_toll import cli
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.tokens import count
from pytest_toll.transcripts.context import context_of, find_session
from tests.transcripts.transcripts_data import A_PY, FIXTURES, LOG, MAIN, call_tokens


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
        call_tokens("Bash", command="cd /repo && git log --oneline -5"),
        call_tokens("Read", file_path="/repo/a.py"),
        call_tokens("Read", file_path="a.py"),
        call_tokens("Bash", command="sudo timeout 30 env X=1 git log -p"),
        call_tokens("Bash", command='python3 -c "print(1)"'),
        call_tokens("Grep", pattern="TODO", path="/repo"),
        call_tokens("mcp__files__list", dir="/repo"),
        call_tokens("Read", file_path="/repo/shot.png"),
        call_tokens("WebFetch", url="https://example.org/x"),
        call_tokens("Edit", file_path="/repo/a.py", old_string="42", new_string="43"),
        call_tokens("Read", file_path="/repo/a.py"),
        call_tokens("Bash", command="cd /repo && git log --oneline -5"),
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
    # claude-sonnet-4-5 at $3 / $15 per MTok, cache read $0.30, 5-minute write $3.75:
    # 115 input, 120 output, 2,500 read and 1,500 written cost $0.00852.
    assert "cost: $0.0085" in out and "not in a transcript" in out
    assert cli.main(["context", "nope", "--root", str(FIXTURES)]) == 2
    with pytest.raises(CouldNotJudge):
        find_session([tmp_path], None)
