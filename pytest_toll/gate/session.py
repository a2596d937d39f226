"""One ``--toll`` session, without pytest: its start, its state, stale entries, the finish.

``start`` resolves the settings and the shard, opens the ledger (its path found once, here)
and returns the session's :class:`TollState`. ``finish`` turns the collected results into
the session report: it lists the entries nothing measured and plans and writes the ratchet
(the controller alone calls it); ``write_reports`` then writes the report files the settings
ask for (``report.outputs``) and, on GitHub Actions, the annotations and step summary.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import current_day
from pytest_toll.core.kinds import KINDS, TESTS_KIND
from pytest_toll.core.models import Catalogue
from pytest_toll.gate.ledger import Ledger, ledger_from_text, rewrite_ledger
from pytest_toll.gate.ledger.history import trend
from pytest_toll.gate.ledger.read import dotted
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.ratchet import Policy, part_pins_written, plan_update
from pytest_toll.gate.settings import (
    Settings,
    Sources,
    ledger_catalogue,
    open_ledger,
    resolve_settings,
)
from pytest_toll.gate.shards import Shard, ledger_sha256, resolve_shard
from pytest_toll.report.data import CollectedDict, EntryResult, PricingDict, SessionReport
from pytest_toll.report.outputs import History, write_outputs
from pytest_toll.report.pricing import price_report


@dataclass
class TollState:
    """What one ``--toll`` session holds: settings, ledger, and (controller) the results."""

    settings: Settings
    ledger: Ledger
    worker: bool = False
    results: dict[str, EntryResult] = field(default_factory=dict)
    deselected: int = 0
    #: Node ids of the files (modules) whose collection succeeded: a ledger test missing
    #: from one of them is gone, not merely left out.
    collected_files: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    #: Why ``--toll-update`` could not write the ledger: an error of the run, not a warning.
    ledger_error: str | None = None
    report: SessionReport | None = None
    #: Which shard of a split suite this run is (``--toll-shard``, pytest-split).
    shard: Shard | None = None
    #: The sha256 of the ledger's bytes as loaded (None: no ledger file).
    ledger_sha256: str | None = None
    #: Node ids collected after deselection (controller: from every xdist worker).
    collected: set[str] = field(default_factory=set)

    @property
    def policy(self) -> Policy:
        return self.settings.policy

    @cached_property
    def catalogue(self) -> Catalogue | None:
        """The ledger's model catalogue, for ``toll.call``; None when it adds no models."""
        if not self.ledger.data.get("models"):
            return None
        return ledger_catalogue(self.ledger)

    def entry_context(self) -> EntryContext:
        data = self.ledger.data
        return EntryContext(
            root=self.ledger.path.parent,
            window=self.settings.window,
            rules=data.get("rules") or {},
            limits=data.get("limits") or {},
            duplicate_decisions=tuple(self.ledger.duplicate_decisions),
            source=str(self.ledger.path),
            model=data.get("model"),
            catalogue=self.catalogue,
            servers=data.get("servers") or {},
            hosts=tuple(data.get("hosts") or ()),
        )

    def add_result(self, data: Mapping[str, object]) -> None:
        result = EntryResult.from_dict(data)
        self.results[result.nodeid] = result


def start(
    sources: Sources,
    *,
    update: bool,
    allow_increase: bool,
    shard_option: str | None = None,
    splits: int | None = None,
    group: int | None = None,
    worker: bool = False,
) -> TollState:
    """The state of a ``--toll`` session about to run; a bad setting, shard, ledger or
    ``models:`` section is a :class:`UsageError` here, before anything is collected.

    ``shard_option`` is ``--toll-shard``; ``splits`` and ``group`` are pytest-split's.
    """
    shard = resolve_shard(shard_option, splits, group)
    if shard is not None and update:
        raise UsageError(
            "--toll-update on a shard: update once from all shards with `toll merge --update`"
        )
    ledger = open_ledger(sources, update=update)
    settings = resolve_settings(sources, ledger, update=update, allow_increase=allow_increase)
    state = TollState(settings, ledger, worker=worker, shard=shard)
    state.ledger_sha256 = ledger_sha256(ledger.path) if ledger.exists else None
    state.catalogue  # noqa: B018 -- a broken models: section is a usage error up front
    current_day()  # a TOLL_TODAY that is not a day too, even before an acknowledgement reads it
    return state


def ledger_label(ledger: Ledger, rootdir: Path) -> str:
    """The ledger as node ids and the report name it: relative to the rootdir when inside."""
    try:
        return str(ledger.path.relative_to(rootdir))
    except ValueError:
        return str(ledger.path)


def unmeasured_entries(state: TollState) -> list[str]:
    """Labels of the ledger's entries no result covers: deselected, skipped, errored before
    measuring, not collected, or on a crashed xdist worker. Their pins are kept."""
    return ledger_unmeasured_entries(state.ledger, state.results.values())


def ledger_unmeasured_entries(ledger: Ledger, results: Iterable[EntryResult]) -> list[str]:
    """Labels of the entries of ``ledger`` none of ``results`` covers (the session's and the
    shard merge's one definition)."""
    measured = {(result.kind, result.name) for result in results}
    unmeasured = []
    for kind in KINDS.values():
        section = ledger.data.get(kind.name)
        if not isinstance(section, Mapping):
            continue
        for name in kind.entry_names(section):
            if (kind.name, name) not in measured:
                unmeasured.append(kind.name if kind.whole_section else f"{kind.name}::{name}")
    return unmeasured


#: What an interrupted ``--toll-update`` says in the summary.
INTERRUPTED_NOTE = (
    "the run was interrupted: the ledger was not updated (--toll-update writes only after "
    "a run that was not interrupted)"
)


def finish(
    state: TollState, *, partial: bool, ledger_name: str, interrupted: bool = False
) -> SessionReport:
    """Build the report; with ``--toll-update``, write the ratchet (controller only) unless
    the run was ``interrupted`` (Ctrl-C, ``pytest.exit``, a worker's KeyboardInterrupt).

    Stale entries (a ``tests:`` entry whose test is gone) arrive as results of their own
    items; an entry nothing measured is listed as unmeasured and its pins stay as they are.
    """
    settings = state.settings
    report = SessionReport(
        ledger=ledger_name,
        window=settings.window,
        tolerance=settings.tolerance,
        update=settings.update,
        allow_increase=settings.allow_increase,
        strict=settings.strict,
        partial=partial,
        entries=list(state.results.values()),
        unmeasured=unmeasured_entries(state),
        collected=collected_of(state.collected, ledger_name),
        ledger_sha256=state.ledger_sha256,
        shard=None if state.shard is None else state.shard.as_dict(),
    )
    report.pricing = ledger_pricing(report, state.ledger, state.catalogue)
    if settings.update and interrupted:
        # An interrupt lands anywhere, even between a test's measurement and its judgement;
        # what ran is not a run the user chose to ratchet, so no pin moves.
        state.warnings.append(INTERRUPTED_NOTE)
    elif settings.update:
        state.ledger_error = write_ratchet(report, state.ledger, settings.policy)
    state.report = report
    return report


def write_reports(state: TollState, report: SessionReport) -> None:
    """The report files the settings ask for and, on GitHub Actions, the annotations and the
    step summary. Nothing here may hide the gate's verdict: a failure is a warning."""
    # A shard's annotations and step summary would judge part of the suite: `toll merge`
    # writes them once, from the merged report.
    github = os.environ.get("GITHUB_ACTIONS") == "true" and state.shard is None
    if not (github or state.settings.outputs):
        return
    try:
        write_outputs(
            report.as_dict(),
            state.settings.outputs,
            github=github,
            ledger_path=state.ledger.path,
            warn=state.warnings.append,
            history=lambda: ledger_history(state.ledger.path),
        )
    except Exception as error:  # a report file must never hide the gate's verdict
        state.warnings.append(f"could not write the CI outputs: {error}")


def ledger_history(path: Path) -> History:
    """The pins' history for a renderer that charts it; a ledger outside git has none."""
    try:
        return trend(path).as_dict()
    except CouldNotJudge:
        return None


def ledger_pricing(
    report: SessionReport, ledger: Ledger, catalogue: Catalogue | None = None
) -> PricingDict | None:
    """The fixed cost in USD for the ledger's ``model:``, when the catalogue (with the
    ledger's ``models:``) prices its input; None without a model or a price."""
    name = ledger.data.get("model")
    if not isinstance(name, str) or not name:
        return None
    model = (catalogue or ledger_catalogue(ledger)).find(name)
    return None if model is None else price_report(report, model)


def collected_of(nodeids: Iterable[str], ledger_name: str) -> CollectedDict:
    """Collected node ids: Python tests, and the items of the ledger's entries
    (``toll.yaml::servers::…``). Items the gate derives (``toll.yaml::stale::…``) are
    neither: a merge of shards derives them again over the union."""
    ledger_items: list[str] = []
    tests: list[str] = []
    for nodeid in set(nodeids):
        parts = nodeid.split("::")
        if parts[0] != ledger_name:
            tests.append(nodeid)
        elif len(parts) > 1 and parts[1] in KINDS:
            ledger_items.append(nodeid)
    return {"tests": sorted(tests), "ledger_items": sorted(ledger_items)}


def _loads_as_ledger(path: Path) -> Callable[[str], object]:
    """A check of a rewrite's text by the loader every later run uses: an update built
    from a forged or broken report must not leave a ledger those runs reject."""

    def check(text: str) -> object:
        try:
            return ledger_from_text(text, path, allow_duplicate_decisions=True)
        except UsageError as error:
            raise UsageError(
                f"the new ledger would not load, so it was not written: {error}"
            ) from None

    return check


def write_ratchet(report: SessionReport, ledger: Ledger, policy: Policy) -> str | None:
    """Plan the update of a judged report and rewrite ``ledger`` once (locked, atomic,
    comments kept); returns why it could not be written, or None."""
    updates = plan_update(
        report.entries,
        policy,
        ledger_tests=ledger.section(TESTS_KIND.name),
    )
    if not updates:
        return None
    try:
        # Re-read under the ledger's lock; ``base`` tells a concurrent run's changes.
        rewrite = rewrite_ledger(
            ledger.path, updates, base=ledger.data, check=_loads_as_ledger(ledger.path)
        )
    except (UsageError, OSError) as error:
        for entry in report.entries:
            entry.ratchet = None
        return f"the ledger was not updated: {error}"
    report.ledger_written = rewrite.written
    report.ledger_removed = [dotted(keys) for keys in rewrite.removed]
    if rewrite.written:
        report.ledger_pins = part_pins_written(report.entries, updates)
    return None
