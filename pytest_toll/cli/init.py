"""``toll init``: write a starter toll.yaml from what the repository already declares."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from pytest_toll.cli import EXIT_CANNOT_JUDGE, EXIT_OK
from pytest_toll.core.errors import UsageError
from pytest_toll.gate import starter as starters
from pytest_toll.gate.ledger import load_ledger

#: An existing ledger is never overwritten: the same code pytest gives a usage error.
EXIT_LEDGER_EXISTS = 4


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
        print(f"toll init: {note}", file=sys.stderr)
    if discovery.empty:
        print(
            "toll: error: nothing to measure: no MCP servers in "
            + ", ".join(name for name, _ in starters.SERVER_FILES)
            + "; no skills under "
            + ", ".join(f"{name}/" for name in starters.SKILL_ROOTS)
            + "; no transcripts under "
            + ", ".join(f"{name}/" for name in starters.TRANSCRIPT_ROOTS)
            + "; no memory files, subagents, commands or plugins",
            file=sys.stderr,
        )
        return EXIT_CANNOT_JUDGE
    starter = starters.measure(discovery, args.headroom)
    text = starters.render(starter)
    if args.print:
        os.unlink(_check_loads(text, root))
        sys.stdout.write(text)
    elif not _write_new(text, path):
        print(f"toll: error: {path} exists; toll init never overwrites a ledger", file=sys.stderr)
        return EXIT_LEDGER_EXISTS
    _summary(starter, path, written=not args.print)
    return EXIT_OK


def _check_loads(text: str, root: Path) -> Path:
    """Write ``text`` to a temporary file beside the ledger and load it as pytest would:
    a starter that ``pytest --toll`` refuses would be worse than none."""

    descriptor, name = tempfile.mkstemp(prefix=".toll-init-", suffix=".yaml", dir=root)
    with os.fdopen(descriptor, "w", encoding="utf-8", newline="\n") as file:
        file.write(text)
    try:
        load_ledger(name)
    except BaseException:
        os.unlink(name)
        raise
    return Path(name)


def _write_new(text: str, path: Path) -> bool:
    """Put the checked text at ``path`` unless a file is there (also one that appeared since
    the first check): a hard link never replaces its target. False when one exists."""
    temporary = _check_loads(text, path.resolve().parent)
    try:
        os.link(temporary, path)
    except FileExistsError:
        return False
    finally:
        os.unlink(temporary)
    return True


def _summary(starter: starters.Starter, path: Path, *, written: bool) -> None:
    out = sys.stderr if not written else sys.stdout
    measured = [s for s, result in starter.servers if not isinstance(result, str)]
    skipped = [(s, result) for s, result in starter.servers if isinstance(result, str)]
    skills = [name for name, _, result in starter.skills if not isinstance(result, str)]
    verb = "wrote" if written else "would write"
    print(
        f"{verb} {os.fspath(path)}: {len(measured)} server(s), {len(skills)} skill(s)"
        + (", transcripts" if isinstance(starter.transcripts, dict) else "")
        + "".join(
            f", {len(measured_rows)} {kind}"
            for kind, rows in starter.surface.entries.items()
            if (measured_rows := [row for row in rows if not isinstance(row[2], str)])
        ),
        file=out,
    )
    for kind, rows in starter.surface.entries.items():
        for name, _, result in rows:
            if isinstance(result, str):
                print(f"  {kind}.{name} written commented out: {result}", file=out)
    for server, reason in skipped:
        print(
            f"  servers.{server.name} ({server.origin}) written commented out: {reason}", file=out
        )
    for name, _, result in starter.skills:
        if isinstance(result, str):
            print(f"  skills.{name} written commented out: {result}", file=out)
    if isinstance(starter.transcripts, str):
        print(f"  transcripts written commented out: {starter.transcripts}", file=out)
    if starter.failing_findings:
        print(
            "error-severity findings (pytest --toll fails on these until fixed or the rule is",
            file=out,
        )
        print("turned down under rules:):", file=out)
        for line in starter.failing_findings:
            print(f"  {line}", file=out)
    print("next: pytest --toll", file=out)
