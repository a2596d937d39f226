"""``toll skills PATH [--json] [--window N]``: Agent Skills at their three loading levels."""

from __future__ import annotations

import argparse
import json

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION, fail
from pytest_toll.cli._html import add_html_option, write_page
from pytest_toll.cli.options import add_json_option, add_window_option
from pytest_toll.core.findings import has_errors
from pytest_toll.report.html import render_page
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.render import render_text


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "path", metavar="PATH", help="a skill folder (holding SKILL.md) or a folder of them"
    )
    add_json_option(parser)
    add_html_option(parser)
    add_window_option(parser, "the always-loaded metadata")


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    if not args.path:
        return fail("PATH is empty")
    report = measure_skills(Path(args.path), window=args.window)
    if args.html is not None:
        page = render_page(f"toll skills: {args.path}", skills=report.as_dict(), window=args.window)
        write_page(args.html, page)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_text(report))
    return EXIT_VIOLATION if has_errors(report.findings) else EXIT_OK
