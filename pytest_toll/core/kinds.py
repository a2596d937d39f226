"""The ledger's kinds as plain data: everything about a top-level section except how to
measure it.

A kind says where its total pin and part pins live in an entry, whether it is one whole
section (``transcripts:``) rather than a map of named entries, which of its numbers are
gated, and what of it every request pays (the fixed cost). The report reads this table for
order and fixed cost without loading a single measurer; the gate pairs each kind with its
measurer, and ``toll init`` with its finder, in :mod:`pytest_toll.gate.kinds`. Adding a
ledger kind is one :class:`Kind` here, its rows there, and the files ARCHITECTURE.md's "A
kind" recipe lists (its schema entries, ``toll.yaml.example``, ``docs/ledger.md``).

Where pins live, per kind:

- ``servers``: ``pin`` is the claude total (gated); ``tools`` holds per-tool pins, shown
  in the diff and ratcheted like the total, but the gate is the total;
- ``skills``: ``pin`` is a map ``{metadata, body, references}`` and every level is gated
  on its own (metadata growing cannot hide behind a shorter body); a skill that runs
  scripts also pins ``executed`` (their source), gated but outside its total and budget;
  ``files`` pins each file behind its ``references`` and ``executed`` parts (``{references:
  {references/style.md: 111}}``), every file gated on its own when pinned (the message
  names the file that grew; a new file beside pinned ones is growth from zero);
- ``calls``: ``pin`` is the call's o200k total (gated); ``parts`` holds the pins of
  messages, system, skills and tools, shown in the diff and ratcheted like the total;
- ``transcripts``: no token pin; its rules gate it and ``waste_ratio_pin`` ratchets;
- ``tests``: ``pin`` is the test's measured total; ``parts`` pins each label it recorded
  (a capture's largest request by its parts, ``capture/messages`` …), each gated beside
  the total when pinned, so a regression names the part that grew;
- ``memory``: ``pin`` maps each always-on memory file of one host to its tokens, every file
  gated on its own (the diff names the file that grew); a file not pinned yet is growth;
  a chain past the host's byte cut also pins the tokens it loses (``(past the cut)``),
  gated, outside the total: more lost is a regression, never an improvement;
- ``agents`` and ``commands``: ``pin`` is a map ``{metadata, body}``, gated per level like
  skills; the metadata (the listing) is paid on every request;
- ``plugins``: ``pin`` maps each component (``skills/pdf``, ``agents/reviewer``,
  ``commands/commit``) to the tokens its listing costs every request;
- ``hosts``: one entry per host (``claude-code``, ``codex`` …); ``pin`` maps every item that
  host pays on every request (``memory/CLAUDE.md``, ``skills/pdf``, ``commands/git:commit``,
  ``plugins/x/skills/y``) to its tokens, each gated: a new always-on item is growth from
  zero. Where a ledger has ``hosts:`` entries the report's fixed cost is per host, from them
  (and the servers' definitions, as each host loads them), never a sum across hosts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

KindName = Literal[
    "servers",
    "skills",
    "memory",
    "agents",
    "commands",
    "plugins",
    "hosts",
    "calls",
    "transcripts",
    "tests",
]
#: A test's pin of the sum of the requests it captured, and that sum's budget.
RUN_PIN = "run_pin"
RUN_BUDGET = "run_budget"
#: A skill's scripts, which the agent runs: their output enters the context, their source not.
EXECUTED = "executed"
#: The part of a ``memory:`` entry holding the tokens past a host's byte cut (Codex's
#: project_doc_max_bytes): pinned and gated like a file, since growth there is instructions
#: lost, but never in the total: no request pays for what the host never reads.
PAST_CUT = "(past the cut)"


@dataclass(frozen=True)
class Kind:
    """One top-level ledger section that holds entries."""

    name: KindName
    #: The entry's key of its total pin; None when the total is not pinned itself (the sum
    #: of gated part pins, or no token pin at all).
    total_pin_key: str | None
    #: The entry's key of its map of part pins (tools, skill levels, call parts), if any.
    part_pins_key: str | None
    #: One whole section (``transcripts:``), not a map of named entries.
    whole_section: bool = False
    #: Every pinned part is gated against its own pin; with a total pin of its own (a
    #: test's) the total is gated too, else the total is the parts' sum.
    gated_parts: bool = False
    #: Entries are pytest tests' node ids, measured by the tests themselves (the ``toll``
    #: fixture), not collected from the ledger as items.
    python_tests: bool = False
    #: What of a measured entry every request pays before any work (the report's fixed
    #: cost): ``"total"``, the name of one part, or None.
    fixed_cost: str | None = None
    #: Parts pinned and gated on their own but not in the entry's total (nor its budget):
    #: a skill's ``executed`` scripts, whose source is not loaded.
    parts_outside_total: tuple[str, ...] = ()
    #: Other pins gated like the total (a rise fails), each with its budget's ledger key.
    gated_other_pins: Mapping[str, str] = field(default_factory=dict)
    #: Its parts are named by what was measured (files, components), not fixed levels: a
    #: measured part with no pin, beside pinned ones, is growth from zero and is gated.
    open_parts: bool = False
    #: How the report names what of this kind the fixed cost holds ("skill metadata").
    paid_label: str = ""
    #: The entry's key of its per-file pins below parts (``{part: {file: tokens}}``), for
    #: the parts whose files can grow (:attr:`file_parts`): each file gated on its own once
    #: pinned, a new file beside pinned ones growth from zero. None: the kind has none.
    file_pins_key: str | None = None
    file_parts: tuple[str, ...] = ()

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
    def measured_from_ledger(self) -> bool:
        """Its entries are items of the ledger, each measured by the gate's measurer."""
        return not self.python_tests

    @property
    def pinned_by_rules_only(self) -> bool:
        """No token pin: its rules (findings) gate it; only its other pins ratchet."""
        return not self.gated_parts and self.total_pin_key is None


#: Every kind, in report order (ledger items are collected in this order too).
KINDS: dict[str, Kind] = {
    kind.name: kind
    for kind in (
        Kind("servers", "pin", "tools", fixed_cost="total", paid_label="server definitions"),
        Kind(
            "skills",
            None,
            "pin",
            gated_parts=True,
            fixed_cost="metadata",
            parts_outside_total=(EXECUTED,),
            paid_label="skill metadata",
            file_pins_key="files",
            file_parts=("references", EXECUTED),
        ),
        Kind(
            "memory",
            None,
            "pin",
            gated_parts=True,
            fixed_cost="total",
            parts_outside_total=(PAST_CUT,),
            open_parts=True,
            paid_label="memory files",
        ),
        Kind(
            "agents",
            None,
            "pin",
            gated_parts=True,
            fixed_cost="metadata",
            paid_label="subagent metadata",
        ),
        Kind(
            "commands",
            None,
            "pin",
            gated_parts=True,
            fixed_cost="metadata",
            paid_label="command metadata",
        ),
        Kind(
            "plugins",
            None,
            "pin",
            gated_parts=True,
            fixed_cost="total",
            open_parts=True,
            paid_label="plugin listings",
        ),
        Kind(
            "hosts",
            None,
            "pin",
            gated_parts=True,
            fixed_cost="total",
            parts_outside_total=(PAST_CUT,),
            open_parts=True,
            paid_label="one host's surface",
        ),
        Kind("calls", "pin", "parts"),
        Kind("transcripts", None, None, whole_section=True),
        Kind(
            "tests",
            "pin",
            "parts",
            gated_parts=True,
            python_tests=True,
            gated_other_pins={RUN_PIN: RUN_BUDGET},
            open_parts=True,
        ),
    )
}
#: The kind of a test's own measurement (the ``toll`` fixture, ``toll(budget=N)``).
TESTS_KIND = KINDS["tests"]


def kind_rank(name: str) -> int:
    """A kind's place in report order (an unknown kind goes last)."""
    order = list(KINDS)
    return order.index(name) if name in KINDS else len(order)


def fixed_cost_label(kinds_present: Iterable[str]) -> str:
    """What the fixed cost holds: server definitions and skill metadata always (a report
    reads as it did before there were more kinds), then the other paying kinds the report
    has (``… + memory files + subagent metadata``)."""
    present = set(kinds_present)
    paid = [kind for kind in KINDS.values() if kind.fixed_cost is not None]
    return " + ".join(
        kind.paid_label for index, kind in enumerate(paid) if index < 2 or kind.name in present
    )
