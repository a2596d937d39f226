"""The text views of the transcripts job: ``toll scan``'s toll table.

Each takes a finished report and returns the text a person reads; nothing here reads a
transcript or the cache.
"""

from __future__ import annotations

from pytest_toll.core.inert import shown
from pytest_toll.transcripts.outcomes import OUTCOME_OK, OUTCOMES
from pytest_toll.transcripts.report import ScanReport

#: Sessions paired by order named in the text view (``--json`` lists them all).
PAIRED_SHOWN = 5


def _multiple(value: float | None) -> str:
    return "n/a (no usage blocks)" if value is None else f"×{value:,.1f}"


def render_scan(report: ScanReport) -> str:
    """``toll scan``'s text: the toll table by shape, then repeats and resend amplification."""
    lines = [
        f"{report.calls:,} tool calls in {report.sessions:,} sessions "
        f"({report.files:,} files, {report.unreadable_lines:,} unreadable lines); "
        f"tokens: o200k (only ok results ranked)",
        "",
    ]
    header = (
        f"{'shape':<32} {'calls':>6} {'ok':>6} {'ok tokens':>11} {'median':>7} {'p90':>7}  outcomes"
    )
    if report.agents:
        found = ", ".join(
            f"{agent} {count:,} session{'s' if count != 1 else ''}"
            for agent, count in report.agents.items()
        )
        lines.insert(1, f"agents: {found}")
    if report.paired_by_order:
        sessions = ", ".join(shown(name) for name in report.paired_by_order[:PAIRED_SHOWN])
        more = len(report.paired_by_order) - PAIRED_SHOWN
        lines.insert(
            2 if report.agents else 1,
            f"paired by order (their results name no call): "
            f"{len(report.paired_by_order):,} session(s): {sessions}"
            + (f" and {more:,} more (--json lists all)" if more > 0 else ""),
        )
    lines.append(header)
    for row in report.shapes:
        outcomes = " ".join(
            f"{outcome}={row.by_outcome[outcome]}"
            for outcome in OUTCOMES
            if outcome in row.by_outcome and outcome != OUTCOME_OK
        )
        flag = "  SUSPICIOUS: mostly not ok" if row.suspicious else ""
        shape = shown(row.shape, 32)
        lines.append(
            f"{shape:<32} {row.calls:>6,} {row.ok:>6,} {row.ok_tokens:>11,} {row.median:>7,} {row.p90:>7,}  {outcomes}{flag}"
        )
    lines.append("")
    lines.append(
        f"repeats: {report.wasted_tokens:,} tokens fetched again within a session "
        f"(waste ratio {report.waste_ratio:.2%} of ok tokens); `toll repeats` lists them"
    )
    lines.append(
        f"resend amplification: {_multiple(report.amplification)} — cumulative prompt tokens "
        f"over the tokens tool results admitted"
    )
    if report.orphan_results:
        lines.append(
            f"{report.orphan_results:,} tool results had no call in their file (not attributed)"
        )
    return "\n".join(lines)
