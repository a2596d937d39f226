"""The ledger a verb with ``--model`` reads its ``models:`` from: ``--ledger PATH``, or
``./toll.yaml`` when one is there (the pytest plugin reads the same section)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_toll.core.errors import UsageError
from pytest_toll.core.models import Catalogue, load_models
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.settings import ledger_catalogue

DEFAULT_LEDGER = Path("toll.yaml")


def add_ledger_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        default=None,
        help="the toll.yaml whose 'models:' add or change catalogue rows "
        "(default ./toll.yaml when present)",
    )


def ledger_path(args: argparse.Namespace) -> Path | None:
    """The ledger to read: the one named (it must exist), else ./toll.yaml if present."""
    named: str | None = getattr(args, "ledger", None)
    if named is not None:
        path = Path(named)
        if not path.is_file():
            raise UsageError(f"--ledger {named}: no such ledger file")
        return path
    return DEFAULT_LEDGER if DEFAULT_LEDGER.is_file() else None


def catalogue_of(args: argparse.Namespace) -> Catalogue:
    """The model catalogue with the ledger's ``models:`` applied (the shipped one without)."""
    path = ledger_path(args)
    if path is None:
        return load_models()
    return ledger_catalogue(load_ledger(path, allow_duplicate_decisions=True))
