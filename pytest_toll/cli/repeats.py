"""``toll repeats``: the same thing fetched again within one session, and what it cost."""

from __future__ import annotations

import argparse

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._transcripts import (
    add_root_options,
    json_text,
    read_options,
    report_problems,
    roots_of,
)
from pytest_toll.cli.options import add_json_option, add_top_option
from pytest_toll.core.inert import shown
from pytest_toll.transcripts.scan import scan


def configure(parser: argparse.ArgumentParser) -> None:
    add_root_options(parser)
    add_top_option(parser, 20, "rows to show (default 20)")
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    report = scan(roots_of(args), read_options(args))
    report_problems(report.problems, report.unreadable_by_file)
    repeats = report.repeats[: args.top]
    if args.json:
        data = {
            "kind": "repeats",
            "tokenizer": report.tokenizer,
            "sessions": report.sessions,
            "repeats": [repeat.as_dict() for repeat in repeats],
            "repeats_total": report.repeats_total,
            "wasted_tokens": report.wasted_tokens,
            "waste_ratio": report.waste_ratio,
        }
        print(json_text(data))
        return EXIT_OK
    if not repeats:
        print(f"no repeats: nothing was fetched twice within one of {report.sessions:,} sessions")
        return EXIT_OK
    print(f"{'wasted':>9} {'times':>5} {'each':>7}  shape / target (session)")
    for repeat in repeats:
        print(
            f"{repeat.wasted:>9,} {repeat.times:>5} {repeat.tokens_each:>7,}  "
            f"{shown(repeat.shape)} / {shown(repeat.target, 80)} ({shown(repeat.session)})"
        )
    if report.repeats_total > len(repeats):
        print(f"(the {len(repeats):,} costliest of {report.repeats_total:,} repeats)")
    print(
        f"\n{report.wasted_tokens:,} o200k tokens fetched again (wasted = each × (times − 1)); "
        f"waste ratio {report.waste_ratio:.2%} of ok tokens"
    )
    return EXIT_OK
