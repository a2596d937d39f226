"""Outcomes: what one tool result says about its call."""

from __future__ import annotations

import pytest

from pytest_toll.transcripts.images import Image
from pytest_toll.transcripts.outcomes import outcome_of
from pytest_toll.transcripts.records import ResultRecord


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        (ResultRecord("s", "c", "hello", False), "ok"),
        (ResultRecord("s", "c", "hello", True), "error"),
        (
            ResultRecord("s", "c", "<tool_use_error>File does not exist.</tool_use_error>", False),
            "error",
        ),
        (ResultRecord("s", "c", "  \n", False), "empty"),
        (ResultRecord("s", "c", "", False, opaque_blocks=2), "opaque"),
        (ResultRecord("s", "c", "", False, images=(Image("image/png", 10, 10),)), "ok"),
        (ResultRecord("s", "c", "line\n... [120 lines truncated] ...", False), "truncated"),
        (
            ResultRecord("s", "c", "Output too large (41KB). Full output saved to /tmp/x", False),
            "truncated",
        ),
        (ResultRecord("s", "c", "x" * 5000 + "truncated in the middle" + "y" * 5000, False), "ok"),
    ],
)
def test_outcomes(result: ResultRecord, outcome: str) -> None:
    assert outcome_of(result) == outcome


@pytest.mark.parametrize(
    "marker",
    [
        "[120 lines truncated]",
        "4096 bytes truncated",
        "[output truncated]",
        "<response clipped>",
        "Output too large to show",
        "[... omitted 40 of 900 lines ...]",
        "Total output lines: 900",
        "rest of file (truncated)",
        "... (312 more lines)",
    ],
)
def test_every_marker_passes_the_quick_word_check(marker: str) -> None:
    # The quick check before the regex must let each marker through, at either end.
    for text in (marker + "\n" + "x" * 3000, "x" * 3000 + "\n" + marker):
        assert outcome_of(ResultRecord("s", "c", text, False)) == "truncated"
