"""``toll fix --surface [DIR]``: the surface mode of ``toll fix`` (always-on text moved on
demand, each saving measured per host on the written result). The tools mode stays in
``cli/fix.py``; this module adds its options and runs it.

    toll fix --surface [DIR] [--host H]... [--body-tokens N] [--json] [--write]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli.options import positive_whole_number
from pytest_toll.core.errors import UsageError
from pytest_toll.core.hosts import BY_MEMORY, HOSTS, host_named
from pytest_toll.surface.bill import host_bill
from pytest_toll.surface.relocate import BODY_TOKENS, fix_surface
from pytest_toll.surface.relocate_report import SurfaceFix, render_surface_fix
from pytest_toll.surface.workcopy import write_fix

#: ``--write`` given without OUT: in the surface mode, apply the edits to the repository.
WRITE_IN_PLACE = "\0in place"


def add_surface_fix_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("surface mode (--surface)")
    group.add_argument(
        "--surface",
        nargs="?",
        const=".",
        default=None,
        metavar="DIR",
        help="propose moves of the repository's always-on text (default .): a memory file's "
        "procedure to a skill, a long skill body's sections to references/, an AGENTS.md "
        "past Codex's cut split per folder; each saving re-measured per host; --write "
        "(no OUT) applies exactly the reported edits",
    )
    group.add_argument(
        "--host",
        action="append",
        choices=list(dict.fromkeys([*HOSTS, *BY_MEMORY])),
        default=None,
        help="a host to measure (repeatable; default: every host with files here)",
    )
    group.add_argument(
        "--body-tokens",
        type=positive_whole_number,
        default=BODY_TOKENS,
        metavar="N",
        help=f"a skill body over N tokens moves sections to references/ (default {BODY_TOKENS:,})",
    )
    # A stdio server may take --host itself: after `--` it stays the server's.
    parser.set_defaults(server_flags=("--host",))


def refuse_surface_options(args: argparse.Namespace) -> None:
    """The tools mode: the surface mode's options are refused, and ``--write`` needs OUT."""
    if args.host or args.body_tokens != BODY_TOKENS:
        raise UsageError("--host and --body-tokens apply to --surface")
    if args.write == Path(WRITE_IN_PLACE):
        args.own_parser.error("argument --write: expected one argument")


def run_surface(args: argparse.Namespace) -> int:
    if args.command or args.url or args.tools:
        raise UsageError("--surface reads a repository: no server (-- COMMAND, --url, --tools)")
    if args.write is not None and args.write != Path(WRITE_IN_PLACE):
        raise UsageError("--write takes no OUT with --surface: it writes into the repository")
    root = Path(args.surface)
    named = [host_named(name) for name in args.host or ()]
    hosts = [host for host in named if host is not None] or None
    fix = fix_surface(root, hosts, body_tokens=args.body_tokens)
    if args.write is not None:
        fix = _verified(root, write_fix(root, fix))
    if args.json:
        print(json.dumps(fix.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(render_surface_fix(fix))
    return EXIT_OK


def _verified(root: Path, fix: SurfaceFix) -> SurfaceFix:
    """The written repository re-measured: a host whose bill is not what the copy said is
    named (a file changed under us between the measure and the write)."""
    notes = list(fix.notes)
    for total in fix.totals:
        host = HOSTS[total.host]
        now = host_bill(root, host).total
        if now != total.after:
            notes.append(f"{total.host}: re-measured after writing: {now:,}, not {total.after:,}")
    return SurfaceFix(fix.root, fix.moves, fix.totals, fix.cut, fix.writes, tuple(notes), True)
