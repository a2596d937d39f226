"""The registry of ledger kinds: everything the gate knows about a top-level section.

A kind says how to measure one of its entries, where its total pin and part pins live in
the entry, whether it is one whole section (``transcripts:``) rather than a map of named
entries, and which of its numbers are gated. Adding a ledger kind is one :class:`Kind` in
:data:`KINDS` plus its part of the ledger's JSON Schema; no other module names a kind.

Where pins live, per kind:

- ``servers``: ``pin`` is the claude total (gated); ``tools`` holds per-tool pins, shown
  in the diff and ratcheted like the total, but the gate is the total;
- ``skills``: ``pin`` is a map ``{metadata, body, references}`` and every level is gated
  on its own (metadata growing cannot hide behind a shorter body);
- ``calls``: ``pin`` is the call's o200k total (gated); ``parts`` holds the pins of
  messages, system, skills and tools, shown in the diff and ratcheted like the total;
- ``transcripts``: no token pin; its rules gate it and ``waste_ratio_pin`` ratchets;
- ``tests``: ``pin`` is the test's measured total; a test that captured its LLM requests
  also pins ``run_pin``, the sum of every request it sent, gated like ``pin`` (a rise is a
  regression) and budgeted by ``run_budget``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_toll.gate.measurement import EntryContext, EntryMeasurement
from pytest_toll.gate.measurers import (
    measure_calls_entry,
    measure_servers_entry,
    measure_skills_entry,
    measure_transcripts_entry,
)

#: A test's pin of the sum of the requests it captured, and that sum's budget.
RUN_PIN = "run_pin"
RUN_BUDGET = "run_budget"
KindName = Literal["servers", "skills", "calls", "transcripts", "tests"]
EntryMeasurer = Callable[[str, Mapping[str, Any], EntryContext], EntryMeasurement]


@dataclass(frozen=True)
class Kind:
    """One top-level ledger section that holds entries."""

    name: KindName
    #: Measures one entry; None when something else measures it (tests: the toll fixture).
    measure: EntryMeasurer | None
    #: The entry's key of its total pin; None when the total is not pinned itself (the sum
    #: of gated part pins, or no token pin at all).
    total_pin_key: str | None
    #: The entry's key of its map of part pins (tools, skill levels, call parts), if any.
    part_pins_key: str | None
    #: One whole section (``transcripts:``), not a map of named entries.
    whole_section: bool = False
    #: Every part is gated against its own pin (not only the total).
    gated_parts: bool = False
    #: Entries are pytest tests' node ids, measured by the tests themselves.
    python_tests: bool = False
    #: What of a measured entry every request pays before any work (the report's fixed
    #: cost): ``"total"``, the name of one part, or None.
    fixed_cost: str | None = None
    #: Other pins gated like the total (a rise fails), each with its budget's ledger key.
    gated_other_pins: Mapping[str, str] = field(default_factory=dict)

    def keys(self, entry_name: str) -> tuple[str, ...]:
        """The entry's path in the ledger: ``("servers", "files")``, ``("transcripts",)``."""
        return (self.name,) if self.whole_section else (self.name, entry_name)

    def entry_names(self, section: Mapping[str, Any]) -> list[str]:
        """The names of the entries of a ledger section, in the ledger's order."""
        return [self.name] if self.whole_section else [str(name) for name in section]

    def entry_of(self, section: Mapping[str, Any], entry_name: str) -> Mapping[str, Any]:
        """One entry of a ledger section ({} when it has no fields)."""
        if self.whole_section:
            return section
        entry: Mapping[str, Any] = section.get(entry_name) or {}
        return entry

    @property
    def pinned_by_rules_only(self) -> bool:
        """No token pin: its rules (findings) gate it; only its other pins ratchet."""
        return not self.gated_parts and self.total_pin_key is None


#: Every kind, in report order (ledger items are collected in this order too).
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("servers", measure_servers_entry, "pin", "tools", fixed_cost="total"),
        Kind(
            "skills",
            measure_skills_entry,
            None,
            "pin",
            gated_parts=True,
            fixed_cost="metadata",
        ),
        Kind("calls", measure_calls_entry, "pin", "parts"),
        Kind("transcripts", measure_transcripts_entry, None, None, whole_section=True),
        Kind(
            "tests",
            None,
            "pin",
            None,
            python_tests=True,
            gated_other_pins={RUN_PIN: RUN_BUDGET},
        ),
    )
}
#: The kind of a test's own measurement (the ``toll`` fixture, ``toll(budget=N)``).
TESTS_KIND = KINDS["tests"]


def kind_rank(name: str) -> int:
    """A kind's place in report order (an unknown kind goes last)."""
    order = list(KINDS)
    return order.index(name) if name in KINDS else len(order)
