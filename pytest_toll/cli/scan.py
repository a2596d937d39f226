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
from pytest_toll.transcripts.render import render_scan
from pytest_toll.transcripts.scan import scan

TEXT_ROWS = 20


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
    print(render_scan(report.top(args.top or TEXT_ROWS)))
    return EXIT_OK
