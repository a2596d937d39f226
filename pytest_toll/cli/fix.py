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

from pytest_toll.cli import EXIT_OK, fail
from pytest_toll.cli.options import key_value_pairs
from pytest_toll.core.errors import UsageError
from pytest_toll.definitions.fix import fix_source, write_fixed

if TYPE_CHECKING:
    from pytest_toll.definitions.fix import FixReport


def configure(parser: argparse.ArgumentParser) -> None:
    source = parser.add_argument_group("source (exactly one)")
    source.add_argument("--url", help="a streamable-HTTP MCP endpoint")
    source.add_argument(
        "--tools", type=Path, metavar="FILE", help="a JSON or YAML tools array or tools/list result"
    )
    source.add_argument(
        "command",
        nargs=argparse.REMAINDER,
        metavar="-- COMMAND ARGS",
        help="a stdio MCP server, started without a shell",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report")
    parser.add_argument(
        "--write",
        type=Path,
        metavar="OUT",
        help="write the tools with every safe edit applied (JSON, in the source's shape)",
    )
    parser.add_argument(
        "--timeout", type=float, default=30.0, metavar="S", help="seconds (default 30)"
    )
    parser.add_argument(
        "--env", action="append", default=[], metavar="K=V", help="server environment variable"
    )
    parser.add_argument("--cwd", type=Path, metavar="DIR", help="the server's working directory")
    parser.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="K=V",
        help="HTTP header (values may use ${ENV_VAR}; never printed)",
    )


def run(args: argparse.Namespace) -> int:

    command = list(args.command)
    if command and command[0] == "--":
        command = command[1:]
    try:
        env = key_value_pairs(args.env, "--env")
        headers = key_value_pairs(args.header, "--header")
    except ValueError as error:
        return fail(str(error))
    if env and not command:
        raise UsageError("--env applies to a stdio server (-- COMMAND)")
    if headers and not args.url:
        raise UsageError("--header applies to --url")
    report = fix_source(
        command=command or None,
        url=args.url,
        tools_file=args.tools,
        env=env or None,
        cwd=args.cwd,
        headers=headers or None,
        timeout=args.timeout,
    )
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
