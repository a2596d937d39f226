"""``toll fix``: concrete edits to a server's tools, each with its measured saving.

    toll fix [--json] [--write OUT] [--timeout S] [--env K=V]... [--header K=V]... [--cwd DIR]
             (-- COMMAND ARGS... | --url URL | --tools FILE)

Exit 0 planned (suggestions are not violations), 2 could not judge.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli.options import add_json_option, add_tools_source_options, tools_source
from pytest_toll.definitions.fix import fix_source, write_fixed

if TYPE_CHECKING:
    from pytest_toll.definitions.fix import FixReport


def configure(parser: argparse.ArgumentParser) -> None:
    add_tools_source_options(parser)
    add_json_option(parser, "the JSON report")
    parser.add_argument(
        "--write",
        type=Path,
        metavar="OUT",
        help="write the tools with every safe edit applied (JSON, in the source's shape)",
    )


def run(args: argparse.Namespace) -> int:

    report = fix_source(**tools_source(args))
    if args.write is not None:
        write_fixed(report, args.write)
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render(report, written=args.write))
    return EXIT_OK


def render(report: FixReport, written: Path | None = None) -> str:
    """The human report: before → after, then the edits by saving."""
    method = report.method
    saved = report.before - report.after
    percent = f", {-saved / report.before:+.1%}" if report.before else ""
    change = f"{-saved:+,} tok{percent}" if saved else "no change"
    lines = [
        f"toll fix: {report.target}",
        f"  claude total ({method}): {report.before:,} → {report.after:,} with every safe edit "
        f"({change})",
        "",
    ]
    if not report.suggestions:
        lines.append("nothing to fix: no edit makes the tools shorter")
    else:
        width = max(len("saves"), *(len(f"{s.saving:,}") for s in report.suggestions))
        lines.append(f"{'saves':>{width}}  {'kind':<6}  edit  ({method} tokens, each on its own)")
        for suggestion in report.suggestions:
            kind = "safe" if suggestion.safe else "advice"
            lines.append(f"{suggestion.saving:>{width},}  {kind:<6}  {suggestion.id}")
            lines.append(f"{'':>{width}}  {'':<6}    {suggestion.what}")
    lines.append("")
    if written is not None:
        lines.append(f"wrote {written}: every safe edit applied (toll weigh --tools {written})")
    else:
        lines.append("safe edits keep each schema's meaning; --write OUT writes them all")
    return "\n".join(lines)
