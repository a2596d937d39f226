"""The scan report: file summaries merged into one toll table (``toll scan``, ``toll repeats``).

Each call and turn is counted once across files (a resumed Claude Code session copies earlier
messages into its new file); shapes are ranked by their ok tokens, with the nearest-rank
median and p90; a shape whose judged calls are mostly not ``ok`` is *suspicious*; repeats are
ranked by the tokens they wasted.
"""

from __future__ import annotations

import hashlib
import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_toll.core.tokens import TOKENIZER_NAME
from pytest_toll.transcripts.formats import AGENTS
from pytest_toll.transcripts.outcomes import (
    JUDGED,
    OUTCOME_NOT_RECORDED,
    OUTCOME_OK,
    OUTCOME_UNPAIRED,
    OUTCOMES,
)
from pytest_toll.transcripts.summary import FileSummary, Repeat

#: Bump when the report made from the same summaries changes, so cached reports are not served.
REPORT_VERSION = 2

SUSPICIOUS_MIN_JUDGED = 3
SUSPICIOUS_OK_RATIO = 0.5


def nearest_rank(sorted_values: Sequence[int], fraction: float) -> int:
    """The nearest-rank percentile: an observed value, never an interpolation."""
    if not sorted_values:
        return 0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def nearest_ranks(counts: Mapping[int, int], fractions: Sequence[float]) -> list[int]:
    """The nearest-rank percentiles of values given as ``{value: how many}``: the same
    figures as :func:`nearest_rank` over the sorted values, without a list of every value
    (a shape's ok calls number in the millions in a 10 GB history, their distinct token
    counts in the thousands)."""
    total = sum(counts.values())
    if not total:
        return [0 for _ in fractions]
    wanted = sorted(
        (max(1, math.ceil(fraction * total)), place) for place, fraction in enumerate(fractions)
    )
    found = [0] * len(fractions)
    seen = 0
    pending = iter(wanted)
    rank, place = next(pending)
    for value in sorted(counts):
        seen += counts[value]
        while seen >= rank:
            found[place] = value
            step = next(pending, None)
            if step is None:
                return found
            rank, place = step
    return found  # unreachable: the last rank is at most the total


@dataclass(frozen=True)
class ShapeRow:
    shape: str
    calls: int
    ok: int
    ok_tokens: int
    median: int
    p90: int
    by_outcome: dict[str, int]
    suspicious: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "calls": self.calls,
            "ok": self.ok,
            "ok_tokens": self.ok_tokens,
            "median": self.median,
            "p90": self.p90,
            "by_outcome": dict(self.by_outcome),
            "suspicious": self.suspicious,
        }


def is_suspicious(by_outcome: Mapping[str, int]) -> bool:
    judged = sum(by_outcome.get(outcome, 0) for outcome in JUDGED)
    return (
        judged >= SUSPICIOUS_MIN_JUDGED
        and by_outcome.get(OUTCOME_OK, 0) / judged < SUSPICIOUS_OK_RATIO
    )


@dataclass
class ScanReport:
    """The toll table over many files; ``as_dict()`` is the ``toll scan --json`` contract."""

    sessions: int
    calls: int
    unreadable_lines: int
    shapes: list[ShapeRow]
    repeats: list[Repeat]
    wasted_tokens: int
    ok_tokens: int
    admitted_tokens: int
    prompt_tokens: int
    files: int = 0
    orphan_results: int = 0
    images: int = 0
    problems: dict[str, list[str]] = field(default_factory=dict)
    unreadable_by_file: dict[str, int] = field(default_factory=dict)
    tokenizer: str = TOKENIZER_NAME
    #: sessions read per agent (claude, codex, gemini, …), in the agents' order
    agents: dict[str, int] = field(default_factory=dict)
    #: sessions whose calls were paired with their results by order (their format has no ids)
    paired_by_order: list[str] = field(default_factory=list)

    @property
    def waste_ratio(self) -> float:
        return round(self.wasted_tokens / self.ok_tokens, 6) if self.ok_tokens else 0.0

    @property
    def amplification(self) -> float | None:
        """Cumulative prompt tokens over admitted tool tokens: how often a toll is re-sent."""
        if not self.prompt_tokens or not self.admitted_tokens:
            return None
        return round(self.prompt_tokens / self.admitted_tokens, 2)

    def top(self, count: int | None) -> ScanReport:
        if count is None:
            return self
        copy = ScanReport(**{**self.__dict__})
        copy.shapes = self.shapes[:count]
        copy.repeats = self.repeats[:count]
        return copy

    def to_json(self) -> dict[str, Any]:
        """Every field, as plain data (the cache's form; ``as_dict`` is the CLI's contract)."""
        data = dict(self.__dict__)
        data["shapes"] = [row.as_dict() for row in self.shapes]
        data["repeats"] = [repeat.to_json() for repeat in self.repeats]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ScanReport:
        values = dict(data)
        values["shapes"] = [ShapeRow(**row) for row in data["shapes"]]
        values["repeats"] = [Repeat(**repeat) for repeat in data["repeats"]]
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "tolls",
            "tokenizer": self.tokenizer,
            "sessions": self.sessions,
            "calls": self.calls,
            "unreadable_lines": self.unreadable_lines,
            "shapes": [row.as_dict() for row in self.shapes],
            "repeats": [repeat.as_dict() for repeat in self.repeats],
            "wasted_tokens": self.wasted_tokens,
            "waste_ratio": self.waste_ratio,
            "amplification": self.amplification,
            "agents": dict(self.agents),
            "paired_by_order": list(self.paired_by_order),
        }


#: DigestSet's tables: 2**8, picked by a digest's top byte, each starting at 16 slots
_TABLE_SHIFT = 56
_TABLES = 1 << (64 - _TABLE_SHIFT)
_FIRST_SLOTS = 16


class DigestSet:
    """Distinct byte strings, kept as 64-bit digests in flat arrays (8 bytes a slot, at most
    half the slots full, so 16–32 bytes a key): a scan holds one per call and turn it has
    counted, and sets of 16-byte digests and message ids grew a 1 GB scan's parent by 28 MB
    (its 230,962 keys, by tracemalloc). Two different keys share a digest with probability
    about n² / 2⁶⁵: 1.4 × 10⁻⁹ for those keys, 6 × 10⁻⁸ for a 10 GB history's 1.5 million
    calls.

    The digests are spread by their top byte over 256 tables, each grown on its own: while a
    table doubles, its old and new arrays are both alive, and that is 3/256 of the whole
    rather than three times the set's last size (one table of 1.5 million keys grew from
    16 MB to 32 MB with the 16 MB still held)."""

    __slots__ = ("_counts", "_masks", "_size", "_tables")

    def __init__(self) -> None:
        self._tables = [array("Q", bytes(8 * _FIRST_SLOTS)) for _ in range(_TABLES)]
        self._masks = [_FIRST_SLOTS - 1] * _TABLES
        self._counts = [0] * _TABLES
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, data: bytes) -> bool:
        """Keep ``data``'s digest; False when it was already kept."""
        key = int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") or 1
        table = key >> _TABLE_SHIFT  # the top byte picks the table, the low bits the slot
        slots, mask = self._tables[table], self._masks[table]
        index = key & mask
        while True:  # linear probing; 0 marks an empty slot
            found = slots[index]
            if found == key:
                return False
            if not found:
                break
            index = (index + 1) & mask
        slots[index] = key
        self._size += 1
        counts = self._counts
        counts[table] += 1
        if 2 * counts[table] > mask:
            self._grow(table)
        return True

    def _grow(self, table: int) -> None:
        old = self._tables[table]
        self._masks[table] = mask = 2 * len(old) - 1
        self._tables[table] = slots = array("Q", bytes(8 * (mask + 1)))
        for key in old:
            if key:
                index = key & mask
                while slots[index]:
                    index = (index + 1) & mask
                slots[index] = key


@dataclass
class _ShapeTotals:
    calls: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)
    #: how many ok calls returned each token count: grows with the distinct counts, not
    #: with the calls, and the exact median and p90 are read off it
    ok_tokens: dict[int, int] = field(default_factory=dict)


def build_report(summaries: Iterable[FileSummary]) -> ScanReport:
    merged: dict[str, _ShapeTotals] = {}
    repeats: dict[tuple[str, str, str, int], Repeat] = {}
    # One copy of each session id and shape among the repeats kept: summaries read from the
    # cache or from a worker bring their own copy of each string with each repeat.
    strings: dict[str, str] = {}
    # Digests of the calls and turns counted, so the copies a resumed session's file holds
    # are counted once: the only state that grows with the history.
    seen_calls = DigestSet()
    seen_turns = DigestSet()
    sessions: set[str] = set()
    by_agent: dict[str, set[str]] = {}
    by_order: set[str] = set()
    unreadable = orphans = admitted = prompt = images = files = 0
    problems: dict[str, list[str]] = {}
    unreadable_by_file: dict[str, int] = {}
    for summary in summaries:
        files += 1
        sessions.update(summary.sessions)
        by_agent.setdefault(summary.format, set()).update(summary.sessions)
        by_order.update(summary.paired_by_order)
        unreadable += summary.unreadable_lines
        if summary.unreadable_lines:
            problems[summary.path] = summary.problems
            unreadable_by_file[summary.path] = summary.unreadable_lines
        orphans += summary.orphan_results
        images += summary.images
        for message_id, prompt_tokens in summary.turn_log:
            if message_id is not None and not seen_turns.add(
                message_id.encode("utf-8", "surrogatepass")
            ):
                continue
            prompt += prompt_tokens
        for call_id, shape, outcome, tokens in summary.call_log:
            call = f"{call_id}\0{shape}\0{outcome}\0{tokens}".encode("utf-8", "surrogatepass")
            if not seen_calls.add(call):
                continue  # the same call copied into a resumed session's file
            entry = merged.get(shape)
            if entry is None:
                entry = merged[shape] = _ShapeTotals()
            entry.calls += 1
            entry.by_outcome[outcome] = entry.by_outcome.get(outcome, 0) + 1
            if outcome == OUTCOME_OK:
                ok_tokens = entry.ok_tokens
                ok_tokens[tokens] = ok_tokens.get(tokens, 0) + 1
            if outcome != OUTCOME_UNPAIRED and outcome != OUTCOME_NOT_RECORDED:
                admitted += tokens
        for repeat in summary.repeats:
            same = (
                repeat.first_call or repeat.session,
                repeat.shape,
                repeat.target,
                repeat.tokens_each,
            )
            known = repeats.get(same)
            if known is None or known.times < repeat.times:
                repeats[same] = _sharing(repeat, strings)
    rows = []
    for shape, tally in merged.items():
        counts = tally.ok_tokens
        median, p90 = nearest_ranks(counts, (0.5, 0.9))
        by_outcome: dict[str, int] = {
            outcome: tally.by_outcome[outcome]
            for outcome in OUTCOMES
            if tally.by_outcome.get(outcome)
        }
        rows.append(
            ShapeRow(
                shape,
                tally.calls,
                sum(counts.values()),
                sum(value * times for value, times in counts.items()),
                median,
                p90,
                by_outcome,
                is_suspicious(by_outcome),
            )
        )
    rows.sort(key=lambda row: (-row.ok_tokens, -row.calls, row.shape))
    ranked = sorted(
        repeats.values(),
        key=lambda repeat: (
            -repeat.wasted,
            -repeat.times,
            repeat.session,
            repeat.shape,
            repeat.target,
        ),
    )
    return ScanReport(
        sessions=len(sessions),
        calls=sum(row.calls for row in rows),
        unreadable_lines=unreadable,
        shapes=rows,
        repeats=ranked,
        wasted_tokens=sum(repeat.wasted for repeat in ranked),
        ok_tokens=sum(row.ok_tokens for row in rows),
        admitted_tokens=admitted,
        prompt_tokens=prompt,
        files=files,
        orphan_results=orphans,
        images=images,
        problems=problems,
        unreadable_by_file=unreadable_by_file,
        agents={
            agent: len(by_agent[agent])
            for agent in sorted(by_agent, key=lambda name: (_agent_rank(name), name))
            if by_agent[agent]
        },
        paired_by_order=sorted(by_order),
    )


def _sharing(repeat: Repeat, strings: dict[str, str]) -> Repeat:
    """``repeat`` with the session id and shape already kept, when they are."""
    session = strings.setdefault(repeat.session, repeat.session)
    shape = strings.setdefault(repeat.shape, repeat.shape)
    if session is repeat.session and shape is repeat.shape:
        return repeat
    return replace(repeat, session=session, shape=shape)


def _agent_rank(name: str) -> int:
    return AGENTS.index(name) if name in AGENTS else len(AGENTS)
