"""The scan report: summaries merged, ranked by ok tokens, each call and turn counted once."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core.tokens import count
from pytest_toll.transcripts.report import (
    ScanReport,
    build_report,
    nearest_rank,
    nearest_ranks,
)
from pytest_toll.transcripts.scan import select_files, summarize_files
from pytest_toll.transcripts.summary import FileSummary, Repeat, summarize_file
from tests.transcripts.transcripts_data import A_PY, FIXTURES, MAIN


def test_scan_report_over_all_fixtures() -> None:
    summaries, stats = summarize_files(select_files([FIXTURES]), workers=1)
    report = build_report(summaries)
    data = report.as_dict()
    assert list(data) == [
        "kind", "tokenizer", "sessions", "calls", "unreadable_lines", "shapes", "repeats",
        "repeats_total", "wasted_tokens", "waste_ratio", "amplification", "agents",
        "paired_by_order",
    ]  # fmt: skip
    assert (data["kind"], data["tokenizer"]) == ("tolls", "o200k_base")
    assert (data["sessions"], data["calls"], data["unreadable_lines"]) == (5, 22, 4)
    rows = {row["shape"]: row for row in data["shapes"]}
    assert rows["mcp__flaky__get"] == {
        "shape": "mcp__flaky__get", "calls": 4, "ok": 1, "ok_tokens": count("fine"), "median": count("fine"),
        "p90": count("fine"), "by_outcome": {"ok": 1, "error": 3}, "suspicious": True,
    }  # fmt: skip
    assert rows["Read"]["calls"] == 5 and rows["Read"]["suspicious"] is False
    assert rows["$ git status"]["by_outcome"] == {"ok": 2}
    assert rows["$ ls"]["by_outcome"] == {"ok": 1, "error": 1}
    assert data["shapes"][0]["shape"] == "Read"  # ranked by ok tokens
    a_py = count(A_PY)
    assert data["wasted_tokens"] == a_py
    assert data["waste_ratio"] == round(a_py / report.ok_tokens, 6)
    assert data["amplification"] == round(report.prompt_tokens / report.admitted_tokens, 2)
    assert report.unreadable_by_file == {str(FIXTURES / "corrupt" / "sess-bad.jsonl"): 4}
    assert stats.files == 5 and stats.cached == 0


def test_median_and_p90_are_nearest_rank() -> None:
    values = list(range(1, 11))
    assert (nearest_rank(values, 0.5), nearest_rank(values, 0.9)) == (5, 9)
    assert nearest_rank([], 0.5) == 0


def test_ranks_from_counts_at_the_edges() -> None:
    assert nearest_ranks({}, (0.5, 0.9)) == [0, 0]
    assert nearest_ranks({7: 1}, (0.5, 0.9)) == [7, 7]  # one value
    assert nearest_ranks({3: 10}, (0.5, 0.9)) == [3, 3]  # all tied
    # ten values: the 5th and the 9th; the 9th is the last of a tie that starts at the 6th
    assert nearest_ranks({1: 5, 2: 4, 100: 1}, (0.5, 0.9)) == [1, 2]
    # eleven values: p90's rank is ceil(9.9) = 10, the first of the top two
    assert nearest_ranks({1: 9, 50: 1, 60: 1}, (0.5, 0.9)) == [1, 50]
    assert nearest_ranks({4: 1, 9: 1}, (0.9, 0.5)) == [9, 4]  # asked in any order


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=40), max_size=60))
def test_ranks_from_counts_are_the_sorted_lists(values: list[int]) -> None:
    ordered = sorted(values)
    fractions = (0.5, 0.9, 0.01, 1.0)
    assert nearest_ranks(Counter(values), fractions) == [
        nearest_rank(ordered, fraction) for fraction in fractions
    ]


def test_a_resumed_session_copy_is_counted_once(tmp_path: Path) -> None:
    # Claude Code copies earlier messages into a resumed session's new file.
    (tmp_path / "first.jsonl").write_bytes(MAIN.read_bytes())
    resumed = MAIN.read_text().replace('"sessionId":"sess-main"', '"sessionId":"sess-resumed"')
    extra = {
        "type": "assistant",
        "sessionId": "sess-resumed",
        "message": {
            "id": "msg_9",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_new",
                    "name": "Glob",
                    "input": {"pattern": "*.py"},
                }
            ],
            "usage": {"input_tokens": 7, "cache_read_input_tokens": 1600},
        },
    }
    (tmp_path / "resumed.jsonl").write_text(resumed + json.dumps(extra) + "\n")
    single = build_report([summarize_file(MAIN)])
    both = build_report(
        summaries for summaries in summarize_files(select_files([tmp_path]), workers=1)[0]
    )
    assert both.calls == single.calls + 1
    assert both.ok_tokens == single.ok_tokens and both.admitted_tokens == single.admitted_tokens
    assert both.prompt_tokens == single.prompt_tokens + 1607
    assert [(r.shape, r.target, r.times) for r in both.repeats] == [
        ("Read", "/repo/a.py", 2)
    ]  # the copied repeat is the same event (same first call id)
    assert both.sessions == 2


def test_repeats_kept_are_slotted_and_share_their_strings() -> None:
    # Two files' summaries, each with its own copy of the strings (as the cache gives them).
    def repeat(number: int) -> Repeat:
        return Repeat("".join(["sess-", "one"]), "".join(["Re", "ad"]), f"/t/{number}", 3, 10)

    summaries = [
        FileSummary(path=f"/f{number}.jsonl", format="claude", repeats=[repeat(number)])
        for number in range(2)
    ]
    assert summaries[0].repeats[0].session is not summaries[1].repeats[0].session
    report = build_report(summaries)
    first, second = report.repeats
    assert first.session is second.session and first.shape is second.shape
    assert not hasattr(first, "__dict__")
    again = ScanReport.from_json(json.loads(json.dumps(report.to_json())))
    assert again.repeats == report.repeats and again.as_dict() == report.as_dict()
