"""One transcript file reduced to a :class:`FileSummary`: plain, cacheable data.

Calls are paired with their results by id (never by adjacency), classified
(:mod:`~pytest_toll.transcripts.outcomes`), shaped (:mod:`~pytest_toll.transcripts.shapes`)
and counted; repeats are found within each session; with ``drift`` on, each usable turn's
reported prompt growth is set beside our count of what was added.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.limits import MAX_TRANSCRIPT_LINE_BYTES
from pytest_toll.core.textio import open_regular
from pytest_toll.transcripts.counting import image_tokens, text_counter
from pytest_toll.transcripts.formats import (
    BY_NAME,
    read_records,
    results_recorded,
    transcript_format,
)
from pytest_toll.transcripts.outcomes import (
    OUTCOME_ERROR,
    OUTCOME_NOT_RECORDED,
    OUTCOME_OK,
    OUTCOME_TRUNCATED,
    OUTCOME_UNPAIRED,
    CallOutcome,
    outcome_of,
)
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    CutResult,
    PairedByOrder,
    ResultRecord,
    TextRecord,
    UsageRecord,
)
from pytest_toll.transcripts.shapes import MUTATING_TOOLS, normal_path, shape_and_target

#: Bump when a summary's meaning changes, so stale cache entries are ignored.
SUMMARY_VERSION = 7


@dataclass
class ShapeTally:
    calls: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)
    ok_tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Repeat:
    """One target fetched more than once in a session. Slotted: a 10 GB history has 76,889,
    and a ``__dict__`` each was most of their memory while the report merged them."""

    session: str
    shape: str
    target: str
    times: int
    tokens_each: int
    #: the id of the first fetch: the same repeat copied into a resumed session's file is one
    first_call: str = ""

    @property
    def wasted(self) -> int:
        return self.tokens_each * (self.times - 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "shape": self.shape,
            "target": self.target,
            "times": self.times,
            "tokens_each": self.tokens_each,
            "wasted": self.wasted,
        }

    def to_json(self) -> dict[str, Any]:
        """Every field, as plain data (the cache's form; ``Repeat(**data)`` reads it back)."""
        return {
            "session": self.session,
            "shape": self.shape,
            "target": self.target,
            "times": self.times,
            "tokens_each": self.tokens_each,
            "first_call": self.first_call,
        }


@dataclass
class FileSummary:
    """Everything a report needs from one transcript file, as plain (cacheable) data."""

    path: str
    format: str
    sessions: list[str] = field(default_factory=list)
    unreadable_lines: int = 0
    problems: list[str] = field(default_factory=list)
    orphan_results: int = 0
    shapes: dict[str, ShapeTally] = field(default_factory=dict)
    repeats: list[Repeat] = field(default_factory=list)
    admitted_tokens: int = 0
    images: int = 0
    turns: int = 0
    prompt_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: per usable turn: [message id, model, reported growth, our o200k count of what was added]
    drift: list[list[Any]] | None = None
    #: [call id, shape, outcome, tokens] per call and [message id, prompt] per turn: a resumed
    #: Claude Code session copies earlier messages into its new file, so a report over many
    #: files counts each call and turn once by these keys.
    call_log: list[list[Any]] = field(default_factory=list)
    turn_log: list[list[Any]] = field(default_factory=list)
    #: sessions whose calls were paired with their results by order: the format has no ids
    paired_by_order: list[str] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(tally.calls for tally in self.shapes.values())

    def to_json(self) -> dict[str, Any]:
        # Shallow, by hand: ``asdict`` deep-copies every call_log row and repeat (~5 µs per
        # call by timeit), a third of the parent's CPU time in a cold 1 GB scan (cProfile).
        data = dict(self.__dict__)
        data["shapes"] = {name: dict(tally.__dict__) for name, tally in self.shapes.items()}
        data["repeats"] = [repeat.to_json() for repeat in self.repeats]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileSummary:
        values = dict(data)
        values["shapes"] = {name: ShapeTally(**tally) for name, tally in data["shapes"].items()}
        values["repeats"] = [Repeat(**repeat) for repeat in data["repeats"]]
        return cls(**values)


_PROBLEMS_KEPT = 5


@dataclass
class _Pending:
    session: str
    shape: str
    repeat_key: tuple[str, str, str, int] | None


# A *fact* is what the fold needs from one record, with the costly work (parsing, counting,
# shaping) already done: plain lists, so a worker returns them cheaply and the cache stores
# them as JSON. One segment's facts are a list of:
#   ["C", session, call id, shape, target | None, mutating, file | None, epoch rule]
#   ["R", session, call id, outcome, tokens, images]
#   ["U", session, message id | None, model, prompt, input, output, cache read, cache write]
#   ["T", session, tokens, images]      (conversation text, drift only)
#   ["B", session]                      (compaction boundary)
#   ["O", session]                      (the session's calls were paired by order)
#   ["X", line number in the segment, reason]
Fact = list[Any]
# What a repeat's epoch counts: edits of the read file, nothing, or any edit in the session.
_EPOCH_OF_PATH, _EPOCH_NONE, _EPOCH_OF_SESSION = "P", "0", "S"


@dataclass
class SegmentFacts:
    """The facts of one byte range of a file and how many lines it holds."""

    facts: list[Fact]
    lines: int


def _call_fact(record: CallRecord) -> Fact:
    arguments = record.input
    file = None
    if record.tool in MUTATING_TOOLS or record.tool in ("Read", "NotebookRead"):
        file = normal_path(arguments.get("file_path", arguments.get("notebook_path")), record.cwd)
    if record.tool in ("Read", "NotebookRead"):
        epoch = _EPOCH_OF_PATH
    elif record.tool in ("WebFetch", "WebSearch") or record.tool.startswith("mcp__"):
        epoch = _EPOCH_NONE
    else:
        epoch = _EPOCH_OF_SESSION
    shape, target = shape_and_target(record)
    return [
        "C",
        record.session,
        record.call_id,
        shape,
        target,
        record.tool in MUTATING_TOOLS,
        file,
        epoch,
    ]


def segment_facts(
    path: Path,
    start: int = 0,
    end: int | None = None,
    *,
    drift: bool = False,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    count: Callable[[str], int] | None = None,
    count_lines: bool = False,
) -> SegmentFacts:
    """Read one byte range of a transcript into facts (never raises on content);
    ``count_lines`` when a later segment's line numbers follow on from this one's."""
    count = count or text_counter()
    facts: list[Fact] = []
    append = facts.append
    for record in read_records(
        path, with_text=drift, max_line_bytes=max_line_bytes, start=start, end=end
    ):
        # By exact type, most frequent first: a scan makes a fact per call and result.
        if type(record) is ResultRecord:
            tokens = count(record.text) if record.text else 0
            if record.images:
                tokens += sum(map(image_tokens, record.images))
            outcome = outcome_of(record)
            append(["R", record.session, record.call_id, outcome, tokens, len(record.images)])
        elif type(record) is CallRecord:
            append(_call_fact(record))
        elif type(record) is UsageRecord:
            append(
                [
                    "U",
                    record.session,
                    record.message_id,
                    record.model,
                    record.prompt,
                    record.input,
                    record.output,
                    record.cache_read,
                    record.cache_creation,
                ]
            )
        elif type(record) is TextRecord:
            tokens = count(record.text) if record.text else 0
            append(["T", record.session, tokens, len(record.images)])
        elif type(record) is BoundaryRecord:
            append(["B", record.session])
        elif type(record) is BadLine:
            append(["X", record.line, record.reason])
        elif type(record) is CutResult:
            tokens = count(record.text) if record.text else 0
            outcome = OUTCOME_ERROR if record.is_error else OUTCOME_TRUNCATED
            append(["R", record.session, record.call_id, outcome, tokens, len(record.images)])
        elif type(record) is PairedByOrder:
            append(["O", record.session])
    lines = _line_count(path, start, end) if count_lines else 0
    return SegmentFacts(facts, lines)


def _line_count(path: Path, start: int, end: int | None) -> int:
    """Lines in a byte range as :func:`iter_lines` numbers them (blank ones included)."""
    with open_regular(path) as stream:
        stream.seek(start)
        remaining = (end if end is not None else 1 << 62) - start
        newlines = 0
        last = b""
        while remaining > 0:
            chunk = stream.read(min(remaining, 1 << 20))
            if not chunk:
                break
            newlines += chunk.count(b"\n")
            last = chunk
            remaining -= len(chunk)
        return newlines + (1 if last and not last.endswith(b"\n") else 0)


def fold(
    path: str, format: str, segments: Iterable[SegmentFacts], drift: bool = False
) -> FileSummary:
    """One file's facts, segment after segment in file order, reduced to its summary: calls
    paired with results by id, outcomes tallied by shape, repeats found, turns added up."""
    summary = FileSummary(path, format, drift=[] if drift else None)
    sessions: dict[str, None] = {}
    calls: dict[str, _Pending] = {}
    early_results: dict[str, tuple[CallOutcome, int]] = {}
    paired: set[str] = set()
    # A call or turn written again in a later segment is dropped here as the reader drops it
    # within one (Claude Code's per-block lines; a format read whole is its reader's own).
    seen_calls: set[str] = set()
    seen_messages: set[str] = set()
    fetches: dict[tuple[str, str, str, int], list[tuple[str, int]]] = {}
    # Re-reading a file after editing it is not waste: edits open a new "epoch" for that path
    # (and, for commands and searches, for the whole session).
    path_epochs: Tally[tuple[str, str]] = Tally()
    session_epochs: Tally[str] = Tally()
    # drift: per session, the last reported prompt, our count since, and whether it is usable
    last_prompt: dict[str, int] = {}
    added: Tally[str] = Tally()
    tainted: set[str] = set()
    segmented = format in BY_NAME and BY_NAME[format].segmented
    # A format that never writes results leaves its calls unanswered by design, not unpaired.
    unanswered: CallOutcome = OUTCOME_UNPAIRED if results_recorded(format) else OUTCOME_NOT_RECORDED

    def tally(call_id: str, shape: str, outcome: CallOutcome, tokens: int) -> None:
        summary.call_log.append([call_id, shape, outcome, tokens])
        # (not setdefault: that builds a ShapeTally, its dict and its list, for every call)
        entry = summary.shapes.get(shape)
        if entry is None:
            entry = summary.shapes[shape] = ShapeTally()
        entry.calls += 1
        entry.by_outcome[outcome] = entry.by_outcome.get(outcome, 0) + 1
        if outcome == OUTCOME_OK:
            entry.ok_tokens.append(tokens)

    def settle(call_id: str, pending: _Pending, outcome: CallOutcome, tokens: int) -> None:
        tally(call_id, pending.shape, outcome, tokens)
        if outcome == OUTCOME_OK and pending.repeat_key is not None:
            fetches.setdefault(pending.repeat_key, []).append((call_id, tokens))

    offset = 0
    for segment in segments:
        for fact in segment.facts:
            letter = fact[0]
            if letter == "X":
                summary.unreadable_lines += 1
                if len(summary.problems) < _PROBLEMS_KEPT:
                    summary.problems.append(f"line {offset + fact[1]}: {fact[2]}")
                continue
            session = fact[1]
            if letter == "C":
                _, _, call_id, shape, target, mutating, file, epoch_rule = fact
                if segmented:
                    if call_id in seen_calls:
                        continue
                    seen_calls.add(call_id)
                sessions.setdefault(session, None)
                if mutating:
                    session_epochs[session] += 1
                    if file:
                        path_epochs[(session, file)] += 1
                key = None
                if target is not None:
                    if epoch_rule == _EPOCH_OF_PATH:
                        epoch = path_epochs[(session, file or "")]
                    elif epoch_rule == _EPOCH_NONE:
                        epoch = 0
                    else:
                        epoch = session_epochs[session]
                    key = (session, shape, target, epoch)
                pending = _Pending(session, shape, key)
                early = early_results.pop(call_id, None)
                if early is not None:
                    paired.add(call_id)
                    summary.admitted_tokens += early[1]
                    settle(call_id, pending, *early)
                else:
                    calls[call_id] = pending
            elif letter == "R":
                _, _, call_id, outcome, tokens, images = fact
                sessions.setdefault(session, None)
                summary.images += images
                found = calls.pop(call_id, None)
                if found is not None:
                    paired.add(call_id)
                    summary.admitted_tokens += tokens
                    settle(call_id, found, outcome, tokens)
                elif call_id in paired:
                    pass  # the same result written twice: counted once
                elif call_id in early_results:
                    summary.orphan_results += 1
                else:
                    # Answered before its call was written (out of order): hold the verdict.
                    early_results[call_id] = (outcome, tokens)
                if drift:
                    added[session] += tokens
                    if images:
                        tainted.add(session)
            elif letter == "U":
                _, _, message_id, model, prompt, input_, output, cache_read, cache_write = fact
                if message_id is not None:
                    if message_id in seen_messages and segmented:
                        continue
                    seen_messages.add(message_id)
                sessions.setdefault(session, None)
                summary.turns += 1
                summary.prompt_tokens += prompt
                summary.turn_log.append([message_id, prompt])
                summary.input_tokens += input_
                summary.output_tokens += output
                summary.cache_read_tokens += cache_read
                summary.cache_write_tokens += cache_write
                if summary.drift is not None:
                    previous = last_prompt.get(session)
                    growth = prompt - previous if previous is not None else 0
                    if growth > 0 and added[session] > 0 and session not in tainted:
                        summary.drift.append([message_id, model, growth, added[session]])
                    last_prompt[session] = prompt
                    added[session] = 0
                    tainted.discard(session)
            elif letter == "T":
                sessions.setdefault(session, None)
                added[session] += fact[2]
                if fact[3]:
                    tainted.add(session)
            elif letter == "B":
                sessions.setdefault(session, None)
                last_prompt.pop(session, None)
                added[session] = 0
            elif letter == "O" and session not in summary.paired_by_order:
                summary.paired_by_order.append(session)
        offset += segment.lines
    for call_id, pending in calls.items():
        tally(call_id, pending.shape, unanswered, 0)
    # Results whose call never appeared are not attributed to any shape.
    summary.orphan_results += len(early_results)
    summary.sessions = list(sessions)
    for (session, shape, target, _), fetched in fetches.items():
        if len(fetched) >= 2:
            each = min(tokens for _, tokens in fetched)
            summary.repeats.append(
                Repeat(session, shape, target, len(fetched), each, fetched[0][0])
            )
    return summary


def summarize_file(
    path: Path,
    *,
    drift: bool = False,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    count: Callable[[str], int] | None = None,
) -> FileSummary:
    """Read one transcript and reduce it to a :class:`FileSummary` (never raises on content)."""
    facts = segment_facts(path, drift=drift, max_line_bytes=max_line_bytes, count=count)
    return fold(str(path), transcript_format(path), [facts], drift)
