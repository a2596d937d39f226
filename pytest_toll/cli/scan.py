"""``toll scan``: the toll table — which tool-call shapes put the most tokens in context."""

from __future__ import annotations

import argparse

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._html import add_html_option, write_page
from pytest_toll.cli._transcripts import (
    add_root_options,
    json_text,
    read_options,
    report_problems,
    roots_of,
)
from pytest_toll.cli.options import add_json_option, add_top_option
from pytest_toll.report.html import render_page
from pytest_toll.transcripts.outcomes import OUTCOME_OK, OUTCOMES
from pytest_toll.transcripts.report import ScanReport
from pytest_toll.transcripts.scan import scan

TEXT_ROWS = 20
#: Sessions paired by order named in the text view (``--json`` lists them all).
PAIRED_SHOWN = 5


def configure(parser: argparse.ArgumentParser) -> None:
    add_root_options(parser)
    add_top_option(parser, None, "rows to show (default 20; --json: all)")
    add_json_option(parser, "the JSON report")
    add_html_option(parser)


def run(args: argparse.Namespace) -> int:
    report = scan(roots_of(args), read_options(args, progress=not args.json))
    report_problems(report.problems, report.unreadable_by_file)
    if args.html is not None:
        scanned = report.top(args.top).as_dict()
        write_page(args.html, render_page("toll scan: the toll table", scan=scanned))
    if args.json:
        shown = report.top(args.top)
        print(json_text(shown.as_dict()))
        return EXIT_OK
    print(render(report.top(args.top or TEXT_ROWS)))
    return EXIT_OK


def _multiple(value: float | None) -> str:
    return "n/a (no usage blocks)" if value is None else f"×{value:,.1f}"


def render(report: ScanReport) -> str:
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
        shown = ", ".join(report.paired_by_order[:PAIRED_SHOWN])
        more = len(report.paired_by_order) - PAIRED_SHOWN
        lines.insert(
            2 if report.agents else 1,
            f"paired by order (the format has no call ids): "
            f"{len(report.paired_by_order):,} session(s): {shown}"
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
        shape = row.shape if len(row.shape) <= 32 else row.shape[:31] + "…"
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
