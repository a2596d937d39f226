"""Ledger entries as pytest items (``toll.yaml::servers::files``, ``toll.yaml::transcripts``),
and the judgement of a test's own measurement.

The ledger file is a collector, each section a collector and each entry an item, so node
ids, ``-k`` and ``--co`` work as for Python tests. An item measures its entry with its
kind's measurer (:mod:`pytest_toll.gate.kinds`), judges it (:func:`pytest_toll.gate.ratchet.judge`),
leaves the result on its report as a plain dict (how it reaches the xdist controller), and
fails with a short table rather than a traceback. A test that measured with the ``toll``
fixture, or is marked ``toll(budget=N)``, is judged by the gate's
:func:`pytest_toll.gate.verdict.judge_test` from what its meter, marker and ledger entry
hold (:func:`record_verdict`); what it captured (``toll(capture=True)``) travels on its
result, one row per request. The ``toll`` marker's arguments are checked here too
(:func:`read_markers`), once, at collection.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_toll._keys import (
    BUDGET_KEY,
    CAPTURE_KEY,
    LEDGER_FILE_KEY,
    MARKER_ERROR_KEY,
    REQUEST_PROPERTY,
    RESULT_KEY,
    RESULT_PROPERTY,
    RUN_BUDGET_KEY,
    STATE_KEY,
    TOKENS_PROPERTY,
    require_state,
    state_of,
)
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.inert import inert, inert_lines, shown
from pytest_toll.core.kinds import KINDS, TESTS_KIND, Kind
from pytest_toll.fixture import Toll
from pytest_toll.gate.kinds import measurer_of
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import Policy, judge, stale_result
from pytest_toll.gate.verdict import judge_test
from pytest_toll.report.data import EntryResult
from pytest_toll.report.markdown import request_line
from pytest_toll.report.terminal import failure_text


class EntryFailed(Exception):
    """A ledger entry failed its judgement; ``repr_failure`` shows the table."""

    def __init__(self, result: EntryResult) -> None:
        super().__init__(result.message)
        self.result = result


class LedgerFile(pytest.File):
    """The ledger: one section collector per entry kind present."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        state = state_of(self.config)
        if state is None:
            return
        self.config.stash[LEDGER_FILE_KEY] = self
        data = state.ledger.data
        for kind in KINDS.values():
            if not kind.measured_from_ledger:
                continue  # measured by tests, not collected from the ledger
            section = data.get(kind.name)
            if kind.whole_section:
                if isinstance(section, Mapping):
                    yield LedgerItem.from_parent(
                        self, name=kind.name, kind=kind, entry_name=kind.name
                    )
            elif isinstance(section, Mapping) and section:
                yield LedgerSection.from_parent(self, name=kind.name, kind=kind)


class LedgerSection(pytest.Collector):
    """``servers``, ``skills``…: one item per entry, in the ledger's order."""

    def __init__(self, *, kind: Kind, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind

    def collect(self) -> Iterator[pytest.Item]:
        state = state_of(self.config)
        if state is None:
            return
        for name in state.ledger.section(self.kind.name):
            # pytest prints an item's name as it is (progress, summary, -rA): a ledger key
            # that carries a line break or an escape is named inert.
            yield LedgerItem.from_parent(self, name=inert(name), kind=self.kind, entry_name=name)


class JudgedItem(pytest.Item):
    """An item whose failure is a judged entry: shown as its short table, not a traceback."""

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, EntryFailed):
            return failure_text(excinfo.value.result)
        return super().repr_failure(excinfo, style=style)


class LedgerItem(JudgedItem):
    """One ledger entry, measured and judged when run."""

    def __init__(self, *, kind: Kind, entry_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.entry_name = entry_name

    def runtest(self) -> None:
        state = require_state(self.config)
        ledger = state.ledger
        kind = self.kind
        keys = kind.keys(self.entry_name)
        entry = kind.entry_of(ledger.section(kind.name), self.entry_name)
        measurement: EntryMeasurement | None = None
        error = ""
        try:
            measure = measurer_of(self.kind)  # only kinds measured from the ledger are items
            measurement = measure(self.entry_name, entry, state.entry_context())
        except CouldNotJudge as failure:
            error = str(failure)
        result = judge(
            kind=kind.name,
            name=self.entry_name,
            nodeid=self.nodeid,
            line=ledger.line_of(keys),
            entry=entry,
            measurement=measurement,
            policy=state.policy,
            error=error,
        )
        record_result(self, result)
        if result.failed:
            raise EntryFailed(result)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        state = state_of(self.config)
        keys = self.kind.keys(self.entry_name)
        line = state.ledger.line_of(keys) if state is not None else None
        # pytest prints this in the failure's headline: a key is third-party text.
        return self.path, None if line is None else line - 1, inert("::".join(keys))


# --- the toll marker --------------------------------------------------------------------


def read_markers(items: Iterable[pytest.Item], *, worker: bool) -> None:
    """Check every ``@pytest.mark.toll`` and keep its budgets and capture on the item.

    Read once, at collection, so a bad value stops the run before anything executes. An
    xdist worker cannot stop the session cleanly (the controller reports a crash): there
    the item fails with the same message instead.
    """
    for item in items:
        marker = item.get_closest_marker("toll")
        if marker is None:
            continue
        try:
            item.stash[BUDGET_KEY] = marker_budget(item, marker)
            item.stash[RUN_BUDGET_KEY] = marker_budget(item, marker, "run_budget")
            if marker_capture(item, marker):
                item.stash[CAPTURE_KEY] = True
        except pytest.UsageError as error:
            if not worker:
                raise
            item.stash[MARKER_ERROR_KEY] = str(error)


def marker_budget(item: pytest.Item, marker: pytest.Mark, name: str = "budget") -> int | None:
    where = f"{item.nodeid}: @pytest.mark.toll"
    if marker.args:
        raise pytest.UsageError(f"{where}: give the budget by name, toll(budget=N)")
    unknown = sorted(set(marker.kwargs) - {"budget", "run_budget", "capture"})
    if unknown:
        raise pytest.UsageError(f"{where}: unknown argument {', '.join(unknown)}")
    budget = marker.kwargs.get(name)
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 0:
        raise pytest.UsageError(
            f"{where}({name}=…): must be a whole number of tokens >= 0, not {budget!r}"
        )
    return budget


def marker_capture(item: pytest.Item, marker: pytest.Mark) -> bool:
    capture = marker.kwargs.get("capture", False)
    if not isinstance(capture, bool):
        raise pytest.UsageError(
            f"{item.nodeid}: @pytest.mark.toll(capture=…): must be True or False, not {capture!r}"
        )
    return capture


# --- judging a test ---------------------------------------------------------------------


def judged_call(
    item: pytest.Item, meter: Toll | None, budget: int | None
) -> Generator[None, object, object]:
    """Run a measuring test's call phase (the body of the plugin's ``pytest_runtest_call``
    wrapper) and judge what it measured; a test over its budget or pin fails here."""
    if CAPTURE_KEY in item.stash and meter is not None:
        meter.capturing.start()
    try:
        outcome = yield
    except pytest.skip.Exception:
        if meter is not None:
            meter.capturing.close()
        raise
    except CouldNotJudge as error:
        # The toll fixture could not measure (a server that does not start, a missing
        # file): one clean message, as a ledger item shows it, not the fixture's frames.
        record_verdict(item, meter, budget, errored=True)
        pytest.fail(f"toll: could not measure: {inert_lines(str(error))}", pytrace=False)
    except BaseException:
        record_verdict(item, meter, budget, errored=True)
        raise
    result = record_verdict(item, meter, budget, errored=False)
    if result is not None and result.failed:
        pytest.fail(failure_text(result), pytrace=False)
    return outcome


def record_verdict(
    item: pytest.Item, meter: Toll | None, budget: int | None, *, errored: bool
) -> EntryResult | None:
    """Judge what the test measured (:func:`pytest_toll.gate.verdict.judge_test`) from what
    its meter, its marker and the ledger hold; show each captured request and the result in
    ``user_properties``, keep the result for the controller and issue the warnings."""
    state = item.config.stash.get(STATE_KEY, None)
    nodeid = item.nodeid
    entry: dict[str, Any] = {}
    if state is not None:
        entry = state.ledger.section(TESTS_KIND.name).get(nodeid) or {}
    # Stopping the capture records its largest request among the meter's records.
    captured = meter.finish_capture() if meter is not None else None
    if captured is not None:
        item.user_properties.extend(
            (REQUEST_PROPERTY, shown(request_line(request.as_dict())))
            for request in captured.requests
        )
    measurement: EntryMeasurement | None = None
    if meter is not None and meter.records:
        measurement = EntryMeasurement(meter.total, meter.method, meter.parts())
        if state is None:
            # Without --toll only the marker's budget is judged (no ledger), but JUnit XML
            # still shows what the test measured.
            item.user_properties.append((TOKENS_PROPERTY, meter.total))
    verdict = judge_test(
        nodeid,
        errored=errored,
        measurement=measurement,
        captured=captured,
        # The marker's, and those given to toll.capture(...).
        budgets=(budget, meter.budget if meter is not None else None),
        run_budgets=(
            item.stash.get(RUN_BUDGET_KEY, None),
            meter.run_budget if meter is not None else None,
        ),
        entry=entry,
        line=state.ledger.line_of(TESTS_KIND.keys(nodeid)) if state is not None and entry else None,
        policy=state.policy if state is not None else Policy(),
    )
    for warning in verdict.warnings:
        item.warn(pytest.PytestWarning(warning))
    if verdict.result is not None and state is not None:
        record_result(item, verdict.result)
    return verdict.result


def record_result(item: pytest.Item, result: EntryResult) -> None:
    """Keep ``result`` for the controller, and show its gist in JUnit XML's properties.

    The whole result (findings, parts) travels on the call report (see the plugin's
    ``pytest_runtest_makereport``); the properties hold a number and one compact JSON object.
    """
    item.stash[RESULT_KEY] = dict(result.as_dict())
    if result.measured is not None:
        item.user_properties.append((TOKENS_PROPERTY, result.measured))
    gist = {
        "outcome": result.outcome,
        "failed": result.failed,
        "measured": result.measured,
        "pin": result.pin,
        "budget": result.budget,
        "method": result.method,
    }
    item.user_properties.append((RESULT_PROPERTY, json.dumps(gist, separators=(",", ":"))))


# --- stale entries ----------------------------------------------------------------------


class StaleSection(pytest.Collector):
    """``toll.yaml::stale``: the parent of stale entries' items (made after collection)."""

    def collect(self) -> Iterable[pytest.Item | pytest.Collector]:
        return []


class StaleItem(JudgedItem):
    """A ``tests:`` entry whose test no longer exists, as an item of its own.

    It fails under ``--toll-strict`` (and passes otherwise, with the entry listed as stale
    in the summary), so ``-rA``, JUnit XML and every CI viewer count it with the tests.
    """

    def __init__(self, *, result: EntryResult, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.result = result

    def runtest(self) -> None:
        record_result(self, self.result)
        if self.result.failed:
            raise EntryFailed(self.result)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        line = self.result.line
        return self.path, None if line is None else line - 1, f"stale {inert(self.result.label)}"


def gone_tests(
    ledger_tests: Iterable[str],
    nodeids: set[str],
    collected_files: set[str],
    rootdir: Path,
) -> list[str]:
    """The ledger's test node ids whose test no longer exists.

    Gone: its file is not on disk, or its file was collected without error and holds no
    such test. A test that exists but did not run — skipped, errored, excluded by
    ``--ignore``, in a file that failed to import, on a crashed xdist worker — is not gone:
    its pin is kept (the run is partial for it).
    """
    gone = []
    for nodeid in ledger_tests:
        if nodeid in nodeids:
            continue
        file_part = nodeid.split("::", 1)[0]
        if not (rootdir / file_part).is_file() or ("::" in nodeid and file_part in collected_files):
            gone.append(nodeid)
    return gone


def stale_items(config: pytest.Config, items: Iterable[pytest.Item]) -> list[pytest.Item]:
    """One failing-under-strict item per gone ``tests:`` entry, under ``toll.yaml::stale``.

    Made only when the ledger itself was collected (a run of named test files checks no
    ledger entry), collection saw every file it was asked to (not under ``--lf``, which
    skips files it need not run), and the run is not one shard of a split suite.
    """
    state = state_of(config)
    ledger_file = config.stash.get(LEDGER_FILE_KEY, None)
    if state is None or ledger_file is None or getattr(config.option, "lf", False):
        return []
    if state.shard is not None:
        return []  # a shard sees part of the suite: `toll merge` finds gone tests over all
    ledger = state.ledger
    section = ledger.section(TESTS_KIND.name)
    gone = gone_tests(
        (str(name) for name in section),
        {item.nodeid for item in items},
        state.collected_files,
        config.rootpath,
    )
    if not gone:
        return []
    parent = StaleSection.from_parent(ledger_file, name="stale")
    made: list[pytest.Item] = []
    for nodeid in gone:
        keys = TESTS_KIND.keys(nodeid)
        result = stale_result(
            TESTS_KIND.name,
            nodeid,
            nodeid,
            ledger.line_of(keys),
            TESTS_KIND.entry_of(section, nodeid),
            state.policy,
        )
        made.append(StaleItem.from_parent(parent, name=inert(result.label), result=result))
    return made
