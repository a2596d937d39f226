"""``toll init``'s finders for the always-on surface: memory files per host, subagents,
commands and plugins, each measured as ``pytest --toll`` will measure it.

Kept apart from :mod:`pytest_toll.gate.starter` (which calls :func:`discover` and
:func:`measure` and renders the entries with its own block writer) so that the discovery
of servers and skills can change without touching these finders, and the other way round.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import (
    measure_agents_entry,
    measure_commands_entry,
    measure_memory_entry,
    measure_plugins_entry,
)
from pytest_toll.surface.agents import (
    AGENT,
    AGENT_FOLDERS,
    COMMAND,
    COMMAND_FOLDERS,
    command_name,
    delegate_name,
    find_delegates,
)
from pytest_toll.surface.files import relative
from pytest_toll.surface.memory import hosts_in
from pytest_toll.surface.plugins import PLUGIN_FILE, marketplace_plugins

#: The surface's kinds in the order the starter ledger writes them.
SURFACE_KINDS = ("memory", "agents", "commands", "plugins")

#: One found entry: its name and the ledger entry to measure (no pins yet).
Found = tuple[str, dict[str, Any]]


@dataclass(frozen=True)
class SurfaceDiscovery:
    """What the repository holds of the surface, by kind, and notes on what was skipped."""

    found: Mapping[str, tuple[Found, ...]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not any(self.found.values())


@dataclass
class SurfaceStarter:
    """Measured entries by kind (an entry, or why it could not be measured)."""

    entries: dict[str, list[tuple[str, dict[str, Any], dict[str, Any] | str]]] = field(
        default_factory=dict
    )
    #: (label, written entry, findings) of every measured entry: the starter acknowledges
    #: the findings already there in the entry's ``rules:``.
    findings: list[tuple[str, dict[str, Any], Sequence[Mapping[str, Any]]]] = field(
        default_factory=list
    )


def find_memory(root: Path) -> list[Found]:
    """One ``memory:`` entry per host with memory files at the root, named by the host."""
    return [(host, {}) for host in hosts_in(root)]


def _unique(name: str, names: set[str], folder: str) -> str:
    if name in names:
        name = f"{folder.strip('.').split('/')[0]}-{name}"
    names.add(name)
    return name


def find_delegates_in(root: Path, role: str) -> list[Found]:
    """One ``agents:`` or ``commands:`` entry per file in the project's folders."""
    found: list[Found] = []
    names: set[str] = set()
    folders = AGENT_FOLDERS if role == AGENT else COMMAND_FOLDERS
    for folder in folders:
        try:
            files = find_delegates(root / folder, role)
        except CouldNotJudge:
            continue
        for path, top in files:
            if role == COMMAND:
                name = command_name(path, top)
            else:
                try:
                    name = delegate_name(path, root)
                except CouldNotJudge:
                    name = path.stem
            found.append((_unique(name, names, folder), {"path": relative(path, root)}))
    return found


def find_plugins(root: Path) -> tuple[list[Found], list[str]]:
    """The plugin at the root (``.claude-plugin/plugin.json``) and each plugin a
    marketplace lists in the repository."""
    found: list[Found] = []
    try:
        listed, notes = marketplace_plugins(root)
    except CouldNotJudge as error:
        raise UsageError(str(error)) from None
    if (root / PLUGIN_FILE).is_file():
        found.append((root.resolve().name, {"path": "."}))
    found += [(name, {"path": relative(folder, root)}) for name, folder in listed]
    return found, notes


def discover(root: Path) -> SurfaceDiscovery:
    """Every surface entry the repository at ``root`` holds; reads files only."""
    plugins, notes = find_plugins(root)
    return SurfaceDiscovery(
        found={
            "memory": tuple(find_memory(root)),
            "agents": tuple(find_delegates_in(root, AGENT)),
            "commands": tuple(find_delegates_in(root, COMMAND)),
            "plugins": tuple(plugins),
        },
        notes=tuple(notes),
    )


_MEASURERS = {
    "memory": measure_memory_entry,
    "agents": measure_agents_entry,
    "commands": measure_commands_entry,
    "plugins": measure_plugins_entry,
}


def measure(
    discovery: SurfaceDiscovery, context: EntryContext, budget_for: Callable[[int], int]
) -> SurfaceStarter:
    """Measure each found entry as ``pytest --toll`` will; pins as measured, budgets with
    headroom from ``budget_for``."""
    starter = SurfaceStarter()
    for kind in SURFACE_KINDS:
        rows = starter.entries.setdefault(kind, [])
        for name, entry in discovery.found.get(kind, ()):
            try:
                measured = _MEASURERS[kind](name, entry, context)
            except CouldNotJudge as error:
                rows.append((name, entry, str(error)))
                continue
            written = dict(entry)
            written.update(budget=budget_for(measured.total), pin=dict(measured.parts))
            rows.append((name, entry, written))
            starter.findings.append((f"{kind}.{name}", written, measured.findings))
    return starter


COMMENTS = {
    "memory": "# What each host loads from this repository at session start, one pin per file\n"
    "# (always-on files only; on-demand ones are shown in the report).",
    "agents": "# Subagents: metadata (listed on every request) and body (on delegation), each gated.",
    "commands": "# Commands: metadata (listed on every request) and body (on invoke), each gated.",
    "plugins": "# Plugins: what installing each costs every request, one pin per component.",
}
