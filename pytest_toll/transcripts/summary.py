"""One transcript file reduced to a :class:`FileSummary`: plain, cacheable data.

Calls are paired with their results by id (never by adjacency), classified
(:mod:`~pytest_toll.transcripts.outcomes`), shaped (:mod:`~pytest_toll.transcripts.shapes`)
and counted; repeats are found within each session; with ``drift`` on, each usable turn's
reported prompt growth is set beside our count of what was added.
"""

from __future__ import annotations

from collections import Counter as Tally
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.transcripts.counting import image_tokens, text_counter
from pytest_toll.transcripts.outcomes import OUTCOME_OK, OUTCOME_UNPAIRED, Outcome, outcome_of
from pytest_toll.transcripts.readers import (
    MAX_LINE_BYTES,
    BadLine,
    BoundaryRecord,
    CallRecord,
    ResultRecord,
    TextRecord,
    UsageRecord,
    read_records,
    transcript_format,
)
from pytest_toll.transcripts.shapes import MUTATING_TOOLS, normal_path, shape_of, target_of

#: Bump when a summary's meaning changes, so stale cache entries are ignored.
SUMMARY_VERSION = 4


@dataclass
class ShapeTally:
    calls: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)
    ok_tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Repeat:
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

    @property
    def calls(self) -> int:
        return sum(tally.calls for tally in self.shapes.values())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["repeats"] = [asdict(repeat) for repeat in self.repeats]
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


def summarize_file(
    path: Path,
    *,
    drift: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    count: Callable[[str], int] | None = None,
) -> FileSummary:
    """Read one transcript and reduce it to a :class:`FileSummary` (never raises on content)."""
    count = count or text_counter()
    summary = FileSummary(str(path), transcript_format(path), drift=[] if drift else None)
    sessions: dict[str, None] = {}
    calls: dict[str, _Pending] = {}
    early_results: dict[str, tuple[Outcome, int]] = {}
    paired: set[str] = set()
    fetches: dict[tuple[str, str, str, int], list[tuple[str, int]]] = {}
    # Re-reading a file after editing it is not waste: edits open a new "epoch" for that path
    # (and, for commands and searches, for the whole session).
    path_epochs: Tally[tuple[str, str]] = Tally()
    session_epochs: Tally[str] = Tally()
    # drift: per session, the last reported prompt, our count since, and whether it is usable
    last_prompt: dict[str, int] = {}
    added: Tally[str] = Tally()
    tainted: set[str] = set()

    def tally(call_id: str, shape: str, outcome: Outcome, tokens: int) -> None:
        summary.call_log.append([call_id, shape, outcome, tokens])
        entry = summary.shapes.setdefault(shape, ShapeTally())
        entry.calls += 1
        entry.by_outcome[outcome] = entry.by_outcome.get(outcome, 0) + 1
        if outcome == OUTCOME_OK:
            entry.ok_tokens.append(tokens)

    def settle(call_id: str, pending: _Pending, outcome: Outcome, tokens: int) -> None:
        tally(call_id, pending.shape, outcome, tokens)
        if outcome == OUTCOME_OK and pending.repeat_key is not None:
            fetches.setdefault(pending.repeat_key, []).append((call_id, tokens))

    for record in read_records(path, with_text=drift, max_line_bytes=max_line_bytes):
        if isinstance(record, BadLine):
            summary.unreadable_lines += 1
            if len(summary.problems) < _PROBLEMS_KEPT:
                summary.problems.append(f"line {record.line}: {record.reason}")
            continue
        session = record.session
        sessions.setdefault(session, None)
        if isinstance(record, CallRecord):
            if record.tool in MUTATING_TOOLS:
                session_epochs[session] += 1
                touched = normal_path(
                    record.input.get("file_path", record.input.get("notebook_path")), record.cwd
                )
                if touched:
                    path_epochs[(session, touched)] += 1
            shape = shape_of(record.tool, record.input)
            target = target_of(record)
            key = None
            if target is not None:
                if record.tool in ("Read", "NotebookRead"):
                    read_path = normal_path(
                        record.input.get("file_path", record.input.get("notebook_path")), record.cwd
                    )
                    epoch = path_epochs[(session, read_path or "")]
                elif record.tool in ("WebFetch", "WebSearch") or record.tool.startswith("mcp__"):
                    epoch = 0
                else:
                    epoch = session_epochs[session]
                key = (session, shape, target, epoch)
            pending = _Pending(session, shape, key)
            early = early_results.pop(record.call_id, None)
            if early is not None:
                paired.add(record.call_id)
                summary.admitted_tokens += early[1]
                settle(record.call_id, pending, *early)
            else:
                calls[record.call_id] = pending
        elif isinstance(record, ResultRecord):
            tokens = (count(record.text) if record.text else 0) + sum(
                map(image_tokens, record.images)
            )
            summary.images += len(record.images)
            outcome = outcome_of(record)
            found = calls.pop(record.call_id, None)
            if found is not None:
                paired.add(record.call_id)
                summary.admitted_tokens += tokens
                settle(record.call_id, found, outcome, tokens)
            elif record.call_id in paired:
                pass  # the same result written twice: counted once
            elif record.call_id in early_results:
                summary.orphan_results += 1
            else:
                # Possibly answered before its call was written (out of order): hold the verdict.
                early_results[record.call_id] = (outcome, tokens)
            if drift:
                added[session] += tokens
                if record.images:
                    tainted.add(session)
        elif isinstance(record, UsageRecord):
            summary.turns += 1
            summary.prompt_tokens += record.prompt
            summary.turn_log.append([record.message_id, record.prompt])
            summary.input_tokens += record.input
            summary.output_tokens += record.output
            summary.cache_read_tokens += record.cache_read
            summary.cache_write_tokens += record.cache_creation
            if summary.drift is not None:
                previous = last_prompt.get(session)
                growth = record.prompt - previous if previous is not None else 0
                if growth > 0 and added[session] > 0 and session not in tainted:
                    summary.drift.append([record.message_id, record.model, growth, added[session]])
                last_prompt[session] = record.prompt
                added[session] = 0
                tainted.discard(session)
        elif isinstance(record, TextRecord):
            added[session] += count(record.text) if record.text else 0
            if record.images:
                tainted.add(session)
        elif isinstance(record, BoundaryRecord):
            last_prompt.pop(session, None)
            added[session] = 0
    for call_id, pending in calls.items():
        tally(call_id, pending.shape, OUTCOME_UNPAIRED, 0)
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
