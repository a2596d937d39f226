"""``toll versus 'COMMAND A' 'COMMAND B'``: which of two commands costs fewer tokens."""

from __future__ import annotations

import argparse
import json

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.limits import VERSUS_COMMAND_TIMEOUT
from pytest_toll.transcripts.versus import versus


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "first", metavar="'COMMAND A'", help="a command line (split like a shell, run without one)"
    )
    parser.add_argument("second", metavar="'COMMAND B'", help="the command to compare it with")
    parser.add_argument(
        "--allow-failure", action="store_true", help="count a command's output even when it fails"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=VERSUS_COMMAND_TIMEOUT,
        metavar="S",
        help=f"seconds per command (default {VERSUS_COMMAND_TIMEOUT:g})",
    )
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    report = versus(args.first, args.second, timeout=args.timeout, allow_failure=args.allow_failure)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    width = max(len(report.first.command), len(report.second.command), 7)
    for label, toll in (("A", report.first), ("B", report.second)):
        status = "" if toll.exit_code == 0 else f"  (exit {toll.exit_code})"
        print(f"{label}  {toll.command:<{width}}  {toll.tokens:>9,} tokens{status}")
    if report.saved > 0:
        verdict = f"B saves {report.saved:,} tokens"
    elif report.saved < 0:
        verdict = f"B costs {-report.saved:,} tokens more"
    else:
        verdict = "same cost"
    print(f"{verdict} ({report.ratio_text()}); o200k tokens of stdout + stderr")
    return EXIT_OK
