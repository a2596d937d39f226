"""``toll merge shard-*.json``: one verdict and one ratchet from a suite split across machines.

Each shard ran ``pytest --toll --toll-shard K/N --toll-json shard-K.json`` (or with
pytest-split's ``--splits N --group K``); the merge judges their union as one full run would
(:mod:`pytest_toll.gate.merge`) and writes the outputs from the merged report. Exit 0 passed,
1 a budget or pin broken, 2 could not judge (a shard missing, shards of different ledgers or
versions, an entry measured differently by two shards, an entry that could not be measured).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from pytest_toll.cli import EXIT_CANNOT_JUDGE, EXIT_OK, EXIT_VIOLATION
from pytest_toll.cli.options import positive_whole_number
from pytest_toll.core.settings import SETTINGS
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.merge import load_shard_report, merge_shards
from pytest_toll.report.data import OUTCOME_ERROR, SessionReport
from pytest_toll.report.outputs import OUTPUTS, write_outputs
from pytest_toll.report.terminal import summary_lines


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "reports", nargs="+", type=Path, metavar="SHARD.json", help="every shard's --toll-json"
    )
    parser.add_argument(
        "--ledger",
        type=Path,
        metavar="PATH",
        help="the ledger the shards judged (default: the path the reports name, from here)",
    )
    parser.add_argument(
        "--shards",
        type=positive_whole_number,
        metavar="N",
        help="how many shards the matrix ran: fewer reports is 'could not judge'",
    )
    for setting in SETTINGS.values():
        if setting.merge_help is not None:
            parser.add_argument(setting.merge_flag, action="store_true", help=setting.merge_help)
    for output in OUTPUTS.values():
        if output.on_merge:
            parser.add_argument(
                f"--{output.name}",
                type=Path,
                metavar="PATH",
                help=f"{output.help}, of the merged report",
            )


def run(args: argparse.Namespace) -> int:
    shards = [load_shard_report(path) for path in args.reports]
    ledger_path = args.ledger if args.ledger is not None else Path(str(shards[0].data["ledger"]))
    ledger = load_ledger(ledger_path, missing_ok=True, allow_duplicate_decisions=True)
    merged = merge_shards(
        shards,
        ledger,
        update=args.update,
        allow_increase=args.allow_increase,
        strict=args.strict,
        expected=args.shards,
    )
    report = merged.report
    warnings: list[str] = []
    write_outputs(
        report.as_dict(),
        {
            name: path
            for name, output in OUTPUTS.items()
            if output.on_merge and (path := getattr(args, name)) is not None
        },
        github=os.environ.get("GITHUB_ACTIONS") == "true",
        ledger_path=ledger_path,
        warn=warnings.append,
    )
    print(f"toll merge: {len(shards)} shards, {len(report.entries)} entries")
    for text, _ in summary_lines(report):
        print(text)
    for warning in warnings:
        print(f"toll warning: {warning}", file=sys.stderr)
    if merged.ledger_error is not None:
        print(f"toll: error: {merged.ledger_error}", file=sys.stderr)
        return EXIT_CANNOT_JUDGE
    return exit_code(report)


def exit_code(report: SessionReport) -> int:
    """1 when a budget or pin is broken; 2 when only unmeasured entries fail (never a pass)."""
    failing = [entry for entry in report.entries if entry.failed]
    if any(entry.outcome != OUTCOME_ERROR for entry in failing):
        return EXIT_VIOLATION
    if failing:
        return EXIT_CANNOT_JUDGE
    return EXIT_OK
