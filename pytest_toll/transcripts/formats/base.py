"""What every reader of the newer agent formats shares: bounded reading of JSON lines and
whole JSON documents, and pairing calls with results by order where a format gives no ids
(each such session flagged with :class:`~pytest_toll.transcripts.records.PairedByOrder`, so
the report names it, never silently).

Every reader yields the common records (:mod:`~pytest_toll.transcripts.records`), so pairing,
outcomes, shapes, repeats, amplification and drift work on every format unchanged.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import MAX_INPUT_FILE_BYTES
from pytest_toll.core.textio import TooDeep, load_json, read_file_bytes
from pytest_toll.transcripts.readers import iter_lines, json_parser
from pytest_toll.transcripts.records import (
    BadLine,
    CallRecord,
    PairedByOrder,
    TextRecord,
    UsageRecord,
)


def number(value: object) -> int:
    """A token count as written (a positive whole number), else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def items(value: object) -> list[Any]:
    """A list as written, else no items (a format's list field may hold anything)."""
    return value if isinstance(value, list) else []


def json_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` per line, or ``(line number, BadLine)``; streams."""
    loads, _ = json_parser()
    for line_number, raw in iter_lines(path, max_line_bytes):
        if raw is None:
            yield (
                line_number,
                BadLine(line_number, f"line longer than {max_line_bytes:,} bytes, skipped"),
            )
            continue
        try:
            yield line_number, loads(raw)
        except ValueError as error:
            said = str(error).lower()
            reason = "invalid UTF-8" if "utf-8" in said or "utf8" in said else "not JSON"
            yield line_number, BadLine(line_number, reason)


def load_document(path: Path) -> Any:
    """A whole JSON document (one that is not JSON lines), read against the input-file cap and
    the nesting limits; ``CouldNotJudge`` naming the file when it cannot be."""
    data = read_file_bytes(path, MAX_INPUT_FILE_BYTES, limit_name="a transcript document")
    try:
        return load_json(data)
    except TooDeep as error:
        raise CouldNotJudge(f"{path}: {error}") from None
    except ValueError as error:  # a JSONDecodeError, or bytes that are not UTF-8
        raise CouldNotJudge(f"{path}: not a JSON document ({type(error).__name__})") from None


def document_or_bad_line(path: Path) -> tuple[Any, BadLine | None]:
    """:func:`load_document`, its failure turned into the one bad line a scan counts."""
    try:
        return load_document(path), None
    except CouldNotJudge as error:
        return None, BadLine(1, str(error).replace(f"{path}: ", "", 1))


def text_of(value: object) -> str:
    """The text of a content value as the agents write it: a string, a list of parts or blocks
    with ``text`` (or ``output``/``content``) fields, or a structure (kept as JSON)."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(filter(None, (text_of(item) for item in value)))
    if isinstance(value, dict):
        for key in ("text", "output", "content"):
            inner = value.get(key)
            if isinstance(inner, (str, list)):
                return text_of(inner)
    return json.dumps(value, ensure_ascii=False)


def arguments_of(value: object) -> Mapping[str, Any]:
    """A call's arguments: a mapping, or a JSON string of one (else the raw value as input)."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, dict) else {"input": value}
    return {} if value is None else {"input": value}


def call_text(session: str, tool: str, arguments: Mapping[str, Any]) -> TextRecord:
    """The call as conversation text (what ``toll context`` and drift count for it)."""
    return TextRecord(session, "call", tool + json.dumps(arguments, ensure_ascii=False))


def usage(
    session: str,
    model: object,
    *,
    prompt_with_cache: int,
    output: int,
    cache_read: int = 0,
    cache_write: int = 0,
    message_id: str | None = None,
) -> UsageRecord | None:
    """One turn from a format whose prompt count includes the cached part (Gemini, OpenAI
    style); None for an all-zero turn (never sent, and it would fake a prompt of 0)."""
    fresh = max(prompt_with_cache - cache_read - cache_write, 0)
    if not (fresh or cache_read or cache_write or output):
        return None
    name = model if isinstance(model, str) and model else "unknown"
    return UsageRecord(session, name, fresh, output, cache_read, cache_write, 0, message_id)


@dataclass
class OrderPairing:
    """Calls waiting for their results, per session, answered first in, first out: for
    formats whose results follow their calls but name none of them."""

    pending: dict[str, deque[tuple[str, str]]] = field(default_factory=dict)
    made: int = 0
    flagged: set[str] = field(default_factory=set)

    def call(self, session: str, tool: str, arguments: Mapping[str, Any]) -> CallRecord:
        self.made += 1
        # The session in the id: a report counts each call once by id across files.
        call_id = f"{session}#{self.made}"
        self.pending.setdefault(session, deque()).append((call_id, tool))
        return CallRecord(session, call_id, tool, arguments)

    def waiting(self, session: str) -> bool:
        return bool(self.pending.get(session))

    def answer(self, session: str, tool: str | None = None) -> str | None:
        """The id of the oldest call of the session still waiting (of that tool, when the
        result names one), or None."""
        queue = self.pending.get(session)
        if not queue:
            return None
        if tool is not None:
            for index, (call_id, name) in enumerate(queue):
                if name == tool:
                    del queue[index]
                    return call_id
            return None
        return queue.popleft()[0]

    def flag(self, session: str) -> list[PairedByOrder]:
        """The flag record, the first time a session pairs a result by order."""
        if session in self.flagged:
            return []
        self.flagged.add(session)
        return [PairedByOrder(session)]
