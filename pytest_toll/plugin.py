"""The pytest adapter. Hooks in lifecycle order, each delegating to the core.

Without ``--toll`` this registers the option group and the marker and does nothing else:
no tokenizer import, no ledger read.
"""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toll", "context-token tolls (pytest-toll)")
    group.addoption(
        "--toll",
        action="store_true",
        default=False,
        help="measure and gate context-token costs against the toll.yaml ledger",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toll(budget=N): fail the test when the tokens it measures with the toll fixture exceed N",
    )
