"""The scan report: file summaries merged into one toll table (``toll scan``, ``toll repeats``).

Each call and turn is counted once across files (a resumed Claude Code session copies earlier
messages into its new file); shapes are ranked by their ok tokens, with the nearest-rank
median and p90; a shape whose judged calls are mostly not ``ok`` is *suspicious*; repeats are
ranked by the tokens they wasted, every one counted and the costliest kept. What grows with
the history (calls, turns and repeats seen) is held in bounded memory, the rest on disk.
"""

from __future__ import annotations

import heapq
import marshal
import math
import struct
from collections.abc import Iterable, Iterator, Mapping, Sequence
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
from pytest_toll.transcripts.seen import FirstSeen, SetAside
from pytest_toll.transcripts.summary import FileSummary, Repeat

#: Bump when the report made from the same summaries changes, so cached reports are not served.
REPORT_VERSION = 3

#: The costliest repeats a report keeps: a 10 GB history has about 78,000 and `toll repeats`
#: shows 20 unless told; every one is in ``wasted_tokens`` and ``repeats_total``.
REPEATS_KEPT = 1_000
#: Distinct repeats merged in memory (a few hundred bytes each) before the rest are set aside.
REPEATS_IN_MEMORY = 1 << 14

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
    #: every distinct repeat; ``repeats`` holds the ``REPEATS_KEPT`` costliest
    repeats_total: int = 0

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
            "repeats_total": self.repeats_total,
            "wasted_tokens": self.wasted_tokens,
            "waste_ratio": self.waste_ratio,
            "amplification": self.amplification,
            "agents": dict(self.agents),
            "paired_by_order": list(self.paired_by_order),
        }


@dataclass
class _ShapeTotals:
    calls: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)
    #: how many ok calls returned each token count: grows with the distinct counts, not
    #: with the calls, and the exact median and p90 are read off it
    ok_tokens: dict[int, int] = field(default_factory=dict)


@dataclass
class _Merged:
    """Each shape's totals, and the tokens admitted into the context, over distinct calls."""

    shapes: dict[str, _ShapeTotals] = field(default_factory=dict)
    admitted: int = 0

    def count(self, shape: str, outcome: str, tokens: int) -> None:
        entry = self.shapes.get(shape)
        if entry is None:
            entry = self.shapes[shape] = _ShapeTotals()
        entry.calls += 1
        entry.by_outcome[outcome] = entry.by_outcome.get(outcome, 0) + 1
        if outcome == OUTCOME_OK:
            ok_tokens = entry.ok_tokens
            ok_tokens[tokens] = ok_tokens.get(tokens, 0) + 1
        if outcome != OUTCOME_UNPAIRED and outcome != OUTCOME_NOT_RECORDED:
            self.admitted += tokens


def build_report(summaries: Iterable[FileSummary]) -> ScanReport:
    merged = _Merged()
    # The calls and turns counted, so the copies a resumed session's file holds are counted
    # once, in bounded memory (seen.py), as the repeats are merged. A call set aside is
    # written with its shape and outcome by number.
    numbers: dict[str, int] = {}
    sessions: set[str] = set()
    by_agent: dict[str, set[str]] = {}
    by_order: set[str] = set()
    unreadable = orphans = prompt = images = files = 0
    problems: dict[str, list[str]] = {}
    unreadable_by_file: dict[str, int] = {}
    with FirstSeen("IIq") as seen_calls, FirstSeen("q") as seen_turns, _Repeats() as repeats:
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
                if message_id is None or seen_turns.add(
                    message_id.encode("utf-8", "surrogatepass"), prompt_tokens
                ):
                    prompt += prompt_tokens
            for call_id, shape, outcome, tokens in summary.call_log:
                call = f"{call_id}\0{shape}\0{outcome}\0{tokens}".encode("utf-8", "surrogatepass")
                shape_number = numbers.setdefault(shape, len(numbers))
                outcome_number = numbers.setdefault(outcome, len(numbers))
                if seen_calls.add(call, shape_number, outcome_number, tokens):
                    merged.count(shape, outcome, tokens)
            for repeat in summary.repeats:
                repeats.add(repeat)
        prompt += sum(tokens for (tokens,) in seen_turns.later())
        named = list(numbers)
        for shape_number, outcome_number, tokens in seen_calls.later():
            merged.count(named[shape_number], named[outcome_number], tokens)
        ranked, wasted, repeats_total = repeats.ranked(REPEATS_KEPT)
    rows = []
    for shape, tally in merged.shapes.items():
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
    return ScanReport(
        sessions=len(sessions),
        calls=sum(row.calls for row in rows),
        unreadable_lines=unreadable,
        shapes=rows,
        repeats=ranked,
        wasted_tokens=wasted,
        repeats_total=repeats_total,
        ok_tokens=sum(row.ok_tokens for row in rows),
        admitted_tokens=merged.admitted,
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


_Same = tuple[str, str, str, int]
_RECORD_SIZE = struct.Struct("<I")
_UNSIGNED = (1 << 64) - 1


def _same(repeat: Repeat) -> _Same:
    """What makes two repeats one: the same first fetch (a resumed session's file copies it),
    shape, target and size."""
    return (repeat.first_call or repeat.session, repeat.shape, repeat.target, repeat.tokens_each)


def _rank(repeat: Repeat) -> tuple[int, int, str, str, str, str, int]:
    """Costliest first; the rest of the order is total, so the repeats kept and their order
    do not depend on the order the files were merged in."""
    return (
        -repeat.wasted,
        -repeat.times,
        repeat.session,
        repeat.shape,
        repeat.target,
        repeat.first_call,
        repeat.tokens_each,
    )


def _supersedes(repeat: Repeat, known: Repeat | None) -> bool:
    """Whether ``repeat`` is the copy to keep over ``known``: the most times, the first of
    equals."""
    return known is None or known.times < repeat.times


class _Repeats(SetAside):
    """Each repeat once, its copy with the most times (the first of equals), in bounded
    memory: the first ``REPEATS_IN_MEMORY`` distinct ones merged in a dict, later new ones set
    aside and merged a partition at a time at the end, so the ranking and totals are exact."""

    def __init__(self) -> None:
        super().__init__()
        self.known: dict[_Same, Repeat] = {}
        # One copy of each session id and shape among the repeats kept: summaries read from
        # the cache or from a worker bring their own copy of each string with each repeat.
        self.strings: dict[str, str] = {}

    def add(self, repeat: Repeat) -> None:
        same = _same(repeat)
        known = self.known.get(same)
        if known is None and len(self.known) >= REPEATS_IN_MEMORY:
            record = marshal.dumps(repeat.to_json())
            self.write(hash(same) & _UNSIGNED, _RECORD_SIZE.pack(len(record)) + record)
        elif _supersedes(repeat, known):
            self.known[same] = _sharing(repeat, self.strings)

    def _merged(self) -> Iterator[Repeat]:
        yield from self.known.values()
        for records in self.read_back():
            merged: dict[_Same, Repeat] = {}
            for repeat in _unpacked(records):
                same = _same(repeat)
                if _supersedes(repeat, merged.get(same)):
                    merged[same] = repeat
            yield from merged.values()

    def ranked(self, keep: int) -> tuple[list[Repeat], int, int]:
        """The ``keep`` costliest, ranked, the tokens every repeat wasted, and how many
        repeats there are."""
        totals = [0, 0]

        def tallied() -> Iterator[Repeat]:
            for repeat in self._merged():
                totals[0] += repeat.wasted
                totals[1] += 1
                yield repeat

        top = heapq.nsmallest(keep, tallied(), key=_rank)
        return top, totals[0], totals[1]


def _unpacked(records: bytes) -> Iterator[Repeat]:
    view, at = memoryview(records), 0
    while at < len(view):
        (size,) = _RECORD_SIZE.unpack_from(view, at)
        at += _RECORD_SIZE.size
        yield Repeat(**marshal.loads(view[at : at + size]))
        at += size


def _sharing(repeat: Repeat, strings: dict[str, str]) -> Repeat:
    """``repeat`` with the session id and shape already kept, when they are."""
    session = strings.setdefault(repeat.session, repeat.session)
    shape = strings.setdefault(repeat.shape, repeat.shape)
    if session is repeat.session and shape is repeat.shape:
        return repeat
    return replace(repeat, session=session, shape=shape)


def _agent_rank(name: str) -> int:
    return AGENTS.index(name) if name in AGENTS else len(AGENTS)
