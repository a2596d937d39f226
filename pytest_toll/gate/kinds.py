"""Which function measures which ledger kind: the gate's half of the kinds table.

The kinds' plain data (names, pin keys, gated parts, fixed cost, order) is
:mod:`pytest_toll.core.kinds`, which the report reads without loading a measurer. Here each
kind measured from the ledger is paired with its measurer; the ``tests`` kind has none (its
entries are measured by the tests themselves).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_toll.core.kinds import Kind, KindName
from pytest_toll.gate.measurement import EntryContext, EntryMeasurement
from pytest_toll.gate.measurers import (
    measure_agents_entry,
    measure_calls_entry,
    measure_commands_entry,
    measure_memory_entry,
    measure_plugins_entry,
    measure_servers_entry,
    measure_skills_entry,
    measure_transcripts_entry,
)

EntryMeasurer = Callable[[str, Mapping[str, Any], EntryContext], EntryMeasurement]

#: The measurer of every kind whose entries are ledger items.
MEASURERS: dict[KindName, EntryMeasurer] = {
    "servers": measure_servers_entry,
    "skills": measure_skills_entry,
    "memory": measure_memory_entry,
    "agents": measure_agents_entry,
    "commands": measure_commands_entry,
    "plugins": measure_plugins_entry,
    "calls": measure_calls_entry,
    "transcripts": measure_transcripts_entry,
}


def measurer_of(kind: Kind) -> EntryMeasurer:
    """The measurer of a kind measured from the ledger (a KeyError for ``tests``)."""
    return MEASURERS[kind.name]
