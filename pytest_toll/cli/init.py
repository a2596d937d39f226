"""``toll init``: write a starter toll.yaml from what the repository already declares."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import TextIO

from pytest_toll.cli import EXIT_CANNOT_JUDGE, EXIT_OK
from pytest_toll.core.errors import UsageError
from pytest_toll.core.inert import inert, shown
from pytest_toll.gate import starter as starters
from pytest_toll.gate.discovery import describe_search
from pytest_toll.gate.ledger import ledger_from_text

#: An existing ledger is never overwritten: the same code pytest gives a usage error.
EXIT_LEDGER_EXISTS = 4
#: Nothing in the repository that a ledger could gate (nothing found, or nothing found could
#: be measured here): no ledger is written, since pytest would run it as "no tests".
EXIT_NOTHING_TO_MEASURE = EXIT_CANNOT_JUDGE


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        default="toll.yaml",
        metavar="PATH",
        help="the ledger to write (default toll.yaml); sources are looked for beside it",
    )
    parser.add_argument(
        "--headroom",
        type=float,
        default=starters.HEADROOM,
        metavar="F",
        help=f"budget = pin × F, rounded up to the next {starters.BUDGET_STEP} "
        f"(default {starters.HEADROOM:g})",
    )
    parser.add_argument(
        "--print", action="store_true", help="print the ledger instead of writing it"
    )


def run(args: argparse.Namespace) -> int:
    path = Path(args.ledger)
    if os.path.islink(path) and not path.exists():
        print(
            f"toll: error: {path} is a symlink to {os.readlink(path)}, which does not exist; "
            "toll init does not write through it (remove the link, or write elsewhere with "
            "--ledger PATH)",
            file=sys.stderr,
        )
        return EXIT_LEDGER_EXISTS
    if path.exists() and not args.print:
        print(
            f"toll: error: {path} exists; toll init never overwrites a ledger "
            "(remove it, or write elsewhere with --ledger PATH)",
            file=sys.stderr,
        )
        return EXIT_LEDGER_EXISTS
    if args.headroom < 1:
        raise UsageError(f"--headroom must be at least 1, not {args.headroom:g}")
    root = path.resolve().parent
    discovery = starters.discover(root)
    for note in discovery.notes:
        print(f"toll init: {inert(note)}", file=sys.stderr)
    if discovery.empty:
        print(
            f"toll: error: nothing to measure in {root}: {describe_search()}; no ledger written",
            file=sys.stderr,
        )
        return EXIT_NOTHING_TO_MEASURE
    for line in discovery.where():
        print(f"toll init: found {inert(line)}", file=sys.stderr)
    starter = starters.measure(discovery, args.headroom)
    text = starters.render(starter)
    if not starter.measured:
        # Every source failed: a ledger of comments would run as "no tests" (pytest exit 5).
        _not_measured(starter, sys.stderr, "could not be measured")
        print(
            "toll: error: nothing toll init could measure (each reason above); no ledger "
            "written. Make one of them measurable here, then run toll init again.",
            file=sys.stderr,
        )
        return EXIT_NOTHING_TO_MEASURE
    ledger_from_text(text, path)  # a starter that pytest --toll refuses would be worse than none
    if args.print:
        sys.stdout.write(text)
    elif not _write_new(text, path):
        print(f"toll: error: {path} exists; toll init never overwrites a ledger", file=sys.stderr)
        return EXIT_LEDGER_EXISTS
    _summary(starter, path, written=not args.print)
    return EXIT_OK


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _write_new(text: str, path: Path) -> bool:
    """Put the text at ``path`` unless a file is there (also one that appeared since the
    first check): a hard link never replaces its target. False when one exists.

    The file gets the mode a new file gets under the umask (0644 typically), as any file an
    editor writes: the ledger is meant to be committed and read by CI, not kept private.
    """
    descriptor, name = tempfile.mkstemp(
        prefix=".toll-init-", suffix=".yaml", dir=path.resolve().parent
    )
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(name, 0o666 & ~_umask())
        try:
            os.link(name, path)
        except FileExistsError:
            return False
    finally:
        os.unlink(name)
    return True


def _not_measured(starter: starters.Starter, out: TextIO, what: str) -> None:
    for entry, reason in starter.not_measured():
        print(f"  {inert(entry)} {what}: {shown(reason)}", file=out)


def _summary(starter: starters.Starter, path: Path, *, written: bool) -> None:
    out = sys.stderr if not written else sys.stdout
    verb = "wrote" if written else "would write"
    print(f"{verb} {os.fspath(path)}: {', '.join(starter.counts())}", file=out)
    _not_measured(starter, out, "written commented out")
    if starter.failing_findings:
        print(
            f"{len(starter.failing_findings)} finding(s) already there, written as rule "
            "overrides with a reason (shown on every run until you fix them or say why):",
            file=out,
        )
        for line in starter.failing_findings:
            print(f"  {inert(line)}", file=out)
    if starter.warnings:
        print(
            f"{len(starter.warnings)} warning(s) already there, shown on every run as they are:",
            file=out,
        )
        for line in starter.warnings:
            print(f"  {inert(line)}", file=out)
    if written:
        # The ledger named on the command line: pytest then collects it alone, not every
        # test_*.py in the tree (a repository without Python tests has none to run).
        print(f"next: pytest --toll {shlex.quote(os.fspath(path))}", file=out)
