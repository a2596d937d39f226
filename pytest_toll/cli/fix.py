"""``toll fix``: concrete edits to a server's tools, each with its measured saving.

    toll fix [--json] [--write OUT] [--timeout S] [--env K=V]... [--header K=V]... [--cwd DIR]
             (-- COMMAND ARGS... | --url URL | --tools FILE)
    toll fix --surface [DIR] [--host H]... [--body-tokens N] [--json] [--write]

Exit 0 planned (suggestions are not violations), 2 could not judge.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._fix_surface import (
    WRITE_IN_PLACE,
    add_surface_fix_options,
    refuse_surface_options,
    run_surface,
)
from pytest_toll.cli.options import add_json_option, add_tools_source_options, tools_source
from pytest_toll.definitions.fix import fix_source, write_fixed
from pytest_toll.definitions.render import render_fix


def configure(parser: argparse.ArgumentParser) -> None:
    add_tools_source_options(parser)
    add_json_option(parser, "the JSON report")
    parser.add_argument(
        "--write",
        type=Path,
        nargs="?",
        const=WRITE_IN_PLACE,
        metavar="OUT",
        help="write the tools with every safe edit applied (JSON, in the source's shape); "
        "with --surface, no OUT: apply the reported edits to the repository",
    )
    add_surface_fix_options(parser)


def run(args: argparse.Namespace) -> int:
    if args.surface is not None:
        return run_surface(args)
    refuse_surface_options(args)
    report = fix_source(**tools_source(args))
    if args.write is not None:
        write_fixed(report, args.write)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_fix(report, written=args.write))
    return EXIT_OK
