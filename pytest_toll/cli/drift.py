"""``toll drift``: per model, the measured ratio of its tokenizer to o200k, from transcripts."""

from __future__ import annotations

import argparse
import json

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._transcripts import add_root_options, read_options, roots_of
from pytest_toll.cli.options import add_json_option
from pytest_toll.transcripts.drift import DRIFT_LIMITS, DRIFT_METHOD, drift

# Below this many turns one odd turn (a resumed session, a cache reset) can swing the ratio.
FEW_TURNS = 20


def configure(parser: argparse.ArgumentParser) -> None:
    add_root_options(parser)
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    report = drift(roots_of(args), read_options(args))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    print(f"{'model':<34} {'turns':>6} {'reported':>11} {'o200k':>11} {'ratio':>7}")
    for row in report.rows:
        flag = "" if row.within_tolerance else f"  beyond ±{report.tolerance:.0%}"
        if row.turns < FEW_TURNS:
            flag += f"  (fewer than {FEW_TURNS} turns: a hint, not a measurement)"
        print(
            f"{row.model:<34} {row.turns:>6,} {row.reported:>11,} {row.counted:>11,} {row.ratio:>7.3f}{flag}"
        )
    print()
    print(f"method: {DRIFT_METHOD}")
    print(f"limits: {DRIFT_LIMITS}")
    if report.unreadable_lines:
        print(f"{report.unreadable_lines:,} unreadable lines skipped in {report.files:,} files")
    return EXIT_OK
