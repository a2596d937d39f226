"""``toll context [SESSION]``: what filled one session's context at its last turn."""

from __future__ import annotations

import argparse
import json

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._transcripts import roots_of
from pytest_toll.cli.options import add_json_option
from pytest_toll.transcripts.context import CONTEXT_NOTE, context_of, find_session


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session",
        nargs="?",
        default=None,
        metavar="SESSION",
        help="a session id (or its start) or a transcript file; default the newest",
    )
    parser.add_argument(
        "--root",
        action="append",
        default=None,
        metavar="R",
        help="a transcript folder or file (repeatable)",
    )
    add_json_option(parser)


_LABELS = {
    "tool_results": "tool results",
    "tool_calls": "tool calls",
    "user_messages": "user messages",
    "assistant_replies": "assistant replies (incl. thinking)",
    "images": "images",
}


def run(args: argparse.Namespace) -> int:
    report = context_of(find_session(roots_of(args), args.session))
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
        return EXIT_OK
    print(f"session {report.session} ({report.model}, {report.turns:,} turns)\n{report.path}\n")
    for key, label in _LABELS.items():
        extra = f" ({report.images} images)" if key == "images" and report.images else ""
        print(f"  {label + extra:<40} {report.slices[key]:>10,}")
    print(f"  {'counted (o200k)':<40} {report.counted:>10,}")
    print(f"  {'reported prompt (last usage)':<40} {report.reported_prompt:>10,}")
    print(f"  {'gap (reported − counted)':<40} {report.gap:>10,}")
    if report.window:
        near = "  NEAR THE LIMIT" if report.near_limit else ""
        print(f"\nwindow {report.window:,}: {report.used:.1%} used{near}")
    else:
        print(f"\nwindow: unknown for {report.model}")
    print(
        f"totals: input {report.input_tokens:,}, output {report.output_tokens:,}, "
        f"cache read {report.cache_read_tokens:,}, cache write {report.cache_write_tokens:,}"
    )
    print(
        f"cost: ${report.cost_usd:,.4f}"
        if report.priced and report.cost_usd is not None
        else f"cost: unpriced ({report.model})"
    )
    print(f"\n{CONTEXT_NOTE}")
    return EXIT_OK
