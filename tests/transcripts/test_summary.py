"""One file's summary: calls paired by id, classified, shaped, counted; repeats found."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_toll.core.tokens import count
from pytest_toll.transcripts.summary import summarize_file
from tests.transcripts.transcripts_data import A_PY, LOG, MAIN


def test_main_session_summary() -> None:
    summary = summarize_file(MAIN)
    assert summary.sessions == ["sess-main"]
    assert summary.orphan_results == 1
    assert summary.turns == 3 and summary.prompt_tokens == 1100 + 1410 + 1605
    shapes = {name: (t.calls, t.by_outcome, t.ok_tokens) for name, t in summary.shapes.items()}
    a_py = count(A_PY)
    assert shapes == {
        "$ git log": (3, {"ok": 2, "error": 1}, [count(LOG), count(LOG)]),
        "Read": (4, {"ok": 4}, [a_py, a_py, 7, a_py]),
        "$ python -c": (1, {"empty": 1}, []),
        "Grep": (1, {"truncated": 1}, []),
        "mcp__files__list": (1, {"opaque": 1}, []),
        "WebFetch": (1, {"unpaired": 1}, []),
        "Edit": (1, {"ok": 1}, [count("The file /repo/a.py has been updated.")]),
    }
    # a.py read twice before the edit is a repeat; the read after the edit is not, and
    # the git log re-run after the edit is not either
    assert [r.as_dict() for r in summary.repeats] == [
        {
            "session": "sess-main",
            "shape": "Read",
            "target": "/repo/a.py",
            "times": 2,
            "tokens_each": a_py,
            "wasted": a_py,
        }
    ]


def test_result_before_its_call_and_a_duplicated_result(tmp_path: Path) -> None:
    def line(kind: str, content: Sequence[Mapping[str, object]]) -> str:
        message = {"id": "m", "role": kind, "content": content}
        return json.dumps({"type": kind, "sessionId": "s", "message": message})

    result = {"type": "tool_result", "tool_use_id": "t1", "content": LOG}
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                line("user", [result]),
                line(
                    "assistant",
                    [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Bash",
                            "input": {"command": "git log"},
                        }
                    ],
                ),
                line("user", [result]),
            ]
        )
        + "\n"
    )
    summary = summarize_file(path)
    assert summary.shapes["$ git log"].by_outcome == {"ok": 1}
    assert (summary.admitted_tokens, summary.orphan_results) == (count(LOG), 0)
