"""Drift: per model, the measured ratio of the provider's tokenizer to our o200k count.

For consecutive turns of one context, the provider's reported prompt growth is set against
our count of what the transcript shows was added in between; both are summed per model. The
ratio is the user's own measurement of how far an o200k count is from what they are billed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.tokens import TOKENIZER_NAME
from pytest_toll.transcripts.scan import ReadOptions, read_summaries

DRIFT_TOLERANCE = 0.05


@dataclass(frozen=True)
class DriftRow:
    model: str
    turns: int
    reported: int
    counted: int

    @property
    def ratio(self) -> float:
        return round(self.reported / self.counted, 4) if self.counted else 0.0

    @property
    def within_tolerance(self) -> bool:
        return abs(self.ratio - 1.0) <= DRIFT_TOLERANCE

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "turns": self.turns,
            "reported_tokens": self.reported,
            "o200k_tokens": self.counted,
            "ratio": self.ratio,
            "within_tolerance": self.within_tolerance,
        }


DRIFT_METHOD = (
    "For consecutive turns of one context, the provider's reported prompt growth (input + "
    "cache read + cache creation of the usage block) is set against our o200k count of what "
    "was added in between (the previous reply, thinking, tool calls, tool results, user text); "
    "both are summed per model and divided."
)
DRIFT_LIMITS = (
    "Message framing and tool-call wrapping are in the reported side only, so the ratio is "
    "an upper bound; thinking a provider keeps encrypted and the system prompt are not in a "
    "transcript; turns with images, compaction or shrinking prompts are skipped."
)


@dataclass
class DriftReport:
    rows: list[DriftRow]
    files: int
    unreadable_lines: int
    tolerance: float = DRIFT_TOLERANCE

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "drift",
            "tokenizer": TOKENIZER_NAME,
            "tolerance": self.tolerance,
            "models": [row.as_dict() for row in self.rows],
            "files": self.files,
            "unreadable_lines": self.unreadable_lines,
            "method": DRIFT_METHOD,
            "limits": DRIFT_LIMITS,
        }


def drift(roots: Sequence[Path], options: ReadOptions) -> DriftReport:
    """Reported prompt growth against our o200k count, per model, over the transcripts under
    ``roots``; CouldNotJudge when no two consecutive turns report usage."""
    summaries = read_summaries(roots, options, drift=True)
    totals: dict[str, list[int]] = {}
    seen: set[str] = set()
    for summary in summaries:
        for message_id, model, reported, counted in summary.drift or ():
            if message_id is not None:
                if message_id in seen:
                    continue  # a turn copied into a resumed session's file
                seen.add(message_id)
            row = totals.setdefault(model, [0, 0, 0])
            row[0] += 1
            row[1] += reported
            row[2] += counted
    rows = [DriftRow(model, *values) for model, values in totals.items()]
    rows.sort(key=lambda row: (-row.turns, row.model))
    if not rows:
        raise CouldNotJudge(
            f"{len(summaries)} transcript file(s) read, but no two consecutive turns report usage"
        )
    return DriftReport(rows, len(summaries), sum(summary.unreadable_lines for summary in summaries))
