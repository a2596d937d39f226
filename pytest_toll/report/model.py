"""The session report: data first (dataclasses with ``as_dict()``), rendered to text here.

One :class:`EntryResult` per ledger entry and per measured test; a :class:`SessionReport`
holds them in a deterministic order (kind, then ledger line, then name) so a serial run and
an ``-n 2`` run produce the same summary and the same JSON. The JSON shape is versioned and
described by ``data/report.schema.json``; other renderers (Markdown, annotations, badge,
SARIF) build on ``SessionReport.as_dict()`` only.

This module is pure: no pytest, no tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll._version import __version__

REPORT_VERSION = 1
SCHEMA_PATH = Path(__file__).parents[1] / "data" / "report.schema.json"

# Outcomes, from the point of view of the ledger pin.
PASSED = "passed"  # measured equals the pin (within tolerance) and under budget
IMPROVED = "improved"  # below the pin: passes, and --toll-update would lower the pin
REGRESSED = "regressed"  # above pin + tolerance: fails (unless the increase is allowed)
OVER_BUDGET = "over_budget"  # above the human budget: always fails
ERROR = "error"  # could not be measured: never a pass
NEW = "new"  # measured, no pin yet: passes, --toll-update writes the pin
STALE = "stale"  # in the ledger, not measured in a full run: fails under --toll-strict
OUTCOMES = (PASSED, IMPROVED, REGRESSED, OVER_BUDGET, ERROR, NEW, STALE)

# Kinds in report order; also the top-level ledger sections that hold entries.
KINDS = ("servers", "skills", "calls", "transcripts", "tests")

_SYMBOL = {
    PASSED: "ok",
    IMPROVED: "improved",
    REGRESSED: "REGRESSED",
    OVER_BUDGET: "OVER BUDGET",
    ERROR: "ERROR",
    NEW: "new",
    STALE: "stale",
}


_TALLY = {**{name: name.replace("_", " ") for name in OUTCOMES}, ERROR: "errors"}
_FAILING_OUTCOMES = (REGRESSED, OVER_BUDGET, ERROR)


def _delta(measured: int | None, pin: int | None) -> int | None:
    if measured is None or pin is None:
        return None
    return measured - pin


@dataclass
class PartResult:
    """One part of an entry (a tool, a skill level, a call part) with its pinned value."""

    name: str
    measured: int | None
    pin: int | None = None

    @property
    def delta(self) -> int | None:
        return _delta(self.measured, self.pin)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "measured": self.measured, "pin": self.pin, "delta": self.delta}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartResult:
        return cls(str(data["name"]), data.get("measured"), data.get("pin"))


@dataclass
class EntryResult:
    """The judgement of one entry: what was measured, against which pin and budget, and why.

    ``failed`` is whether the entry fails the run: regressed, over budget, an error, an
    error-severity finding, or stale under ``--toll-strict``. ``ratchet`` is the pin change
    ``--toll-update`` writes (``{"from": old, "to": new}``), when there is one.
    """

    kind: str
    name: str
    nodeid: str
    line: int | None
    measured: int | None
    method: str | None
    pin: int | None
    budget: int | None
    outcome: str
    failed: bool = False
    message: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    parts: list[PartResult] = field(default_factory=list)
    ratchet: dict[str, int | None] | None = None
    #: Other pinned numbers (``{"key": "waste_ratio_pin", "measured": 0.08, "pin": 0.09}``).
    other_pins: list[dict[str, Any]] = field(default_factory=list)

    @property
    def delta(self) -> int | None:
        return _delta(self.measured, self.pin)

    @property
    def label(self) -> str:
        """``servers::files``; a whole-section entry is just its section (``transcripts``)."""
        return self.kind if self.name == self.kind else f"{self.kind}::{self.name}"

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "name": self.name,
            "nodeid": self.nodeid,
            "line": self.line,
            "measured": self.measured,
            "method": self.method,
            "pin": self.pin,
            "budget": self.budget,
            "delta": self.delta,
            "outcome": self.outcome,
            "failed": self.failed,
            "message": self.message,
            "findings": [dict(finding) for finding in self.findings],
            "parts": [part.as_dict() for part in self.parts],
            "ratchet": None if self.ratchet is None else dict(self.ratchet),
            "other_pins": [dict(other) for other in self.other_pins],
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EntryResult:
        """Rebuild from ``as_dict()`` output (how results travel from xdist workers)."""
        ratchet = data.get("ratchet")
        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            nodeid=str(data["nodeid"]),
            line=data.get("line"),
            measured=data.get("measured"),
            method=data.get("method"),
            pin=data.get("pin"),
            budget=data.get("budget"),
            outcome=str(data["outcome"]),
            failed=bool(data.get("failed", False)),
            message=str(data.get("message", "")),
            findings=[dict(finding) for finding in data.get("findings", [])],
            parts=[PartResult.from_dict(part) for part in data.get("parts", [])],
            ratchet=None if ratchet is None else dict(ratchet),
            other_pins=[dict(other) for other in data.get("other_pins", [])],
        )

    def sort_key(self) -> tuple[int, int, str]:
        kind_rank = KINDS.index(self.kind) if self.kind in KINDS else len(KINDS)
        return (kind_rank, self.line if self.line is not None else 1 << 30, self.name)


@dataclass
class SessionReport:
    """Everything one ``pytest --toll`` session judged, in report order."""

    ledger: str
    window: int
    tolerance: int
    update: bool = False
    allow_increase: bool = False
    strict: bool = False
    partial: bool = False
    ledger_written: bool = False
    entries: list[EntryResult] = field(default_factory=list)
    tokenizer: str = "o200k_base"

    def __post_init__(self) -> None:
        self.entries.sort(key=EntryResult.sort_key)

    def add(self, entries: Iterable[EntryResult]) -> None:
        self.entries.extend(entries)
        self.entries.sort(key=EntryResult.sort_key)

    @property
    def counts(self) -> dict[str, int]:
        counts = dict.fromkeys(OUTCOMES, 0)
        for entry in self.entries:
            counts[entry.outcome] = counts.get(entry.outcome, 0) + 1
        return counts

    @property
    def failed(self) -> bool:
        return any(entry.failed for entry in self.entries)

    @property
    def fixed_cost(self) -> int:
        """Tokens paid on every request before any work: server definitions + skill metadata."""
        total = 0
        for entry in self.entries:
            if entry.kind == "servers" and entry.measured is not None:
                total += entry.measured
            elif entry.kind == "skills":
                total += sum(part.measured or 0 for part in entry.parts if part.name == "metadata")
        return total

    def as_dict(self) -> dict[str, Any]:
        fixed = self.fixed_cost
        return {
            "version": REPORT_VERSION,
            "tool": "pytest-toll",
            "tool_version": __version__,
            "tokenizer": self.tokenizer,
            "ledger": self.ledger,
            "window": self.window,
            "tolerance": self.tolerance,
            "update": self.update,
            "allow_increase": self.allow_increase,
            "strict": self.strict,
            "partial": self.partial,
            "ledger_written": self.ledger_written,
            "fixed_cost": {"tokens": fixed, "window_share": fixed / self.window},
            "counts": self.counts,
            "failed": self.failed,
            "entries": [entry.as_dict() for entry in self.entries],
        }


# --- text -------------------------------------------------------------------------------


def _status(entry: EntryResult) -> str:
    # An entry within its pin can still fail on an error-severity rule finding.
    if entry.failed and entry.outcome in (PASSED, IMPROVED, NEW):
        return "FAILED"
    return _SYMBOL[entry.outcome]


def _number(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _signed(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value:+,}" if value else "0"


def _table(rows: Sequence[Sequence[str]], right: Sequence[bool]) -> list[str]:
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(width) if align_right else cell.ljust(width)
            for cell, width, align_right in zip(row, widths, right)
        ]
        lines.append("  ".join(cells).rstrip())
    return lines


def window_line(report: SessionReport) -> str:
    fixed = report.fixed_cost
    share = 100 * fixed / report.window
    # Two decimals below 1% so a small surface does not read as zero.
    shown = f"{share:.1f}" if share >= 1 else f"{share:.2f}"
    return (
        f"fixed cost per request (server definitions + skill metadata): {fixed:,} tok "
        f"(o200k), ~{shown}% of a {report.window:,} window"
    )


def summary_lines(report: SessionReport) -> list[tuple[str, str]]:
    """The "toll summary" section as (line, colour) pairs; colour is "" or a markup name."""
    lines: list[tuple[str, str]] = []
    if report.entries:
        header = ("", "entry", "measured", "pin", "budget", "change", "method")
        rows = [header]
        for entry in report.entries:
            rows.append(
                (
                    _status(entry),
                    entry.label,
                    _number(entry.measured),
                    _number(entry.pin),
                    _number(entry.budget),
                    _signed(entry.delta),
                    entry.method or "-",
                )
            )
        table = _table(rows, (False, False, True, True, True, True, False))
        lines.append((table[0], "bold"))
        for entry, text in zip(report.entries, table[1:]):
            colour = "red" if entry.failed else ("green" if entry.outcome == IMPROVED else "")
            if not colour and entry.outcome in (STALE, NEW):
                colour = "yellow"
            lines.append((text, colour))
    else:
        lines.append(("no ledger entries or measured tests", ""))
    for entry in report.entries:
        # Pins that are not token totals (waste_ratio_pin) have no column of their own.
        for other in entry.other_pins:
            pin = "-" if other["pin"] is None else f"{other['pin']:g}"
            lines.append(
                (f"{entry.label}: {other['key']} {pin}, measured {other['measured']:g}", "")
            )
    for entry in report.entries:
        for finding in entry.findings:
            if finding.get("severity") in ("error", "warn"):
                subject = f" {finding['subject']}:" if finding.get("subject") else ""
                colour = "red" if finding["severity"] == "error" else "yellow"
                lines.append(
                    (
                        f"{entry.label}: {finding['rule']} {finding['severity']}"
                        f"{subject} {finding['message']}",
                        colour,
                    )
                )
    lines.append((window_line(report), ""))
    counts = report.counts
    tally = ", ".join(f"{counts[name]} {_TALLY[name]}" for name in OUTCOMES)
    # Counts are pin outcomes; an entry can meet its pin and still fail on a rule error (or
    # as stale under --toll-strict), so those are named first rather than hidden in "passed".
    failing_otherwise = sum(
        1 for entry in report.entries if entry.failed and entry.outcome not in _FAILING_OUTCOMES
    )
    if failing_otherwise:
        tally = f"{failing_otherwise} failed on rules or strictness; pins: {tally}"
    lines.append((tally, "red" if report.failed else "green"))
    improved = [entry for entry in report.entries if entry.outcome == IMPROVED]
    if improved and not report.update:
        total = sum(-(entry.delta or 0) for entry in improved)
        if total > 0:
            what = f"improved by {total:,} tok"
        else:
            # Only non-token pins improved (a transcripts waste ratio).
            what = f"{len(improved)} {'entry' if len(improved) == 1 else 'entries'} improved"
        lines.append((f"{what} — ratchet with --toll-update", "green"))
    if report.partial and report.update:
        lines.append(("partial run: only entries that ran were updated, none removed", "yellow"))
    if report.ledger_written:
        lines.append((f"ledger updated: {report.ledger}", "green"))
        for entry in report.entries:
            for other in entry.other_pins:
                before, now = other["pin"], other["measured"]
                if before is None or now < before or (report.allow_increase and now > before):
                    change = "new pin" if before is None else f"{before:g} →"
                    lines.append((f"  {entry.label}: {other['key']} {change} {now:g}", ""))
            if entry.ratchet is None:
                continue
            before, after = entry.ratchet["from"], entry.ratchet["to"]
            if before is None:
                lines.append((f"  {entry.label}: new pin {after:,}", ""))
            else:
                raised = after is not None and after > before
                lines.append(
                    (f"  {entry.label}: pin {before:,} → {after:,}", "yellow" if raised else "")
                )
    return lines


def failure_text(entry: EntryResult, biggest: int = 5) -> str:
    """A short table for a failed ledger item or test: measured, pin, budget, delta, parts."""
    lines = [f"{entry.label}: {entry.message or _status(entry)}"]
    if entry.outcome != ERROR:
        rows: list[tuple[str, ...]] = [
            ("measured", "pin", "budget", "delta", "method"),
            (
                _number(entry.measured),
                _number(entry.pin),
                _number(entry.budget),
                _signed(entry.delta),
                entry.method or "-",
            ),
        ]
        lines.extend("  " + line for line in _table(rows, (True, True, True, True, False)))
    changed = [part for part in entry.parts if part.delta]
    any_pinned = any(part.pin is not None for part in entry.parts)
    unpinned = [part for part in entry.parts if part.pin is None and part.measured is not None]
    if changed or (unpinned and any_pinned):
        changed.sort(key=lambda part: (-abs(part.delta or 0), part.name))
        shown = changed[:biggest]
        part_rows: list[tuple[str, ...]] = [("part", "measured", "pin", "delta")]
        part_rows.extend(
            (part.name, _number(part.measured), _number(part.pin), _signed(part.delta))
            for part in shown
        )
        if any_pinned:
            part_rows.extend(
                (part.name, _number(part.measured), "new", "-")
                for part in unpinned[: max(0, biggest - len(shown))]
            )
        lines.append("  biggest changes:")
        lines.extend("    " + line for line in _table(part_rows, (False, True, True, True)))
        hidden = len(changed) - len(shown)
        if hidden > 0:
            lines.append(f"    … and {hidden} more changed")
    for finding in entry.findings:
        if finding.get("severity") == "error":
            subject = f" {finding['subject']}:" if finding.get("subject") else ""
            hint = f" — {finding['hint']}" if finding.get("hint") else ""
            lines.append(f"  {finding['rule']} error{subject} {finding['message']}{hint}")
    return "\n".join(lines)
