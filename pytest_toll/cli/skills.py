"""``toll skills PATH [--json] [--window N]``: Agent Skills at their three loading levels."""

from __future__ import annotations

import argparse
import json

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION, fail
from pytest_toll.cli._html import add_html_option, write_page


def _window(value: str) -> int:
    try:
        window = int(value.replace("_", "").replace(",", ""))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number of tokens: {value!r}") from None
    if window <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive number of tokens, not {value!r}")
    return window


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", metavar="PATH", help="a skill folder (holding SKILL.md) or a folder of them"
    )
    parser.add_argument("--json", action="store_true", help="print a JSON report")
    add_html_option(parser)
    parser.add_argument(
        "--window",
        type=_window,
        default=1_000_000,
        metavar="N",
        help="context window the always-loaded metadata is shown against (default 1,000,000)",
    )


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from pytest_toll.core.findings import has_errors
    from pytest_toll.skills.measure import measure_skills, render_text

    if not args.path:
        return fail("PATH is empty")
    report = measure_skills(Path(args.path), window=args.window)
    if args.html is not None:
        from pytest_toll.report.html import render_page

        page = render_page(f"toll skills: {args.path}", skills=report.as_dict(), window=args.window)
        write_page(args.html, page)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_text(report))
    return EXIT_VIOLATION if has_errors(report.findings) else EXIT_OK
