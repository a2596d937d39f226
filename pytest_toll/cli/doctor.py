"""``toll doctor``: is this install able to measure? One line per check, ok or problem, and
the fix. Exit 0 when all is well, 1 when something needs fixing, 2 when the counter itself
cannot be trusted (the vocabulary or its identity with tiktoken), so nothing can be measured.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass

from pytest_toll.cli import EXIT_CANNOT_JUDGE, EXIT_OK, EXIT_VIOLATION
from pytest_toll.cli._ledger import add_ledger_option, ledger_path
from pytest_toll.cli.options import add_json_option
from pytest_toll.core import jsonlines, selfcheck, tokens
from pytest_toll.core.errors import UsageError
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.settings import ledger_catalogue
from pytest_toll.transcripts.cache import DATABASE_NAME, untrusted
from pytest_toll.transcripts.locations import (
    ENVIRONMENT_VARIABLE,
    agent_roots,
    default_roots,
    discover,
)
from pytest_toll.transcripts.scan import FAST_COUNTER_MIN_BYTES, cache_dir

OK = "ok"
PROBLEM = "problem"
#: A check that does not apply here (no ledger to validate); never a failure.
SKIPPED = "n/a"


@dataclass(frozen=True)
class Check:
    name: str
    status: str
    detail: str
    fix: str | None = None
    #: A failure that makes every count untrustworthy (exit 2 rather than 1).
    fatal: bool = False

    def as_dict(self) -> dict[str, object]:
        return {"check": self.name, "status": self.status, "detail": self.detail, "fix": self.fix}


def configure(parser: argparse.ArgumentParser) -> None:
    add_ledger_option(parser)
    add_json_option(parser)


_REINSTALL = "reinstall pytest-toll (pip install --force-reinstall pytest-toll)"


def _vocabulary(_args: argparse.Namespace) -> Check:
    result = selfcheck.vocabulary_hash()
    if result.ok:
        return Check("vocabulary", OK, result.detail)
    return Check("vocabulary", PROBLEM, result.detail, _REINSTALL, fatal=True)


def _identity(_args: argparse.Namespace) -> Check:
    try:
        result = selfcheck.identity_with_tiktoken()
    except ImportError as error:
        return Check(
            "tiktoken identity", PROBLEM, f"tiktoken is not importable: {error}", _REINSTALL, True
        )
    if result.ok:
        return Check("tiktoken identity", OK, result.detail)
    fix = "pin a tiktoken release that agrees, and report it to pytest-toll"
    return Check("tiktoken identity", PROBLEM, result.detail, fix, fatal=True)


def _counter(_args: argparse.Namespace) -> Check:
    import tiktoken

    return Check(
        "counter",
        OK,
        f"{tokens.TOKENIZER_NAME} via tiktoken {tiktoken.__version__}, from the vocabulary "
        f"shipped in the package (no network); estimates only when asked "
        f"({tokens.DEFAULT_CHARS_PER_TOKEN} chars/token by default)",
    )


def _fast_counter(_args: argparse.Namespace) -> Check:
    """The counter a big scan counts with, loaded and proven as a scan loads and proves it."""
    tokens.exact_count(fast=True)
    engine = tokens.exact_engine()
    if engine.startswith(tokens.FAST_COUNTER_PACKAGE):
        megabytes = FAST_COUNTER_MIN_BYTES // (1024 * 1024)
        return Check(
            "fast counter",
            OK,
            f"{engine}; counts a scan's results from {megabytes} MB unread per reading process",
        )
    if engine == tokens.FAST_COUNTER_OFF:
        return Check("fast counter", SKIPPED, f"off: {engine}")
    slower = "big scans count with tiktoken: exact, but 7.7× slower on bench/scan.py's results"
    if engine == tokens.FAST_COUNTER_ABSENT:
        return Check(
            "fast counter", SKIPPED, f"{engine}; {slower}", "pip install 'pytest-toll[fast]'"
        )
    fix = (
        "pip install --force-reinstall 'pytest-toll[fast]', or count with tiktoken alone: "
        f"{tokens.COUNTER_ENVIRONMENT}=tiktoken"
    )
    return Check("fast counter", PROBLEM, f"{engine}; {slower}", fix)


def _reader(_args: argparse.Namespace) -> Check:
    # Either path reads every line the same (the typed one is checked against the other);
    # which one runs is said so that a slow or surprising scan can be told apart.
    return Check("transcript reader", OK, jsonlines.path_in_use())


def _cache(_args: argparse.Namespace) -> Check:
    folder = cache_dir()
    probe = folder / f".toll-doctor-{os.getpid()}"
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        folder.mkdir(mode=0o700, exist_ok=True)  # as the scan creates it
        probe.write_text("ok", encoding="utf-8")
        probe.unlink()
    except OSError as error:
        return Check(
            "cache folder",
            PROBLEM,
            f"{folder}: not writable ({error.strerror or error})",
            "set XDG_CACHE_HOME to a writable folder, or pass --no-cache to the transcript "
            "verbs (they re-read every file then)",
        )
    why = untrusted(folder, folder / DATABASE_NAME)
    if why is not None:
        return Check(
            "cache folder",
            PROBLEM,
            f"{folder} {why}: the transcript verbs do not use it",
            "make it your own and writable by you alone (chmod 700, and 600 for its files), "
            "or set XDG_CACHE_HOME to a folder that is",
        )
    return Check("cache folder", OK, f"{folder} is writable, and by you alone")


def _roots(_args: argparse.Namespace) -> Check:
    # TOLL_TRANSCRIPTS when set, else every folder where an agent keeps its sessions.
    if os.environ.get(ENVIRONMENT_VARIABLE, "").strip():
        roots = default_roots()
    else:
        roots = list(dict.fromkeys(root for _, root in agent_roots()))
    found = [root for root in roots if root.exists()]
    shown = ", ".join(str(root) for root in roots)
    if not found:
        return Check(
            "transcript roots",
            PROBLEM,
            f"none of the default roots exist ({shown})",
            f"pass --root DIR to the transcript verbs, or set {ENVIRONMENT_VARIABLE}",
        )
    files = len(discover(found))
    return Check(
        "transcript roots",
        OK,
        f"found {', '.join(str(root) for root in found)} ({files:,} transcript files)",
    )


def _ledger(args: argparse.Namespace) -> Check:
    try:
        path = ledger_path(args)
    except UsageError as error:
        return Check("ledger", PROBLEM, str(error), "pass the path of an existing toll.yaml")
    if path is None:
        return Check("ledger", SKIPPED, "no ./toll.yaml here", "pass --ledger PATH to check one")
    try:
        ledger = load_ledger(path, allow_duplicate_decisions=True)
        catalogue = ledger_catalogue(ledger)
    except UsageError as error:
        return Check("ledger", PROBLEM, str(error), "fix the file, line and key named")
    added = len(catalogue.from_ledger)
    return Check(
        "ledger",
        OK,
        f"{path} is valid (schema, keys{', ' + str(added) + ' models: rows' if added else ''})",
    )


CHECKS: list[Callable[[argparse.Namespace], Check]] = [
    _vocabulary,
    _identity,
    _counter,
    _fast_counter,
    _reader,
    _cache,
    _roots,
    _ledger,
]


def run(args: argparse.Namespace) -> int:
    checks = [check(args) for check in CHECKS]
    if args.json:
        print(json.dumps({"kind": "doctor", "checks": [c.as_dict() for c in checks]}, indent=2))
    else:
        width = max(len(check.name) for check in checks)
        for check in checks:
            print(f"{check.status:<7}  {check.name:<{width}}  {check.detail}")
            if check.fix and check.status != OK:
                print(f"{'':<7}  {'':<{width}}  fix: {check.fix}")
    sys.stdout.flush()
    if any(check.fatal and check.status == PROBLEM for check in checks):
        return EXIT_CANNOT_JUDGE
    if any(check.status == PROBLEM for check in checks):
        return EXIT_VIOLATION
    return EXIT_OK
