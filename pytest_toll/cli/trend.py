"""``toll trend [--ledger PATH] [--json] [--since DATE]``: every pin's history from git.

Per entry, a sparkline of its pins oldest first and the change since the first point. A
commit whose ledger does not load is skipped and counted. Exit 0 when a history was read,
2 when there is none (not a git repository, no commit touched the ledger).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path

from pytest_toll.cli import EXIT_OK
from pytest_toll.gate.ledger.history import Point, Trend, trend

BARS = "▁▂▃▄▅▆▇█"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        type=Path,
        default=Path("toll.yaml"),
        metavar="PATH",
        help="the ledger whose history to read (default ./toll.yaml)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report")
    parser.add_argument(
        "--since",
        metavar="DATE",
        help="only commits after DATE (anything git log --since takes: 2026-01-31, '3 months ago')",
    )


def run(args: argparse.Namespace) -> int:

    history = trend(args.ledger, since=args.since)
    if args.json:
        print(json.dumps(history.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render(history))
    return EXIT_OK


def sparkline(values: Sequence[float]) -> str:
    """One block per value, scaled between the lowest and the highest."""
    if not values:
        return ""
    low, high = min(values), max(values)
    if high == low:
        return BARS[len(BARS) // 2] * len(values)
    steps = len(BARS) - 1
    return "".join(BARS[round((value - low) / (high - low) * steps)] for value in values)


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def change(points: Sequence[Point]) -> str:
    """The last pin against the first: signed, with the percentage when it means something."""
    first, last = points[0].pin, points[-1].pin
    difference = last - first
    if not difference:
        return "unchanged"
    signed = f"{difference:+,}" if isinstance(difference, int) else f"{difference:+.4g}"
    percent = f" ({difference / first:+.1%})" if first else ""
    return f"{signed}{percent}"


def render(history: Trend) -> str:
    lines = [
        f"toll trend: {history.ledger} — {history.commits} commit"
        f"{'' if history.commits == 1 else 's'} touched it (pins in o200k tokens; "
        "transcripts: waste ratio)"
    ]
    if not history.entries:
        lines.append("no pins in any version")
    width = max((len(label) for label in history.entries), default=0)
    longest = max((len(points) for points in history.entries.values()), default=0)
    for label, points in history.entries.items():
        values = [point.pin for point in points]
        lines.append(
            f"  {label:<{width}}  {sparkline(values):<{longest}}  {_number(points[0].pin)} → "
            f"{_number(points[-1].pin)}  {change(points)}  "
            f"({len(points)} point{'' if len(points) == 1 else 's'}, "
            f"since {points[0].date[:10]} {points[0].commit[:7]})"
        )
    if history.skipped:
        lines.append(
            f"skipped {len(history.skipped)} commit{'' if len(history.skipped) == 1 else 's'} "
            "whose ledger does not load:"
        )
        lines.extend(f"  {commit[:7]}: {why}" for commit, why in history.skipped)
    return "\n".join(lines)
