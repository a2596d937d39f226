"""The session report as terminal text: the "toll summary" section and failure tables.

Pure: no pytest, no tokenizer. The plugin writes these lines; ledger items and tests show
:func:`failure_text` when they fail. Names, messages and findings quote third-party text
(a tool's name, a server's error): each is put in its line through
:func:`pytest_toll.core.inert.shown`, so it cannot start a line, a terminal escape or a
workflow command.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_toll.core.inert import inert_lines, shown
from pytest_toll.core.kinds import KINDS, fixed_cost_label
from pytest_toll.core.secrets import scrub
from pytest_toll.report.data import (
    IMPROVED,
    NEW,
    OUTCOME_ERROR,
    OVER_BUDGET,
    PASSED,
    REGRESSED,
    STALE,
    EntryResult,
    Outcome,
    SessionReport,
    biggest_changes,
    fixed_cost_gaps,
    tally,
)
from pytest_toll.report.host_costs import deferral_notes, fixed_cost_subject, other_hosts
from pytest_toll.report.markdown import capture_line, number, request_line, signed

_SYMBOL: dict[Outcome, str] = {
    PASSED: "ok",
    IMPROVED: "improved",
    REGRESSED: "REGRESSED",
    OVER_BUDGET: "OVER BUDGET",
    OUTCOME_ERROR: "ERROR",
    NEW: "new",
    STALE: "stale",
}


def _figure(value: float) -> str:
    """An other pin as the table shows tokens (``3,465``; ``:g`` wrote ``1.23457e+06`` for a
    run_pin of 1,234,567), a ratio as it is (``0.0922``)."""
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _status(entry: EntryResult) -> str:
    # An entry within its pin can still fail on an error-severity rule finding.
    if entry.failed and entry.outcome in (PASSED, IMPROVED, NEW):
        return "FAILED"
    return _SYMBOL[entry.outcome]


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
    share_text = f"{share:.1f}" if share >= 1 else f"{share:.2f}"
    gaps = fixed_cost_gaps(report.fixed_cost_dict())
    # A figure that leaves out what could not be measured is a lower bound, and says why.
    at_least = "≥ " if gaps else ""
    fixed_dict = report.fixed_cost_dict()
    subject = fixed_cost_subject(fixed_dict, fixed_cost_label(e.kind for e in report.entries))
    others = other_hosts(fixed_dict)
    return (
        f"fixed cost per request ({subject}): "
        f"{at_least}{fixed:,} tok "
        f"(o200k), ~{share_text}% of a {report.window:,} window"
        + (f" ({shown(gaps)})" if gaps else "")
        + (f"; other hosts: {others}" if others else "")
        + "".join(f"\nnote: {note}" for note in deferral_notes(fixed_dict))
    )


def tally_line(report: SessionReport) -> str:
    """``5 entries: 1 failed, 4 passed (3 new, 1 ok, 1 stale)`` (see ``model.tally``)."""
    return tally(report.counts, (entry.failed for entry in report.entries))


def improved_line(report: SessionReport) -> str:
    """What an update would lower. Tokens are summed over ledger entries only: a test that
    weighs a server's tools too would count the same tokens twice."""
    improved = [entry for entry in report.entries if entry.outcome == IMPROVED]
    surface = [entry for entry in improved if not _is_test(entry)]
    tests = len(improved) - len(surface)
    tokens = sum(-(entry.delta or 0) for entry in surface if (entry.delta or 0) < 0)
    pieces = []
    if tokens > 0:
        pieces.append(f"improved by {tokens:,} tok")
    other = len(surface) - sum(1 for entry in surface if (entry.delta or 0) < 0)
    if other:
        # Only non-token pins improved (a transcripts waste ratio).
        pieces.append(f"{other} {'entry' if other == 1 else 'entries'} improved")
    if tests:
        pieces.append(f"{tests} {'test' if tests == 1 else 'tests'} improved")
    return ", ".join(pieces) + " — ratchet with --toll-update"


def _is_test(entry: EntryResult) -> bool:
    return entry.kind in KINDS and KINDS[entry.kind].python_tests


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
                    shown(entry.label),
                    number(entry.measured),
                    number(entry.pin),
                    number(entry.budget),
                    signed(entry.delta),
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
            pin = "-" if other["pin"] is None else _figure(other["pin"])
            # A gated one (run_pin) carries its budget: shown when there is one.
            budget = f", budget {other['budget']:,}" if other.get("budget") is not None else ""
            lines.append(
                (
                    f"{shown(entry.label)}: {shown(other['key'])} {pin}, "
                    f"measured {_figure(other['measured'])}{budget}",
                    "",
                )
            )
    for entry in report.entries:
        # Memory files a host reads only on demand, or never (past a Codex chain's byte
        # limit): named beside the pins, never in the fixed cost.
        files = (entry.detail or {}).get("files") or []
        later = [file for file in files if file.get("loaded") != "always-on"]
        if later:
            named = ", ".join(
                f"{shown(f['path'])} {f['tokens']:,} ({f['loaded']})" for f in later[:5]
            )
            more = f" and {len(later) - 5} more" if len(later) > 5 else ""
            lines.append((f"{shown(entry.label)}: not in the fixed cost: {named}{more}", ""))
    for entry in report.entries:
        # A test that captured its LLM requests: the graded largest, then each request.
        if entry.capture is not None:
            lines.append((f"{shown(entry.label)}: {capture_line(entry.capture)}", ""))
            for request in entry.capture.get("requests", []):
                colour = "red" if request.get("tokens") is None else ""
                lines.append((f"  {shown(request_line(request))}", colour))
    for entry in report.entries:
        for finding in entry.findings:
            if finding.get("severity") in ("error", "warn"):
                subject = f" {shown(finding['subject'])}:" if finding.get("subject") else ""
                colour = "red" if finding["severity"] == "error" else "yellow"
                lines.append(
                    (
                        f"{shown(entry.label)}: {finding['rule']} {finding['severity']}"
                        f"{subject} {shown(finding['message'])}",
                        colour,
                    )
                )
    lines.append((window_line(report), ""))
    lines.append((tally_line(report), "red" if report.failed else "green"))
    if any(entry.outcome == IMPROVED for entry in report.entries) and not report.update:
        lines.append((improved_line(report), "green"))
    if report.unmeasured and not report.partial:
        # A full run that still left entries out: skipped, errored, a crashed worker.
        lines.append(
            (
                "not measured in this run, pins kept: "
                + ", ".join(shown(name) for name in report.unmeasured[:5])
                + (f" and {len(report.unmeasured) - 5} more" if len(report.unmeasured) > 5 else ""),
                "yellow",
            )
        )
    if report.partial and report.update:
        lines.append(
            (
                "partial run: only entries that ran were updated; the others keep their pins",
                "yellow",
            )
        )
    if report.ledger_written:
        lines.append((f"ledger updated: {shown(report.ledger)}", "green"))
        lines.extend((f"  removed {shown(keys)}", "") for keys in report.ledger_removed)
        for entry in report.entries:
            for other in entry.other_pins:
                before, now = other["pin"], other["measured"]
                if before is None or now < before or (report.allow_increase and now > before):
                    change = "new pin" if before is None else f"{_figure(before)} →"
                    lines.append(
                        (
                            f"  {shown(entry.label)}: {shown(other['key'])} {change} {_figure(now)}",
                            "",
                        )
                    )
            parts = [pin for pin in report.ledger_pins if pin["entry"] == entry.label]
            if entry.ratchet is not None:
                before, after = entry.ratchet["from"], entry.ratchet["to"]
                if before is None:
                    lines.append((f"  {shown(entry.label)}: new pin {after:,}", ""))
                    # A new entry's part pins are its first pins, all of them: the line says so.
                    continue
                raised = after is not None and after > before
                lines.append(
                    (
                        f"  {shown(entry.label)}: pin {before:,} → {after:,}",
                        "yellow" if raised else "",
                    )
                )
            lines.extend(_part_pin_line(entry.label, pin) for pin in parts)
    return lines


def _part_pin_line(label: str, pin: Mapping[str, Any]) -> tuple[str, str]:
    """One part pin an update wrote: every pin written is named, even one beside an
    unchanged total (a skill's first ``executed``, a tool's lowered pin)."""
    before, after = pin["from"], pin["to"]
    head = f"  {shown(label)}: {shown(str(pin['part']))}"
    if before is None:
        return f"{head} new pin {after:,}", ""
    return f"{head} {before:,} → {after:,}", "yellow" if after > before else ""


def failure_text(entry: EntryResult, biggest: int = 5) -> str:
    """A short table for a failed ledger item or test: measured, pin, budget, delta, parts."""
    # The item's own name heads its failure (and pytest's short summary line), so the first
    # line says what failed, not which entry again.
    # A could-not-judge message is ours, line by line, with a server's words inside (made
    # inert where they were quoted); inert_lines holds whatever else it carries.
    lines = [inert_lines(scrub(entry.message)) if entry.message else _status(entry)]
    if entry.outcome != OUTCOME_ERROR:
        rows: list[tuple[str, ...]] = [
            ("measured", "pin", "budget", "delta", "method"),
            (
                number(entry.measured),
                number(entry.pin),
                number(entry.budget),
                signed(entry.delta),
                entry.method or "-",
            ),
        ]
        lines.extend("  " + line for line in _table(rows, (True, True, True, True, False)))
    changed, hidden = biggest_changes([part.as_dict() for part in entry.parts], biggest)
    any_pinned = any(part.pin is not None for part in entry.parts)
    unpinned = [part for part in entry.parts if part.pin is None and part.measured is not None]
    if changed or (unpinned and any_pinned):
        part_rows: list[tuple[str, ...]] = [("part", "measured", "pin", "delta")]
        part_rows.extend(
            (
                shown(part["name"]),
                number(part["measured"]),
                number(part["pin"]),
                signed(part["delta"]),
            )
            for part in changed
        )
        if any_pinned:
            part_rows.extend(
                (shown(part.name), number(part.measured), "new", "-")
                for part in unpinned[: max(0, biggest - len(changed))]
            )
        lines.append("  biggest changes:")
        lines.extend("    " + line for line in _table(part_rows, (False, True, True, True)))
        if hidden > 0:
            lines.append(f"    … and {hidden} more changed")
    for finding in entry.findings:
        if finding.get("severity") == "error":
            subject = f" {shown(finding['subject'])}:" if finding.get("subject") else ""
            hint = f" — {shown(finding['hint'])}" if finding.get("hint") else ""
            lines.append(f"  {finding['rule']} error{subject} {shown(finding['message'])}{hint}")
    return "\n".join(lines)
