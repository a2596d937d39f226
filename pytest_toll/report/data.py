"""The session report as data: dataclasses with ``as_dict()``, and the dict's types.

One :class:`EntryResult` per ledger entry and per measured test; a :class:`SessionReport`
holds them in a deterministic order (kind, then ledger line, then name) so a serial run and
an ``-n 2`` run produce the same summary and the same JSON. The JSON shape is versioned and
described by ``data/report.schema.json`` (:class:`ReportDict` here); the renderers
(terminal, Markdown, annotations, badge, SARIF) build on it.

This module is pure: no pytest, no tokenizer.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, Literal, TypedDict, cast

from pytest_toll._version import __version__
from pytest_toll.core.kinds import KINDS, kind_rank
from pytest_toll.report.host_costs import HostCostDict, costs

REPORT_VERSION = 1
SCHEMA_PATH = Path(__file__).parents[1] / "data" / "report.schema.json"

Outcome = Literal["passed", "improved", "regressed", "over_budget", "error", "new", "stale"]
# Outcomes, from the point of view of the ledger pin.
PASSED: Final = "passed"  # measured equals the pin (within tolerance) and under budget
IMPROVED: Final = "improved"  # below the pin: passes, and --toll-update would lower the pin
REGRESSED: Final = "regressed"  # above pin + tolerance: fails (unless the increase is allowed)
OVER_BUDGET: Final = "over_budget"  # above the human budget: always fails
OUTCOME_ERROR: Final = "error"  # could not be measured: never a pass
NEW: Final = "new"  # measured, no pin yet: passes, --toll-update writes the pin
STALE: Final = "stale"  # in the ledger, not measured in a full run: fails under --toll-strict
OUTCOMES: tuple[Outcome, ...] = (
    PASSED, IMPROVED, REGRESSED, OVER_BUDGET, OUTCOME_ERROR, NEW, STALE,
)  # fmt: skip


class PartDict(TypedDict):
    name: str
    measured: int | None
    pin: int | None
    delta: int | None


class _EntryFields(TypedDict):
    kind: str
    name: str
    nodeid: str
    line: int | None
    measured: int | None
    method: str | None
    pin: int | None
    budget: int | None
    delta: int | None
    outcome: Outcome
    failed: bool
    message: str
    findings: list[dict[str, Any]]
    parts: list[PartDict]
    #: ``{"from": old pin or None, "to": new pin}``: the pin ``--toll-update`` wrote.
    ratchet: dict[str, int | None] | None
    other_pins: list[dict[str, Any]]


class CapturedRequestDict(TypedDict, total=False):
    """One captured request (``pytest_toll.calls.capture.MeasuredRequest.as_dict()``)."""

    number: int
    api: str
    host: str
    path: str
    model: str | None
    stream: bool
    tokens: int | None
    method: str | None
    parts: dict[str, int]
    scaled: int | None
    scaled_method: str | None
    cost_usd: float | None
    cache_breakpoints: int
    cacheable_prefix: int
    #: What it adds over the request judged before it (the run's growth turn by turn).
    new: int
    error: str
    notes: list[str]


class _CaptureFields(TypedDict):
    count: int
    largest: int | None
    largest_number: int | None
    #: What run_budget grades; ``new`` + ``resent`` split it (see pytest_toll.calls.capture).
    sum: int
    new: int
    resent: int
    could_not_judge: int
    requests: list[CapturedRequestDict]


class CaptureDict(_CaptureFields, total=False):
    """What a test captured: the graded largest request, the run's sum and count beside it,
    and, when a request marks cache breakpoints, the caching estimate."""

    cache: dict[str, Any]


class EntryDict(_EntryFields, total=False):
    """One entry of the report; ``capture`` is there only on a test that captured."""

    capture: CaptureDict
    #: Shown, never judged: a server's per-tool split, the heaviest transcript shapes.
    detail: dict[str, Any]
    files: dict[str, list[PartDict]]  # the files behind a part, each with its pin


class FixedCostDict(TypedDict, total=False):
    #: The host the figure is for (the one that pays most), None when the ledger has no
    #: ``hosts:`` entries (then the figure is the sum of the paying kinds' entries).
    host: str | None
    hosts: dict[str, HostCostDict]
    tokens: int
    window_share: float
    #: Every server and skill of the ledger was measured: ``tokens`` is the whole figure.
    complete: bool
    #: Fixed-cost entries that errored (``tokens`` is then a lower bound).
    errors: list[str]
    #: Fixed-cost entries not measured in this run (partial: ``tokens`` is a lower bound).
    unmeasured: list[str]
    #: Without ``hosts:`` entries, the ``memory:`` entries the figure adds up when they are
    #: more than one: each is one host's, so the figure is no one host's bill.
    summed_hosts: list[str]


class _PricingFields(TypedDict):
    """What the fixed cost, and this change of it, cost at the ledger model's input price.

    Present only when the ledger names a ``model:`` whose input price the catalogue knows.
    Token figures are o200k scaled for the model (``method``: ``o200k×1.80``); USD is
    uncached input, per 1,000 requests.
    """

    model: str
    #: USD per million input tokens, at the tier of a request holding only the fixed cost.
    input_usd_per_mtok: float
    scale: float
    scale_measured: bool
    method: str
    #: The fixed cost per request, scaled (a lower bound when the fixed cost is one).
    fixed_cost_tokens: int
    fixed_cost_usd_per_1000: float
    #: Measured minus pin of the fixed-cost entries that have both, scaled; None: no pins.
    change_tokens: int | None
    change_usd_per_1000: float | None


class PricingDict(_PricingFields, total=False):
    #: Each host's resident fixed cost in USD per 1,000 requests (with ``hosts:`` entries).
    hosts: dict[str, float]


class CollectedDict(TypedDict):
    """What a session collected (after deselection): what a merge of shards unions."""

    tests: list[str]
    ledger_items: list[str]


class ShardDict(TypedDict):
    """Which shard of a split suite a report is: ``index`` of ``count`` (1-based), how the
    split was made, and whether this shard measures the ledger's items (None: the splitter
    decides, item by item)."""

    index: int
    count: int
    by: str
    measures_ledger_items: bool | None


class ReportDict(TypedDict, total=False):
    """``SessionReport.as_dict()``: what the JSON report holds and every output renders.

    Every key is there in a report this package makes; the renderers still read each with
    a default, so a report from another version renders what it has.
    """

    version: int
    tool: str
    tool_version: str
    tokenizer: str
    ledger: str
    window: int
    tolerance: int
    update: bool
    allow_increase: bool
    strict: bool
    partial: bool
    ledger_written: bool
    ledger_removed: list[str]
    #: Part pins the update wrote: ``{"entry", "part", "from", "to"}`` (``from`` None: new).
    ledger_pins: list[dict[str, Any]]
    fixed_cost: FixedCostDict
    counts: dict[str, int]
    #: Ledger entries no result covers (deselected, skipped, errored before measuring,
    #: not collected): their pins were kept as they are.
    unmeasured: list[str]
    failed: bool
    entries: list[EntryDict]
    collected: CollectedDict
    ledger_sha256: str | None
    shard: ShardDict | None
    #: Only when the ledger's ``model:`` has a known input price.
    pricing: PricingDict


def entry_label(entry: Mapping[str, Any]) -> str:
    """``servers::notes``; a section that is one entry (``transcripts``) is just its name.

    The one label the terminal summary, Markdown, HTML and GitHub's annotations show, so a
    reader can search one for the other.
    """
    kind, name = str(entry.get("kind")), str(entry.get("name"))
    return kind if name == kind else f"{kind}::{name}"


def _delta(measured: int | None, pin: int | None) -> int | None:
    if measured is None or pin is None:
        return None
    return measured - pin


@dataclass
class PartResult:
    """One part of an entry (a tool, a skill level, a call part) with its pinned value."""

    name: str
    measured: int | None
    pin: int | None = None

    @property
    def delta(self) -> int | None:
        return _delta(self.measured, self.pin)

    def as_dict(self) -> PartDict:
        return {"name": self.name, "measured": self.measured, "pin": self.pin, "delta": self.delta}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PartResult:
        return cls(str(data["name"]), data.get("measured"), data.get("pin"))


@dataclass
class EntryResult:
    """The judgement of one entry: what was measured, against which pin and budget, and why.

    ``failed`` is whether the entry fails the run: regressed, over budget, an error, an
    error-severity finding, or stale under ``--toll-strict``. ``ratchet`` is the pin change
    ``--toll-update`` writes (``{"from": old, "to": new}``), when there is one.
    """

    kind: str
    name: str
    nodeid: str
    line: int | None
    measured: int | None
    method: str | None
    pin: int | None
    budget: int | None
    outcome: Outcome
    failed: bool = False
    message: str = ""
    findings: list[dict[str, Any]] = field(default_factory=list)
    parts: list[PartResult] = field(default_factory=list)
    ratchet: dict[str, int | None] | None = None
    #: Other pinned numbers (``{"key": "waste_ratio_pin", "measured": 0.08, "pin": 0.09}``).
    other_pins: list[dict[str, Any]] = field(default_factory=list)
    #: The LLM requests a test captured, when it captured (``CaptureDict``).
    capture: Mapping[str, Any] | None = None
    #: What the measurer saw beside the numbers, for the report to show; never judged or
    #: pinned (``EntryMeasurement.detail``).
    detail: Mapping[str, Any] | None = None
    #: The files behind a part by part, each named by its path with its pin (a skill's files).
    files: dict[str, list[PartResult]] = field(default_factory=dict)

    @property
    def delta(self) -> int | None:
        return _delta(self.measured, self.pin)

    @property
    def label(self) -> str:
        return entry_label({"kind": self.kind, "name": self.name})

    def as_dict(self) -> EntryDict:
        data: EntryDict = {
            "kind": self.kind,
            "name": self.name,
            "nodeid": self.nodeid,
            "line": self.line,
            "measured": self.measured,
            "method": self.method,
            "pin": self.pin,
            "budget": self.budget,
            "delta": self.delta,
            "outcome": self.outcome,
            "failed": self.failed,
            "message": self.message,
            "findings": [dict(finding) for finding in self.findings],
            "parts": [part.as_dict() for part in self.parts],
            "ratchet": None if self.ratchet is None else dict(self.ratchet),
            "other_pins": [dict(other) for other in self.other_pins],
        }
        if self.capture is not None:
            data["capture"] = cast(CaptureDict, dict(self.capture))
        if self.detail is not None:
            data["detail"] = dict(self.detail)
        if self.files:
            data["files"] = {p: [row.as_dict() for row in rows] for p, rows in self.files.items()}
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EntryResult:
        """Rebuild from ``as_dict()`` output (how results travel from xdist workers)."""
        ratchet = data.get("ratchet")
        return cls(
            kind=str(data["kind"]),
            name=str(data["name"]),
            nodeid=str(data["nodeid"]),
            line=data.get("line"),
            measured=data.get("measured"),
            method=data.get("method"),
            pin=data.get("pin"),
            budget=data.get("budget"),
            outcome=cast(Outcome, str(data["outcome"])),
            failed=bool(data.get("failed", False)),
            message=str(data.get("message", "")),
            findings=[dict(finding) for finding in data.get("findings", [])],
            parts=[PartResult.from_dict(part) for part in data.get("parts", [])],
            ratchet=None if ratchet is None else dict(ratchet),
            other_pins=[dict(other) for other in data.get("other_pins", [])],
            capture=data.get("capture"),
            detail=data.get("detail"),
            files={
                str(part): [PartResult.from_dict(row) for row in rows]
                for part, rows in (data.get("files") or {}).items()
            },
        )

    def sort_key(self) -> tuple[int, int, str]:
        return (kind_rank(self.kind), self.line if self.line is not None else 1 << 30, self.name)


@dataclass
class SessionReport:
    """Everything one ``pytest --toll`` session judged, in report order."""

    ledger: str
    window: int
    tolerance: int
    update: bool = False
    allow_increase: bool = False
    strict: bool = False
    partial: bool = False
    ledger_written: bool = False
    #: Key paths the update removed (``tests.<id>``, ``servers.files.tools.old``).
    ledger_removed: list[str] = field(default_factory=list)
    #: Part pins the update wrote (a tool's, a skill level's): entry label, part, from, to.
    ledger_pins: list[dict[str, Any]] = field(default_factory=list)
    entries: list[EntryResult] = field(default_factory=list)
    tokenizer: str = "o200k_base"
    #: Labels (``servers::files``) of ledger entries no result covers; pins kept.
    unmeasured: list[str] = field(default_factory=list)
    #: Node ids collected (sorted): Python tests, and the ledger's own items.
    collected: CollectedDict = field(
        default_factory=lambda: CollectedDict(tests=[], ledger_items=[])
    )
    #: The sha256 of the ledger's bytes as judged (None: no ledger file).
    ledger_sha256: str | None = None
    #: Which shard this report is, for ``toll merge`` (None: not a shard).
    shard: ShardDict | None = None
    #: The fixed cost in USD at the ledger model's input price (None: no model or no price).
    pricing: PricingDict | None = None

    def __post_init__(self) -> None:
        self.entries.sort(key=EntryResult.sort_key)

    def add(self, entries: Iterable[EntryResult]) -> None:
        self.entries.extend(entries)
        self.entries.sort(key=EntryResult.sort_key)

    @property
    def counts(self) -> dict[str, int]:
        counts: dict[str, int] = dict.fromkeys(OUTCOMES, 0)
        for entry in self.entries:
            counts[entry.outcome] = counts.get(entry.outcome, 0) + 1
        return counts

    @property
    def failed(self) -> bool:
        return any(entry.failed for entry in self.entries)

    @property
    def host_costs(self) -> dict[str, HostCostDict]:
        """Each ``hosts:`` entry's fixed cost (:func:`pytest_toll.report.host_costs.costs`)."""
        servers = sum(e.measured or 0 for e in self.entries if e.kind == "servers")
        measured = {e.name: e.measured for e in self.entries if e.kind == "hosts"}
        return costs(measured, servers, self.window)

    @property
    def shown_host(self) -> str | None:
        """The host whose fixed cost the report shows: the one that pays most per request
        (None without ``hosts:`` entries)."""
        costs = self.host_costs
        if not costs:
            return None
        return max(costs, key=lambda name: (costs[name]["resident"], -list(costs).index(name)))

    @property
    def fixed_cost(self) -> int:
        """Tokens paid on every request before any work. With ``hosts:`` entries: the shown
        host's own (its surface, and the servers' definitions unless it defers them), never
        a sum across hosts. Without: what each kind's ``fixed_cost`` names (server
        definitions, skill metadata, memory files, subagent and command metadata, plugin
        listings)."""
        shown = self.shown_host
        if shown is not None:
            return self.host_costs[shown]["resident"]
        total = 0
        for entry in self.entries:
            paid = KINDS[entry.kind].fixed_cost if entry.kind in KINDS else None
            if paid == "total" and entry.measured is not None:
                total += entry.measured
            elif paid is not None:
                total += sum(part.measured or 0 for part in entry.parts if part.name == paid)
        return total

    @property
    def fixed_cost_change(self) -> int | None:
        """Measured minus pin of the fixed cost, over the entries (servers' totals, skills'
        metadata parts) that have both; None when none has. With ``hosts:`` entries, the
        shown host's entry (and the servers, when it sends them eagerly)."""
        shown = self.shown_host
        change: int | None = None
        for entry in self.entries:
            if shown is not None:
                eager = self.host_costs[shown]["mcp_tools"] == "eager"
                counted = (entry.kind == "hosts" and entry.name == shown) or (
                    eager and entry.kind == "servers"
                )
                if counted and entry.delta is not None:
                    change = (change or 0) + entry.delta
                continue
            paid = KINDS[entry.kind].fixed_cost if entry.kind in KINDS else None
            if paid == "total":
                deltas = [entry.delta]
            elif paid is not None:
                deltas = [part.delta for part in entry.parts if part.name == paid]
            else:
                continue
            for delta in deltas:
                if delta is not None:
                    change = (change or 0) + delta
        return change

    @property
    def fixed_cost_errors(self) -> list[str]:
        """Servers and skills that could not be measured: the fixed cost leaves them out."""
        return [
            entry.label
            for entry in self.entries
            if _pays_fixed_cost(entry.kind) and entry.measured is None and entry.outcome != "stale"
        ]

    @property
    def fixed_cost_unmeasured(self) -> list[str]:
        """Servers and skills this run did not measure (a partial run, ``-k``, a crash)."""
        return [label for label in self.unmeasured if _pays_fixed_cost(label.split("::", 1)[0])]

    def fixed_cost_dict(self) -> FixedCostDict:
        fixed = self.fixed_cost
        errors = self.fixed_cost_errors
        unmeasured = self.fixed_cost_unmeasured
        return {
            "host": self.shown_host,
            "hosts": self.host_costs,
            "tokens": fixed,
            "window_share": fixed / self.window,
            "complete": not errors and not unmeasured,
            "errors": errors,
            "unmeasured": unmeasured,
            "summed_hosts": self.summed_hosts,
        }

    @property
    def summed_hosts(self) -> list[str]:
        """The ``memory:`` entries a figure without ``hosts:`` entries adds up, when there
        are two or more of them (one host's each); [] otherwise."""
        if self.shown_host is not None:
            return []
        memory = sorted({e.name for e in self.entries if e.kind == "memory"})
        return memory if len(memory) > 1 else []

    def as_dict(self) -> ReportDict:
        data: ReportDict = {
            "version": REPORT_VERSION,
            "tool": "pytest-toll",
            "tool_version": __version__,
            "tokenizer": self.tokenizer,
            "ledger": self.ledger,
            "window": self.window,
            "tolerance": self.tolerance,
            "update": self.update,
            "allow_increase": self.allow_increase,
            "strict": self.strict,
            "partial": self.partial,
            "ledger_written": self.ledger_written,
            "ledger_removed": list(self.ledger_removed),
            "ledger_pins": [dict(pin) for pin in self.ledger_pins],
            "fixed_cost": self.fixed_cost_dict(),
            "counts": self.counts,
            "unmeasured": list(self.unmeasured),
            "failed": self.failed,
            "entries": [entry.as_dict() for entry in self.entries],
            "collected": {
                "tests": sorted(self.collected["tests"]),
                "ledger_items": sorted(self.collected["ledger_items"]),
            },
            "ledger_sha256": self.ledger_sha256,
            "shard": None if self.shard is None else cast(ShardDict, dict(self.shard)),
        }
        if self.pricing is not None:
            data["pricing"] = cast(PricingDict, dict(self.pricing))
        return data


def _pays_fixed_cost(kind: str) -> bool:
    return kind in KINDS and KINDS[kind].fixed_cost is not None


def fixed_cost_gaps(fixed: FixedCostDict | Mapping[str, Any]) -> str:
    """Why a report's fixed cost is a lower bound ("" when it is the whole figure)."""
    errors = list(fixed.get("errors") or [])
    unmeasured = list(fixed.get("unmeasured") or [])
    gaps = []
    if errors:
        gaps.append(f"{_listing(errors)} could not be measured")
    if unmeasured:
        gaps.append(f"partial run: {_listing(unmeasured)} not measured")
    return "; ".join(gaps)


def _listing(labels: Sequence[str], shown: int = 3) -> str:
    text = ", ".join(labels[:shown])
    return text + (f" and {len(labels) - shown} more" if len(labels) > shown else "")


def biggest_changes(parts: Sequence[PartDict], biggest: int = 5) -> tuple[list[PartDict], int]:
    """The parts whose measure moved against their pin, biggest change first (then by name),
    at most ``biggest`` of them, and how many more changed: what every rendering lists."""
    changed = sorted(
        (part for part in parts if part.get("delta")),
        key=lambda part: (-abs(part["delta"] or 0), str(part["name"])),
    )
    return changed[:biggest], len(changed) - len(changed[:biggest])


_TALLY_WORDS = {**{name: name.replace("_", " ") for name in OUTCOMES}, PASSED: "ok"}
_PLURALS = {"error": "errors"}


def tally(counts: Mapping[str, int], failed: Iterable[bool]) -> str:
    """``16 entries: 2 failed, 14 passed (12 ok, 2 regressed)``: the one tally of a run.

    Entries as pytest counts their items (failed or passed), then what the pins say, non-zero
    outcomes only. The terminal, Markdown and HTML reports all print this text, so the same
    run reads the same everywhere. ``failed``: each entry's failed flag.
    """
    flags = list(failed)
    failing = sum(1 for flag in flags if flag)
    passing = len(flags) - failing
    outcomes = ", ".join(
        f"{counts[name]} {_PLURALS.get(word, word) if counts[name] != 1 else word}"
        for name, word in _TALLY_WORDS.items()
        if counts.get(name)
    )
    head = ", ".join(
        f"{number} {what}" for number, what in ((failing, "failed"), (passing, "passed")) if number
    )
    entries = len(flags)
    return f"{entries} {'entry' if entries == 1 else 'entries'}: {head or 'none judged'}" + (
        f" ({outcomes})" if outcomes else ""
    )


def tally_of(report: Mapping[str, Any]) -> str:
    """:func:`tally` of a report dict (what the Markdown and HTML renderers read)."""
    entries = report.get("entries") or []
    return tally(report.get("counts") or {}, (bool(entry.get("failed")) for entry in entries))
