"""The pytest adapter. Hooks in lifecycle order, each delegating to the core.

Without ``--toll`` this registers the options, the ``toll`` marker and the ``toll``
fixture, and holds a test to its own ``toll(budget=N)`` (the test's assertion, as the
README's table says); nothing else: no ledger read, no tokenizer import unless a test
measures. With ``--toll`` the
ledger's entries become items, tests' measurements are judged, results travel to the
controller on each report's ``user_properties`` as plain dicts (the xdist path and the
serial path are the same), and only the controller writes the ledger and the reports.
"""

from __future__ import annotations

from collections.abc import Generator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_toll._keys import (
    BUDGET_KEY,
    CAPTURE_KEY,
    MARKER_ERROR_KEY,
    METER_KEY,
    REPORT_ATTRIBUTE,
    RESULT_KEY,
    RUN_BUDGET_KEY,
    STATE_KEY,
    require_state,
)
from pytest_toll.core.settings import SETTINGS, Setting
from pytest_toll.report.outputs import OUTPUTS

if TYPE_CHECKING:
    from pytest_toll.fixture import Toll
    from pytest_toll.gate.session import TollState
    from pytest_toll.gate.settings import Sources

# One of two modules that import the package's own modules inside functions (the other is
# report.outputs, whose table this one reads, as it reads core.settings'): the gate, the
# items, the fixture's object and the reports load the tokenizer's and the jobs' modules, so
# they are imported only once ``--toll`` is on (or the ``toll`` fixture or marker is used),
# and ``pytest`` without ``--toll`` pays for none of them.


# --- options ----------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("toll", "context-token tolls (pytest-toll)")
    group.addoption(
        "--toll",
        action="store_true",
        default=False,
        help="measure and gate context-token costs against the toll.yaml ledger "
        "(every --toll-* option below turns it on too)",
    )
    for setting in SETTINGS.values():
        _add_option(group, setting)
    for output in OUTPUTS.values():
        group.addoption(output.flag, metavar="PATH", help=output.help)
    for name, ini_type, help_text in _ini_options():
        parser.addini(f"toll_{name}", help_text, type=ini_type, default=None)  # type: ignore[arg-type]


def _add_option(group: pytest.OptionGroup, setting: Setting) -> None:
    if setting.metavar is not None:
        group.addoption(setting.flag, metavar=setting.metavar, help=setting.help)
    elif setting.ini_help is not None:
        # A flag with an ini twin is None until given, so that the ini can set it.
        group.addoption(setting.flag, action="store_const", const="true", help=setting.help)
    else:
        group.addoption(setting.flag, action="store_true", default=False, help=setting.help)


#: Whole numbers in ini are typed where pytest can type them (8.4 and later); older pytest
#: reads them as strings and the setting's parser takes either, the gate naming the source
#: of a bad one.
_INT = "int" if pytest.version_tuple >= (8, 4) else "string"


def _ini_options() -> list[tuple[str, str, str]]:
    """Every ``toll_*`` ini twin (name, pytest's ini type, help): the settings', then one per
    report output."""
    settings = [
        (name, _INT if setting.ini_type == "int" else setting.ini_type, setting.ini_help)
        for name, setting in SETTINGS.items()
        if setting.ini_help is not None
    ]
    outputs = [(name, "string", f"{output.help} to this path") for name, output in OUTPUTS.items()]
    return [*settings, *outputs]


def _implying_options() -> list[str]:
    """Every ``--toll-*`` option that turns ``--toll`` on when given on the command line (as
    syrupy's ``--snapshot-update`` does), so ``pytest --toll-update`` is never a silent
    no-op. Ini values do not: an ini file is read by every run."""
    settings = [name for name, setting in SETTINGS.items() if setting.implies_toll]
    return [f"toll_{name}" for name in (*settings, *OUTPUTS)]


# --- configuration ----------------------------------------------------------------------


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "toll(budget=N, run_budget=M, capture=False): fail the test when the tokens it measures "
        "with the toll fixture exceed N; capture=True measures the LLM requests the test sends "
        "(budget grades the largest, run_budget the sum of them all)",
    )
    if config.option.help:
        return
    if not config.getoption("toll"):
        if not any(config.getoption(name) for name in _implying_options()):
            return
        config.option.toll = True
    from pytest_toll.core.errors import UsageError
    from pytest_toll.core.inert import inert_lines
    from pytest_toll.gate.session import start

    try:
        state = start(
            _sources(config),
            update=bool(config.getoption("toll_update")),
            allow_increase=bool(config.getoption("toll_allow_increase")),
            shard_option=config.getoption("toll_shard"),
            splits=getattr(config.option, "splits", None),
            group=getattr(config.option, "group", None),
            worker=hasattr(config, "workerinput"),
        )
    except UsageError as error:
        # It may quote the ledger's keys or a server's words.
        raise pytest.UsageError(inert_lines(str(error))) from None
    config.stash[STATE_KEY] = state
    config.pluginmanager.register(TollSession(config), "toll-session")
    if state.ledger.exists:
        _collect_ledger_too(config, state.ledger.path, shard=state.shard is not None)


def _sources(config: pytest.Config) -> Sources:
    """Every setting's command-line and ini values, as the gate resolves them."""
    from pytest_toll.core.errors import UsageError
    from pytest_toll.gate.settings import Sources

    # The settings given by a value (on the command line and in ini), and the outputs.
    names = [*(name for name, setting in SETTINGS.items() if setting.ini_help), *OUTPUTS]
    inipath = config.inipath
    ini: dict[str, Any] = {}
    for name in names:
        try:
            value = config.getini(f"toll_{name}")
        except (TypeError, ValueError, pytest.UsageError) as error:
            # pytest's own message for a typed ini value does not say which option it is.
            where = str(inipath) if inipath else "the ini file"
            raise UsageError(f"toll_{name} in {where}: {error}") from None
        # Unset is None on current pytest and [] on pytest before 8 (for every typed ini).
        ini[name] = "" if value is None or value == [] else value
    return Sources(
        cli={name: config.getoption(f"toll_{name}") for name in names},
        ini=ini,
        ini_name=str(inipath) if inipath else "the ini file",
        ini_dir=inipath.parent if inipath else config.rootpath,
        invocation_dir=config.invocation_params.dir,
        rootdir=config.rootpath,
        # Only paths the user typed: without any, config.args holds testpaths or the rootdir.
        args=tuple(config.args) if config.args_source == pytest.Config.ArgsSource.ARGS else (),
    )


def _collect_ledger_too(config: pytest.Config, ledger: Path, *, shard: bool) -> None:
    """Add the ledger to a collection of directories (testpaths, rootdir, ``pytest tests/``)
    that does not reach it.

    Files and node ids as arguments target particular tests: then the ledger runs only when
    named (``pytest --toll toll.yaml``) or inside a named directory — except on a shard, whose
    node ids are its part of the suite: the shard decides which of the ledger's items it runs.
    """
    base = config.invocation_params.dir
    paths = [(base / arg.split("::")[0]).resolve() for arg in config.args]
    if (
        not shard
        and config.args_source == pytest.Config.ArgsSource.ARGS
        and not all("::" not in arg and path.is_dir() for arg, path in zip(config.args, paths))
    ):
        return
    target = ledger.resolve()
    if any(target == path or path in target.parents for path in paths):
        return
    config.args.append(str(ledger))


# --- collection -------------------------------------------------------------------------


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    state = parent.config.stash.get(STATE_KEY, None)
    if state is None or not state.ledger.exists or file_path != state.ledger.path:
        return None
    from pytest_toll.items import LedgerFile

    ledger_file: pytest.Collector = LedgerFile.from_parent(parent, path=file_path)
    return ledger_file


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Under ``--toll``, a folder holding SKILL.md is the agent's data, not a test suite.

    pytest run without arguments collects the whole tree, and skills ship templates named
    like tests (``references/test_template.py`` with ``{pkg_name}`` placeholders) that fail
    to import — a repository with no Python tests failed ``pytest --toll`` on files it never
    meant as tests. A skill folder (or a path in it) named on the command line or in
    ``testpaths`` is still collected.
    """
    if STATE_KEY not in config.stash or not (collection_path / "SKILL.md").is_file():
        return None
    base = config.invocation_params.dir
    for arg in config.args:
        named = (base / arg.split("::")[0]).resolve()
        if named == collection_path.resolve() or collection_path.resolve() in named.parents:
            return None
    return True


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    marked = [item for item in items if item.get_closest_marker("toll") is not None]
    if marked:
        from pytest_toll.items import read_markers

        read_markers(marked, worker=hasattr(config, "workerinput"))


# --- the fixture and the per-test gate --------------------------------------------------


@pytest.fixture
def toll(request: pytest.FixtureRequest) -> Iterator[Toll]:
    """Measure inside a test; the total is judged against ``toll(budget=N)`` and the ledger."""
    meter = _meter(request.node)
    yield meter
    meter.capturing.close()  # a capture never outlives its test


def _meter(item: pytest.Item) -> Toll:
    """The test's meter (made by the ``toll`` fixture, or here for ``toll(capture=True)``)."""
    meter = item.stash.get(METER_KEY, None)
    if meter is not None:
        return meter
    from pytest_toll.fixture import Toll

    state = item.config.stash.get(STATE_KEY, None)
    if state is None:
        meter = Toll(item.nodeid)
    else:
        meter = Toll(item.nodeid, state.settings.window, state.catalogue)
    item.stash[METER_KEY] = meter
    return meter


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    budget = item.stash.get(BUDGET_KEY, None)
    meter = item.stash.get(METER_KEY, None)
    run_budget = item.stash.get(RUN_BUDGET_KEY, None)
    if meter is None and budget is None and run_budget is None and CAPTURE_KEY not in item.stash:
        if MARKER_ERROR_KEY in item.stash:
            pytest.fail(item.stash[MARKER_ERROR_KEY], pytrace=False)
        return (yield)
    from pytest_toll.items import judged_call

    if CAPTURE_KEY in item.stash:
        meter = _meter(item)
    return (yield from judged_call(item, meter, budget))


# --- the session (registered only with --toll) ------------------------------------------


class TollSession:
    """The ``--toll`` session's hooks, registered in ``pytest_configure`` (not otherwise).

    On the controller it gathers the results every report carries and, at the end, judges
    stale entries, writes the ratchet and the reports; on an xdist worker it only tells the
    controller how many items were deselected (so the controller knows a run is partial).
    """

    def __init__(self, config: pytest.Config) -> None:
        self.config = config

    @property
    def state(self) -> TollState:
        return require_state(self.config)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.passed:
            self.state.collected_files.add(report.nodeid)

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        # Before -k, -m and --deselect drop items: a deselected test still exists.
        from pytest_toll.items import stale_items

        stale = stale_items(self.config, items)
        if stale and stale[0].parent is not None:
            items.extend(stale)
            # Reported as collected, so "collected N items" counts what runs.
            collected: list[pytest.Item | pytest.Collector] = list(stale)
            self.config.hook.pytest_collectreport(
                report=pytest.CollectReport(stale[0].parent.nodeid, "passed", None, collected)
            )

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.state.deselected += len(items)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        result = item.stash.get(RESULT_KEY, None)
        if result is not None and report.when == "call":
            # xdist sends a report's extra attributes to the controller with it.
            setattr(report, REPORT_ATTRIBUTE, result)
        return report

    # A second implementation of the same hook (the first adds stale items before -k runs);
    # pytest only reads methods named pytest_*, specname names the hook.
    @pytest.hookimpl(wrapper=True, specname="pytest_collection_modifyitems")
    def pytest_collection_modifyitems_of_a_shard(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> Iterator[None]:
        # After every other selection (-k, a splitter): with --toll-shard, only shard 1
        # measures the ledger's items, so each is measured once across the matrix.
        result = yield
        shard = self.state.shard
        if shard is not None and shard.measures_ledger_items is False:
            ledger = self.state.ledger.path
            left_out = [item for item in items if item.path == ledger]
            if left_out:
                items[:] = [item for item in items if item.path != ledger]
                config.hook.pytest_deselected(items=left_out)
        return result

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        if not self.state.worker:
            self.state.collected.update(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        self.state.collected.update(ids)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when != "call" or self.state.worker:
            return
        result = getattr(report, REPORT_ATTRIBUTE, None)
        if isinstance(result, dict):
            self.state.add_result(result)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", None) or {}
        self.state.deselected += int(output.get("toll_deselected", 0))

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        state = self.state
        if state.worker:
            workeroutput: dict[str, Any] = getattr(self.config, "workeroutput", {})
            workeroutput["toll_deselected"] = state.deselected
            return
        if exitstatus == pytest.ExitCode.USAGE_ERROR or self.config.option.collectonly:
            return
        from pytest_toll.gate.session import finish, ledger_label, write_reports

        report = finish(
            state,
            partial=_partial(session, exitstatus),
            interrupted=exitstatus == pytest.ExitCode.INTERRUPTED,
            ledger_name=ledger_label(state.ledger, self.config.rootpath),
        )
        write_reports(state, report)
        if state.ledger_error is not None:
            # A failed ledger write is an error of the run, never a quiet exit 0.
            session.exitstatus = pytest.ExitCode.USAGE_ERROR
        if report.failed and session.exitstatus == pytest.ExitCode.OK:
            # Every failing entry is an item that failed; this only guards the verdict.
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        state = self.state
        if state.worker or state.report is None:
            return
        try:
            from pytest_toll.core.inert import inert_lines
            from pytest_toll.core.secrets import scrub
            from pytest_toll.report.terminal import summary_lines

            def write(text: str, **markup: bool) -> None:
                # Every line scrubbed and inert, whatever a renderer or a warning quoted.
                terminalreporter.write_line(inert_lines(scrub(text)), **markup)

            terminalreporter.section("toll summary")
            for text, colour in summary_lines(state.report):
                write(text, **({colour: True} if colour else {}))
            for warning in state.warnings:
                write(f"toll warning: {warning}", yellow=True)
            if state.ledger_error is not None:
                write(f"toll error: {state.ledger_error}", red=True)
        except Exception as error:  # never raise from the terminal summary
            terminalreporter.write_line(
                f"toll warning: could not render the summary: {type(error).__name__}"
            )


def _only_the_ledger(config: pytest.Config) -> bool:
    """Every argument names the ledger file itself (``pytest --toll toll.yaml``): all of its
    entries run, so naming it selects nothing. Test files are then not collected, and a
    ``tests:`` entry is stale only when its file is gone (:func:`items.gone_tests`)."""
    ledger = require_state(config).ledger.path.resolve()
    base = config.invocation_params.dir
    return bool(config.args) and all(
        "::" not in arg and (base / arg).resolve() == ledger for arg in config.args
    )


def _partial(session: pytest.Session, exitstatus: int) -> bool:
    """Whether some tests were left out: then nothing is stale and nothing is removed."""
    config = session.config
    option = config.option
    state = require_state(config)
    # A shard's node ids and deselection are its part of the suite (``toll merge`` unions
    # them); only a selection within it (-k, -m, --lf) or a stop makes it partial.
    selected = state.shard is None and bool(
        (config.args_source == pytest.Config.ArgsSource.ARGS and not _only_the_ledger(config))
        or getattr(option, "deselect", None)
        or state.deselected
    )
    return bool(
        selected
        or getattr(option, "keyword", "")
        or getattr(option, "markexpr", "")
        or getattr(option, "lf", False)
        or getattr(option, "stepwise", False)
        or session.shouldfail
        or session.shouldstop
        or exitstatus == pytest.ExitCode.INTERRUPTED
    )
