"""The decisions ledger: the ``transcripts:`` section of toll.yaml, judged by rules TL001–TL005.

A team decides, per heavy tool-call shape, what to do about it (``replace`` it *with*
something, ``keep`` it for a *reason*, ``watch`` it for a *reason*), and pins the waste ratio
(repeat fetches over ok tokens) so it only goes down:

- TL001 a decision with an unknown status;
- TL002 a status without its second field (``replace`` needs ``with``; ``keep``/``watch``
  need ``reason``);
- TL003 a shape whose ok tolls exceed ``decide_above_tokens`` with no decision;
- TL004 a shape decided twice (a duplicate YAML key, found by the ledger loader);
- TL005 the waste ratio above ``waste_ratio_pin`` + 0.01.

No transcripts, or transcripts without tool calls, is CouldNotJudge — never a pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError, require_non_negative_number
from pytest_toll.core.findings import ERROR, Finding, RuleOverrides, worst_first
from pytest_toll.core.tokens import O200K, TOKENIZER_NAME
from pytest_toll.transcripts.locations import default_roots
from pytest_toll.transcripts.report import ShapeRow
from pytest_toll.transcripts.scan import ReadOptions, cache_dir, scan

#: status → the field it needs
STATUSES = {"replace": "with", "keep": "reason", "watch": "reason"}
#: The rules this module can report (toll.yaml ``rules:`` accepts exactly these and the others).
RULE_IDS = ("TL001", "TL002", "TL003", "TL004", "TL005")
DEFAULT_DECIDE_ABOVE_TOKENS = 50_000
WASTE_TOLERANCE = 0.01
#: ``toll check --init`` sets the threshold so that this many shapes are left to decide.
SHAPES_TO_DECIDE = 5
#: How many of the heaviest shapes a decisions report keeps for the session report to show.
TOP_SHAPES = 20


@dataclass(frozen=True)
class ShapeDecision:
    shape: str
    ok_tokens: int
    status: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"shape": self.shape, "ok_tokens": self.ok_tokens, "status": self.status}


@dataclass
class DecisionsReport:
    """The verdict on a ``transcripts:`` section; findings name the shape as their subject."""

    findings: list[Finding]
    waste_ratio: float
    waste_ratio_pin: float | None
    decide_above_tokens: int
    shapes_over_threshold: list[ShapeDecision]
    ok_tokens: int
    wasted_tokens: int
    sessions: int
    calls: int
    source: str = "toll.yaml"
    extras: dict[str, Any] = field(default_factory=dict)
    #: The heaviest shapes by ok tokens (at most TOP_SHAPES), for the report to show.
    top_shapes: list[ShapeRow] = field(default_factory=list)

    @property
    def failed(self) -> bool:
        return any(finding.severity == ERROR for finding in self.findings)

    @property
    def waste_improved(self) -> bool:
        """Below the pin as a pin holds it: ``--toll-update`` would lower it (it never raises
        it). The raw ratio is below a pin rounded up from it; that is not an improvement."""
        return (
            self.waste_ratio_pin is not None
            and pinned_ratio(self.waste_ratio) < self.waste_ratio_pin
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "decisions",
            "method": O200K,
            "tokenizer": TOKENIZER_NAME,
            "total_tokens": self.ok_tokens,
            "wasted_tokens": self.wasted_tokens,
            "waste_ratio": self.waste_ratio,
            "waste_ratio_pin": self.waste_ratio_pin,
            "waste_improved": self.waste_improved,
            "decide_above_tokens": self.decide_above_tokens,
            "shapes_over_threshold": [shape.as_dict() for shape in self.shapes_over_threshold],
            "sessions": self.sessions,
            "calls": self.calls,
            "findings": [finding.as_dict("shape") for finding in self.findings],
        }


def _duplicates(duplicate_decisions: Sequence[Any]) -> list[tuple[str, int | None]]:
    # The ledger loader reports (key, line); a caller may also pass bare keys.
    found: list[tuple[str, int | None]] = []
    for item in duplicate_decisions:
        if isinstance(item, str):
            found.append((item, None))
        else:
            key, line = item
            found.append((str(key), int(line) if line is not None else None))
    return found


def _number(section: Mapping[str, Any], key: str, source: str) -> float | None:
    value = section.get(key)
    if value is None:
        return None
    return require_non_negative_number(value, f"{source}: transcripts.{key}")


def section_roots(section: Mapping[str, Any], base: Path | None = None) -> list[Path] | None:
    """The section's ``roots`` (``~`` expanded, relative to ``base``), or None when absent."""
    roots = section.get("roots")
    if not roots:
        return None
    resolved = []
    for root in roots:
        path = Path(str(root)).expanduser()
        resolved.append(path if path.is_absolute() or base is None else base / path)
    return resolved


def judge_decisions(
    section: Mapping[str, Any],
    *,
    roots: list[Path] | None = None,
    duplicate_decisions: Sequence[Any] = (),
    source: str = "toll.yaml",
    settings: RuleOverrides | None = None,
    options: ReadOptions | None = None,
) -> DecisionsReport:
    """Judge a ``transcripts:`` section against the transcripts under ``roots``.

    ``roots`` defaults to the section's own ``roots``, then ``TOLL_TRANSCRIPTS``, then the
    agents' default folders. ``options`` without a cache use the default cache folder. Raises
    CouldNotJudge when there are no transcripts or no calls.
    """
    settings = settings or RuleOverrides()
    if not isinstance(section, Mapping):
        raise UsageError(f"{source}: transcripts: must be a mapping, not {type(section).__name__}")
    threshold = _number(section, "decide_above_tokens", source)
    decide_above = int(threshold) if threshold is not None else DEFAULT_DECIDE_ABOVE_TOKENS
    pin = _number(section, "waste_ratio_pin", source)
    decisions = section.get("decisions") or {}
    if not isinstance(decisions, Mapping):
        raise UsageError(f"{source}: transcripts.decisions: must be a mapping of shape to decision")
    chosen_roots = roots if roots else (section_roots(section) or default_roots())
    options = options or ReadOptions()
    if options.cache is None:
        options = replace(options, cache=cache_dir())
    report = scan(chosen_roots, options)

    findings: list[Finding | None] = []
    for shape, decision in decisions.items():
        where = f"{source}: transcripts.decisions.{shape}"
        decision = decision if isinstance(decision, Mapping) else {}
        status = decision.get("status")
        if status not in STATUSES:
            findings.append(
                settings.finding(
                    "TL001",
                    ERROR,
                    str(shape),
                    f"{where}: status {status!r} is not one of {', '.join(STATUSES)}",
                    "replace (with: …), keep (reason: …) or watch (reason: …)",
                )
            )
            continue
        needed = STATUSES[str(status)]
        value = decision.get(needed)
        if not isinstance(value, str) or not value.strip():
            findings.append(
                settings.finding(
                    "TL002",
                    ERROR,
                    str(shape),
                    f"{where}: status {status} needs {needed!r}",
                    f"say {'what replaces it' if needed == 'with' else 'why'}",
                )
            )
    for shape, line in _duplicates(duplicate_decisions):
        at = f":{line}" if line is not None else ""
        findings.append(
            settings.finding(
                "TL004",
                ERROR,
                shape,
                f"{source}{at}: transcripts.decisions.{shape}: decided twice (only the first counts)",
                "keep one decision per shape",
            )
        )
    over = [row for row in report.shapes if row.ok_tokens > decide_above]
    for row in over:
        if row.shape not in decisions:
            findings.append(
                settings.finding(
                    "TL003",
                    ERROR,
                    row.shape,
                    f"{row.ok_tokens:,} ok tokens over {row.ok:,} calls, above decide_above_tokens "
                    f"{decide_above:,}, and no decision",
                    f"add transcripts.decisions.{row.shape!r}: replace/keep/watch",
                )
            )
    if pin is not None and report.waste_ratio > pin + WASTE_TOLERANCE:
        findings.append(
            settings.finding(
                "TL005",
                ERROR,
                None,
                f"waste ratio {report.waste_ratio:.4f} is above waste_ratio_pin {pin:.4f} "
                f"(+{WASTE_TOLERANCE} tolerance): {report.wasted_tokens:,} tokens fetched again",
                "see `toll repeats`",
            )
        )
    return DecisionsReport(
        findings=worst_first(finding for finding in findings if finding is not None),
        waste_ratio=report.waste_ratio,
        waste_ratio_pin=pin,
        decide_above_tokens=decide_above,
        shapes_over_threshold=[
            ShapeDecision(row.shape, row.ok_tokens, _status(decisions.get(row.shape)))
            for row in over
        ],
        ok_tokens=report.ok_tokens,
        wasted_tokens=report.wasted_tokens,
        sessions=report.sessions,
        calls=report.calls,
        source=source,
        top_shapes=list(report.shapes[:TOP_SHAPES]),
    )


def _status(decision: object) -> str | None:
    if isinstance(decision, Mapping) and isinstance(decision.get("status"), str):
        return str(decision["status"])
    return None


def initial_settings(ok_tokens_by_shape: Sequence[int], waste_ratio: float) -> tuple[int, float]:
    """``(decide_above_tokens, waste_ratio_pin)`` for ``toll check --init``.

    The threshold is the ok tokens of the sixth heaviest shape, so the five heaviest are
    strictly above it and left to decide (fewer when there are ties or fewer shapes). The pin
    is today's ratio rounded up to 4 decimals, so today's history passes.
    """
    ranked = sorted(ok_tokens_by_shape, reverse=True)
    threshold = ranked[SHAPES_TO_DECIDE] if len(ranked) > SHAPES_TO_DECIDE else 0
    return threshold, pinned_ratio(waste_ratio)


def pinned_ratio(waste_ratio: float) -> float:
    """A waste ratio as a pin holds it: rounded up to 4 decimals, so the history it was
    measured on passes, and an unchanged history equals its pin rather than "improving" by
    a rounding error (the gate, ``toll check --init`` and ``toll check`` all read it so)."""
    return math.ceil(waste_ratio * 10_000) / 10_000
