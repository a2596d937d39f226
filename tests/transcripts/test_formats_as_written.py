"""The other agents' files as the agents write them (issue #38's formats): Gemini CLI
``Content`` lists (checkpoints, error reports), Cline's native calls answered in text,
OpenCode exports known by their own structure, Antigravity and Copilot CLI. Each case counts
the calls read, the results paired and their tokens."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_toll.core.tokens import count
from pytest_toll.transcripts.formats import detect, read_records
from pytest_toll.transcripts.records import ResultRecord
from pytest_toll.transcripts.summary import summarize_file
from tests.transcripts.agents_data import AGENTS, CLINE_NATIVE, CLINE_TASKS, GEMINI

GEMINI_REPORT = (
    AGENTS
    / "gemini"
    / "reports"
    / "gemini-client-error-Turn.run-sendMessageStream-2026-11-22T10-00-00-000Z.json"
)
GEMINI_CHECKPOINT_IDS = GEMINI / "77aa01" / "checkpoint-ids.json"
CLINE_NATIVE_TEXT = CLINE_TASKS / "1764000000000" / "api_conversation_history.json"


def tally(path: Path) -> tuple[int, int, int]:
    """(calls read, calls paired with a result, tokens of the ok results) of one file."""
    summary = summarize_file(path)
    paired = [row for row in summary.call_log if row[2] != "unpaired"]
    return summary.calls, len(paired), sum(row[3] for row in summary.call_log if row[2] == "ok")


def test_a_gemini_error_report_is_its_context_every_call_paired_by_name_and_order() -> None:
    assert detect(GEMINI_REPORT).name == "gemini"
    report = json.loads(GEMINI_REPORT.read_text())
    outputs = [
        part["functionResponse"]["response"].get("output")
        for content in report["context"]
        for part in content["parts"]
        if "functionResponse" in part
    ]
    ok_tokens = sum(count(text) for text in outputs if text is not None)
    assert tally(GEMINI_REPORT) == (4, 4, ok_tokens)
    summary = summarize_file(GEMINI_REPORT)
    assert [(row[1], row[2]) for row in summary.call_log] == [
        ("read_file", "ok"), ("read_file", "ok"), ("$ pytest", "ok"), ("glob", "error"),
    ]  # fmt: skip
    assert summary.paired_by_order == [GEMINI_REPORT.stem] and summary.orphan_results == 0


def test_a_checkpoint_list_whose_responses_carry_made_up_ids_pairs_them(tmp_path: Path) -> None:
    # The shape of a /chat save checkpoint: the model's calls carry no id, the CLI's responses
    # carry the id it made up; before, every response was an orphan and every call unpaired.
    checkpoint = tmp_path / "checkpoint-fix.json"
    checkpoint.write_text(json.dumps(json.loads(GEMINI_REPORT.read_text())["context"], indent=2))
    assert detect(checkpoint).name == "gemini"
    assert tally(checkpoint) == tally(GEMINI_REPORT)
    assert summarize_file(checkpoint).orphan_results == 0


def test_a_newer_checkpoint_pairs_by_id_in_any_order() -> None:
    summary = summarize_file(GEMINI_CHECKPOINT_IDS)
    assert sorted((row[0], row[1], row[2]) for row in summary.call_log) == [
        ("call-list-1", "list_directory", "ok"),
        ("call-read-2", "read_file", "ok"),
    ]
    assert tally(GEMINI_CHECKPOINT_IDS) == (2, 2, count("a = 1\n") + count("a.py\nb.py"))
    assert summary.paired_by_order == []


def test_cline_native_calls_answered_in_text_pair_by_tool_and_order() -> None:
    # Before: every native call unpaired (the text results were matched only to XML calls).
    summary = summarize_file(CLINE_NATIVE_TEXT)
    assert [row[:3] for row in summary.call_log] == [
        ["toolu_nt1", "read_file", "ok"],
        ["toolu_nt2", "$ npm test", "ok"],
        ["toolu_nt3", "replace_in_file", "error"],  # the failure Cline wrote in the text
        ["toolu_nt4", "attempt_completion", "unpaired"],  # the task ended on it
    ]
    page = "export default function Page() {\n  return null\n}\n"
    results = {
        r.call_id: r.text for r in read_records(CLINE_NATIVE_TEXT) if type(r) is ResultRecord
    }
    assert results["toolu_nt1"] == page  # the path's brackets did not end the head
    assert "environment_details" not in results["toolu_nt2"]
    assert tally(CLINE_NATIVE_TEXT) == (4, 3, count(page) + count(results["toolu_nt2"]))
    assert summary.paired_by_order == ["1764000000000"]


def test_cline_tool_results_by_id_still_pair_by_id_and_are_not_answered_twice() -> None:
    summary = summarize_file(CLINE_NATIVE)
    assert [row[2] for row in summary.call_log] == ["ok", "error"]
    assert summary.paired_by_order == [] and summary.orphan_results == 0
