"""``toll count PATH... [--json] [--estimate]``: the tokens of files or stdin."""

from __future__ import annotations

import argparse
import json

from pytest_toll.cli import EXIT_CANNOT_JUDGE, EXIT_OK, fail
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.textio import read_text
from pytest_toll.core.tokens import get_counter


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="files to count; - reads stdin")
    add_json_option(parser)
    parser.add_argument(
        "--estimate",
        action="store_true",
        help="estimate from characters instead of tokenizing (labelled 'estimate')",
    )
    parser.add_argument(
        "--chars-per-token",
        type=float,
        default=None,
        metavar="N",
        help="characters per token for --estimate (default 3.459)",
    )


def run(args: argparse.Namespace) -> int:
    if args.chars_per_token is not None and not args.estimate:
        return fail("--chars-per-token only applies with --estimate")
    try:
        counter = get_counter(args.estimate, args.chars_per_token)
    except ValueError as error:
        return fail(str(error))
    texts = [read_text(path) for path in args.paths]
    if not texts:
        return EXIT_CANNOT_JUDGE
    tokens = counter.count_many(texts)
    total = sum(tokens)
    method = counter.method
    if args.json:
        report = {
            "files": [
                {"path": path, "tokens": n, "method": method} for path, n in zip(args.paths, tokens)
            ],
            "total": total,
            "method": method,
        }
        print(json.dumps(report, indent=2))
        return EXIT_OK
    width = max(len(f"{n:,}") for n in [*tokens, total])
    for path, n in zip(args.paths, tokens):
        print(f"{n:>{width},}  {path}")
    if len(tokens) > 1:
        print(f"{total:>{width},}  total")
    print(f"method: {method} ({counter.description})")
    return EXIT_OK
