"""One ``--toll`` session, without pytest: its state, stale entries, and the finish.

``finish`` turns the collected results into the session report: it adds stale entries on a
full run, plans and writes the ratchet (the controller alone calls it), and writes the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from pytest_toll.core.errors import UsageError
from pytest_toll.core.models import Catalogue
from pytest_toll.gate.kinds import KINDS, TESTS_KIND
from pytest_toll.gate.ledger import Ledger, rewrite_ledger, write_atomically
from pytest_toll.gate.ledger_read import dotted
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.ratchet import Policy, plan_update, stale_result
from pytest_toll.gate.settings import Settings, ledger_catalogue
from pytest_toll.gate.shards import Shard
from pytest_toll.report.model import CollectedDict, EntryResult, SessionReport


@dataclass
class TollState:
    """What one ``--toll`` session holds: settings, ledger, and (controller) the results."""

    settings: Settings
    ledger: Ledger
    worker: bool = False
    results: dict[str, EntryResult] = field(default_factory=dict)
    deselected: int = 0
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
        )

    def add_result(self, data: Mapping[str, object]) -> None:
        result = EntryResult.from_dict(data)
        self.results[result.nodeid] = result


def stale_entries(state: TollState) -> list[EntryResult]:
    """Ledger entries no result covers (only meaningful on a full run)."""
    return ledger_stale_entries(state.ledger, state.results.values(), state.policy)


def ledger_stale_entries(
    ledger: Ledger, results: Iterable[EntryResult], policy: Policy
) -> list[EntryResult]:
    """Entries of ``ledger`` none of ``results`` covers (the session's and the shard merge's
    one definition of stale)."""
    measured = {(result.kind, result.name) for result in results}
    stale = []
    for kind in KINDS.values():
        section = ledger.data.get(kind.name)
        if not isinstance(section, Mapping):
            continue
        for name in kind.entry_names(section):
            if (kind.name, name) in measured:
                continue
            keys = kind.keys(name)
            entry = kind.entry_of(section, name)
            nodeid = name if kind.python_tests else "::".join((ledger.path.name, *keys))
            stale.append(stale_result(kind.name, name, nodeid, ledger.line_of(keys), entry, policy))
    return stale


def finish(state: TollState, *, partial: bool, ledger_name: str) -> SessionReport:
    """Build the report; with ``--toll-update``, write the ratchet (controller only)."""
    settings = state.settings
    results = list(state.results.values())
    if not partial and state.shard is None:  # a shard alone never sees the whole suite
        results.extend(stale_entries(state))
    report = SessionReport(
        ledger=ledger_name,
        window=settings.window,
        tolerance=settings.tolerance,
        update=settings.update,
        allow_increase=settings.allow_increase,
        strict=settings.strict,
        partial=partial,
        entries=results,
        collected=collected_of(state.collected, ledger_name),
        ledger_sha256=state.ledger_sha256,
        shard=None if state.shard is None else state.shard.as_dict(),
    )
    if settings.update:
        state.ledger_error = write_ratchet(report, state.ledger, settings.policy)
    state.report = report
    if settings.json is not None:
        try:
            write_json(report, settings.json)
        except OSError as error:
            state.warnings.append(f"could not write the JSON report {settings.json}: {error}")
    return report


def collected_of(nodeids: Iterable[str], ledger_name: str) -> CollectedDict:
    """Collected node ids, the ledger's own items (``toll.yaml::…``) apart from tests."""
    ledger_items = sorted(nodeid for nodeid in nodeids if nodeid.split("::")[0] == ledger_name)
    tests = sorted(set(nodeids) - set(ledger_items))
    return {"tests": tests, "ledger_items": ledger_items}


def write_ratchet(report: SessionReport, ledger: Ledger, policy: Policy) -> str | None:
    """Plan the update of a judged report and rewrite ``ledger`` once (locked, atomic,
    comments kept); returns why it could not be written, or None."""
    updates = plan_update(
        report.entries,
        policy,
        ledger_tests=ledger.section(TESTS_KIND.name),
        full_run=not report.partial,
    )
    if not updates:
        return None
    try:
        # Re-read under the ledger's lock; ``base`` tells a concurrent run's changes.
        rewrite = rewrite_ledger(ledger.path, updates, base=ledger.data)
    except (UsageError, OSError) as error:
        for entry in report.entries:
            entry.ratchet = None
        return f"the ledger was not updated: {error}"
    report.ledger_written = rewrite.written
    report.ledger_removed = [dotted(keys) for keys in rewrite.removed]
    return None


def write_json(report: SessionReport, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.as_dict(), indent=2, ensure_ascii=False) + "\n"
    write_atomically(path, text)
