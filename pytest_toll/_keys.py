"""Where the pytest adapter keeps its state: stash keys, ``user_properties`` names, accessors.

Shared by :mod:`pytest_toll.plugin` and :mod:`pytest_toll.items` (which the plugin loads
only with ``--toll``), so neither imports the other for them. Imports nothing of the gate at
run time: ``import pytest_toll.plugin`` must stay cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_toll.fixture import Toll
    from pytest_toll.gate.session import TollState

STATE_KEY: pytest.StashKey[TollState] = pytest.StashKey()
METER_KEY: pytest.StashKey[Toll] = pytest.StashKey()
BUDGET_KEY: pytest.StashKey[int | None] = pytest.StashKey()
#: ``toll(run_budget=N)``: the budget of the sum of the requests a test captured.
RUN_BUDGET_KEY: pytest.StashKey[int | None] = pytest.StashKey()
#: Set (True) only on a test marked ``toll(capture=True)``.
CAPTURE_KEY: pytest.StashKey[bool] = pytest.StashKey()
MARKER_ERROR_KEY: pytest.StashKey[str] = pytest.StashKey()
#: An item's judged result, as a plain dict; the report of its call phase carries it on to
#: the controller (xdist serialises a report's extra attributes) as :data:`REPORT_ATTRIBUTE`.
RESULT_KEY: pytest.StashKey[dict[str, Any]] = pytest.StashKey()
REPORT_ATTRIBUTE = "toll_result"
#: The ledger file's collector, when the ledger is collected (stale entries hang from it).
LEDGER_FILE_KEY: pytest.StashKey[pytest.Collector] = pytest.StashKey()
#: The ``user_properties`` names (what JUnit XML shows): a compact JSON summary of the
#: judgement, and the measured total as a number.
RESULT_PROPERTY = "toll"
TOKENS_PROPERTY = "toll_tokens"
#: One per captured request, in the order sent (what JUnit XML shows of each).
REQUEST_PROPERTY = "toll_request"


def state_of(config: pytest.Config) -> TollState | None:
    """The ``--toll`` session's state; None without ``--toll``."""
    return config.stash.get(STATE_KEY, None)


def require_state(config: pytest.Config) -> TollState:
    return config.stash[STATE_KEY]
