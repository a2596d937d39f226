"""The gate's half of the kinds table: which function measures each ledger kind, and how
``toll init`` finds each kind it writes.

The kinds' plain data (names, pin keys, gated parts, fixed cost, order) is
:mod:`pytest_toll.core.kinds`, which the report reads without loading a measurer. Here each
kind measured from the ledger is paired with its measurer (:data:`MEASURERS`; the ``tests``
kind has none: its entries are measured by the tests themselves), and each kind ``toll init``
writes has one :class:`Finder` row (:data:`FINDERS`): its finder over the one walk of the tree
(:mod:`pytest_toll.gate.discovery`), how a found thing becomes a ledger entry once measured,
and the comment above its section. ``toll init`` measures what it found with the kind's
measurer (:func:`measurer_of`), so its pins are what the first gate run measures.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.kinds import EXECUTED, Kind, KindName
from pytest_toll.gate import discovery
from pytest_toll.gate.measurement import EntryContext, EntryMeasurement
from pytest_toll.gate.measurers import (
    SKILL_LEVELS,
    measure_agents_entry,
    measure_calls_entry,
    measure_commands_entry,
    measure_hosts_entry,
    measure_memory_entry,
    measure_plugins_entry,
    measure_servers_entry,
    measure_skills_entry,
    measure_transcripts_entry,
)
from pytest_toll.transcripts.decisions import SHAPES_TO_DECIDE, initial_settings
from pytest_toll.transcripts.scan import ReadOptions, scan

EntryMeasurer = Callable[[str, Mapping[str, Any], EntryContext], EntryMeasurement]

#: The measurer of every kind whose entries are ledger items.
MEASURERS: dict[KindName, EntryMeasurer] = {
    "servers": measure_servers_entry,
    "skills": measure_skills_entry,
    "memory": measure_memory_entry,
    "agents": measure_agents_entry,
    "commands": measure_commands_entry,
    "plugins": measure_plugins_entry,
    "hosts": measure_hosts_entry,
    "calls": measure_calls_entry,
    "transcripts": measure_transcripts_entry,
}


def measurer_of(kind: Kind) -> EntryMeasurer:
    """The measurer of a kind measured from the ledger (a KeyError for ``tests``)."""
    return MEASURERS[kind.name]


# --- how toll init writes what it found -----------------------------------------------------

#: The entry ``toll init`` writes: the entry it measured, that measurement, and the budget
#: it gives the entry (the measured total with headroom).
EntryBuilder = Callable[[Mapping[str, Any], EntryMeasurement, int], dict[str, Any]]


def pinned_total(
    entry: Mapping[str, Any], measured: EntryMeasurement, budget: int
) -> dict[str, Any]:
    """A server: its total pinned and gated, each tool's pin beside it."""
    return {**entry, "budget": budget, "pin": measured.total, "tools": dict(measured.parts)}


def pinned_levels(
    entry: Mapping[str, Any], measured: EntryMeasurement, budget: int
) -> dict[str, Any]:
    """A skill: its three loading levels pinned, each gated, and ``executed`` when it runs
    scripts: the gate gates every part it measures, so init pins every one of them (an
    unpinned part would grow freely until an update pinned it)."""
    levels = {level: int(measured.parts[level]) for level in SKILL_LEVELS}
    if EXECUTED in measured.parts:
        levels[EXECUTED] = int(measured.parts[EXECUTED])
    pinned: dict[str, Any] = {**entry, "budget": budget, "pin": levels}
    # Each file behind references and executed pinned too: a regression names the file.
    files = {part: dict(paths) for part, paths in measured.files.items() if paths}
    if files:
        pinned["files"] = files
    return pinned


def pinned_parts(
    entry: Mapping[str, Any], measured: EntryMeasurement, budget: int
) -> dict[str, Any]:
    """Every part pinned and gated (memory files, subagent and command levels, plugin
    components)."""
    return {**entry, "budget": budget, "pin": dict(measured.parts)}


def unpinned(entry: Mapping[str, Any], measured: EntryMeasurement, budget: int) -> dict[str, Any]:
    """The transcripts section: no token pin; the settings its entry was made with."""
    return dict(entry)


def settle_transcripts(entry: Mapping[str, Any], root: Path) -> dict[str, Any]:
    """The transcripts section from a scan of its roots: the decision threshold and the
    waste-ratio pin that today's history passes, the heaviest shapes set to ``watch``."""
    roots = [str(folder) for folder in entry["roots"]]
    report = scan([root / folder for folder in roots], ReadOptions())
    threshold, pin = initial_settings([row.ok_tokens for row in report.shapes], report.waste_ratio)
    heaviest = sorted(report.shapes, key=lambda row: -row.ok_tokens)[:SHAPES_TO_DECIDE]
    decisions = {
        row.shape: {"status": "watch", "reason": "written by toll init: decide replace/keep/watch"}
        for row in heaviest
        if row.ok_tokens > threshold
    }
    settled: dict[str, Any] = {
        "roots": roots,
        "decide_above_tokens": threshold,
        "waste_ratio_pin": pin,
    }
    if decisions:
        settled["decisions"] = decisions
    return settled


@dataclass(frozen=True)
class Finder:
    """How ``toll init`` finds one kind and writes what it found."""

    #: Every entry of this kind in the repository, from the one walk of its tree.
    find: Callable[[discovery.Tree], discovery.Finds]
    #: The entry written from the measured one.
    entry: EntryBuilder
    #: The comment above the kind's section ("" for none).
    comment: str = ""
    #: Init's messages count what it found per place under this word ("server(s)"), and
    #: always name the count; without it, they list the entries by name.
    counted_as: str = ""
    #: Makes the entry to measure from the one found (root-relative); None measures it as
    #: found.
    settle: Callable[[Mapping[str, Any], Path], dict[str, Any]] | None = None
    #: Its findings are acknowledged in the ledger's own ``rules:`` (its entry has none).
    ledger_rules: bool = False


#: One row per kind ``toll init`` writes, in the order its messages name them (the ledger
#: itself is written in the kinds' report order).
FINDERS: dict[KindName, Finder] = {
    "servers": Finder(discovery.find_servers, pinned_total, counted_as="server(s)"),
    "skills": Finder(
        discovery.find_skills,
        pinned_levels,
        "# Each skill's loading levels (and `executed`, the scripts it runs) are pinned and "
        "gated on their own,\n# and each file behind its references and scripts (files:).",
        counted_as="skill(s)",
    ),
    "transcripts": Finder(
        discovery.find_transcripts,
        unpinned,
        "# Tolls from the committed transcripts. The heaviest shapes are set to `watch`:\n"
        "# decide each (replace: {with: …} / keep / watch, with a reason).",
        settle=settle_transcripts,
        ledger_rules=True,
    ),
    "memory": Finder(
        discovery.find_memory,
        pinned_parts,
        "# What each host loads from this repository at session start, one pin per file\n"
        "# (always-on files only; on-demand ones are shown in the report).",
    ),
    "agents": Finder(
        discovery.find_agents,
        pinned_parts,
        "# Subagents: metadata (listed on every request) and body (on delegation), each gated.",
    ),
    "commands": Finder(
        discovery.find_commands,
        pinned_parts,
        "# Commands: metadata (listed on every request) and body (on invoke), each gated.",
    ),
    "plugins": Finder(
        discovery.find_plugins,
        pinned_parts,
        "# Plugins: what installing each costs every request, one pin per component.",
    ),
    "hosts": Finder(
        discovery.find_hosts,
        pinned_parts,
        "# Each host's fixed cost: every item it pays on every request, one pin each. A new\n"
        "# skill, command or memory file is growth from zero here, and fails the gate.",
    ),
}
