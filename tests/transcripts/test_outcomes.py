"""Outcomes: what one tool result says about its call."""

from __future__ import annotations

import pytest

from pytest_toll.transcripts.images import Image
from pytest_toll.transcripts.outcomes import outcome_of
from pytest_toll.transcripts.readers import ResultRecord


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
