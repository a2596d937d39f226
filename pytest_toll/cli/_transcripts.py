"""Options and helpers shared by the transcript verbs (scan, repeats, drift, context, check)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import orjson

from pytest_toll.cli.options import positive_whole_number
from pytest_toll.core.inert import shown
from pytest_toll.transcripts.formats import FORMATS
from pytest_toll.transcripts.locations import default_roots
from pytest_toll.transcripts.scan import ReadOptions, cache_dir


def add_root_options(parser: argparse.ArgumentParser, *, selection: bool = True) -> None:
    parser.add_argument(
        "--root",
        action="append",
        default=None,
        metavar="R",
        help="a transcript file or folder (repeatable); default $TOLL_TRANSCRIPTS, else the "
        "folders where each installed agent keeps its sessions "
        f"({', '.join(format.title for format in FORMATS)})",
    )
    if selection:
        parser.add_argument(
            "--since-days",
            type=float,
            default=None,
            metavar="N",
            help="only files changed in the last N days",
        )
        parser.add_argument(
            "--limit",
            type=positive_whole_number,
            default=None,
            metavar="N",
            help="only the N newest files",
        )
    parser.add_argument(
        "--no-cache", action="store_true", help="re-read every file, ignore the cache"
    )
    parser.add_argument(
        "--workers",
        type=positive_whole_number,
        default=None,
        metavar="N",
        help="processes for reading files (default: all cores)",
    )


def roots_of(args: argparse.Namespace) -> list[Path]:
    if args.root:
        return [Path(root).expanduser() for root in args.root]
    return default_roots()


def cache_of(args: argparse.Namespace) -> Path | None:
    return None if args.no_cache else cache_dir()


def progress_wanted() -> bool:
    return sys.stderr.isatty()


def read_options(
    args: argparse.Namespace, *, selection: bool = True, progress: bool = True
) -> ReadOptions:
    """The reading options of a verb whose parser had ``add_root_options(parser, selection=…)``;
    ``progress`` shows on a terminal only."""
    return ReadOptions(
        since_days=args.since_days if selection else None,
        limit=args.limit if selection else None,
        cache=cache_of(args),
        workers=args.workers,
        progress=progress and progress_wanted(),
    )


def report_problems(problems: dict[str, list[str]], unreadable: dict[str, int]) -> None:
    """Unreadable lines, per file, on stderr: counted, never a crash, never hidden."""
    for path, number in unreadable.items():
        detail = "; ".join(problems.get(path, []))
        print(f"toll: {shown(path)}: {number} unreadable line(s): {detail}", file=sys.stderr)


def json_text(data: Any) -> str:
    """What ``json.dumps(data, indent=2, ensure_ascii=False)`` writes, made by orjson: a
    gigabyte's scan lists thousands of repeats: bench/scan.py's 1 GB report took the standard
    module 38 ms to write and orjson 2 (a quarter of a warm scan). The text is the same, but for how some
    floats are spelled (``0.00001`` for ``1e-05``: the same number); what orjson refuses (a
    lone surrogate, an integer beyond 64 bits) is written the standard way."""
    try:
        return orjson.dumps(data, option=orjson.OPT_INDENT_2).decode("utf-8")
    except TypeError:
        return json.dumps(data, indent=2, ensure_ascii=False)
