"""The other agents' files as the agents write them (issue #38's formats): Gemini CLI
``Content`` lists (checkpoints, error reports), Cline's native calls answered in text,
OpenCode exports known by their own structure, Antigravity and Copilot CLI. Each case counts
the calls read, the results paired and their tokens."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_toll.core.tokens import count
from pytest_toll.transcripts.formats import detect
from pytest_toll.transcripts.summary import summarize_file
from tests.transcripts.agents_data import AGENTS, GEMINI

GEMINI_REPORT = (
    AGENTS
    / "gemini"
    / "reports"
    / "gemini-client-error-Turn.run-sendMessageStream-2026-11-22T10-00-00-000Z.json"
)
GEMINI_CHECKPOINT_IDS = GEMINI / "77aa01" / "checkpoint-ids.json"


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


def of_outcomes(path: Path) -> list[Any]:
    return [row[:3] for row in summarize_file(path).call_log]
