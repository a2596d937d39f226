"""What every format's reader shares: bounded reading of JSON lines (whole, or one byte range
of a file cut into segments) and of whole JSON documents, content blocks and arguments as the
agents write them, pairing calls with results by order where a format gives no ids (each such
session flagged with :class:`~pytest_toll.transcripts.records.PairedByOrder`, so the report
names it, never silently), and :class:`Home`, the folders each agent's own are found from.

Every reader yields the common records (:mod:`~pytest_toll.transcripts.records`), so pairing,
outcomes, shapes, repeats, amplification and drift work on every format unchanged. A reader
streams a JSON-lines file line by line and never holds more than one line; a line longer than
``max_line_bytes`` is skipped in bounded chunks and counted, as is any line that is not a
JSON value (malformed, truncated, invalid UTF-8).
"""

from __future__ import annotations

import itertools
import json
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core import jsonlines
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import (
    MAX_INPUT_FILE_BYTES,
    MAX_TOKEN_COUNT,
    MAX_TRANSCRIPT_LINE_BYTES,
)
from pytest_toll.core.parse import ParseError, line_parser, load_json
from pytest_toll.core.textio import open_regular, read_file_bytes
from pytest_toll.transcripts.images import Image, image_block
from pytest_toll.transcripts.records import (
    BadLine,
    CallRecord,
    PairedByOrder,
    Record,
    SessionRecord,
    TextRecord,
    UsageRecord,
)


@dataclass(frozen=True)
class Home:
    """Where a user's agents keep their files: the home folder, the XDG config and data folders
    (their defaults when unset), the platform, and the environment (for an agent's own
    variable, such as ``CODEX_HOME``)."""

    path: Path
    config: Path
    data: Path
    platform: str
    environ: Mapping[str, str]


#: The parser of one transcript line (the Parsing door's, for the scan's hot path).
json_parser = line_parser


# --- reading lines -----------------------------------------------------------------------


def iter_lines(
    path: Path,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    start: int = 0,
    end: int | None = None,
    buffer_bytes: int = 1 << 20,
) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` per non-blank line; bytes is None for an oversized line.

    With ``start``/``end`` (line starts, as :func:`segment_bounds` gives them) only the lines
    that start in that byte range are read, numbered from 1 within it."""
    with open_regular(path, buffering=buffer_bytes) as stream:
        if start:
            stream.seek(start)
        position = start
        number = 0
        while end is None or position < end:
            line = stream.readline(max_line_bytes)
            if not line:
                return
            position += len(line)
            number += 1
            if len(line) == max_line_bytes and not line.endswith(b"\n"):
                # Drain the rest of the line in bounded chunks; never hold it whole.
                while True:
                    chunk = stream.readline(max_line_bytes)
                    position += len(chunk)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                yield number, None
                continue
            if not line.isspace():  # (strip would copy every line)
                yield number, line


def segment_bounds(path: Path, size: int, segment_bytes: int) -> list[tuple[int, int]]:
    """The file cut into byte ranges of about ``segment_bytes``, each starting at a line start.

    Cut ``k`` is the first line start at or after ``k × segment_bytes``: it depends only on the
    bytes before it, so appending to a file leaves every earlier cut where it was."""
    cuts = [0]
    with open_regular(path) as stream:
        for nominal in range(segment_bytes, size, segment_bytes):
            stream.seek(nominal - 1)
            # The line that holds byte nominal - 1 ends at the next newline (bounded reads).
            while True:
                chunk = stream.readline(1 << 20)
                if not chunk or chunk.endswith(b"\n"):
                    break
            cut = stream.tell()
            if cut >= size:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
    cuts.append(size)
    return list(itertools.pairwise(cuts))


def too_long(max_line_bytes: int) -> str:
    return f"line longer than {max_line_bytes:,} bytes, skipped"


def unreadable(error: ValueError) -> str:
    """Why a line is not JSON, as a bad line says it."""
    said = str(error).lower()
    if isinstance(error, UnicodeDecodeError) or "utf-8" in said or "utf8" in said:
        return "invalid UTF-8"
    if "depth limit" in said:  # (orjson's words: JSON, but nested past its 1,024 levels)
        return "nests too deeply to read"
    return "not JSON"


#: What a line that gives no record returns (most lines): shared, never appended to.
NO_RECORDS: list[SessionRecord] = []


def object_lines(
    path: Path,
    records_of: Callable[[dict[str, Any]], list[SessionRecord]],
    max_line_bytes: int,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Record]:
    """The records of a JSON-lines file whose every line is one object, each line's given by
    ``records_of`` (the lines of one byte range with ``start``/``end``); every other line is a
    bad line, as is a line of a shape ``records_of`` did not expect (never a crashed scan)."""
    loads, _ = json_parser()
    for number, raw in iter_lines(path, max_line_bytes, start, end):
        if raw is None:
            yield BadLine(number, too_long(max_line_bytes))
        else:
            yield from _object_line(number, raw, loads, records_of)


def _object_line(
    number: int,
    raw: bytes,
    loads: Callable[[bytes], Any],
    records_of: Callable[[dict[str, Any]], list[SessionRecord]],
) -> Iterator[Record]:
    """One line of :func:`object_lines`: its records, or the bad line it is."""
    try:
        line = loads(raw)
    except ValueError as error:
        yield BadLine(number, unreadable(error))
        return
    if type(line) is not dict:
        yield BadLine(number, "not a JSON object")
        return
    try:
        records = records_of(line)
    except OutOfRange as error:
        yield BadLine(number, str(error))
        return
    except (TypeError, ValueError, AttributeError, KeyError) as error:
        yield BadLine(number, f"unexpected record shape ({type(error).__name__})")
        return
    yield from records


def typed_object_lines(
    path: Path,
    decode: Callable[[bytes], Any],
    typed_records_of: Callable[[Any], list[SessionRecord]],
    records_of: Callable[[dict[str, Any]], list[SessionRecord]],
    max_line_bytes: int,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Record]:
    """:func:`object_lines`, each line decoded by ``decode`` into a typed schema and its
    records built by ``typed_records_of`` (:mod:`~pytest_toll.core.jsonlines`); a line that
    does not fit (it raises one of ``GIVE_UP``, having changed nothing) is read again as
    :func:`object_lines` reads it, by ``records_of`` over the same reader's state."""
    loads, _ = json_parser()
    give_up = jsonlines.GIVE_UP
    candidate = jsonlines.typed_candidate
    for number, raw in iter_lines(path, max_line_bytes, start, end):
        if raw is None:
            yield BadLine(number, too_long(max_line_bytes))
            continue
        if raw.isascii() or candidate(raw):  # (isascii first: no call for most lines)
            try:
                records = typed_records_of(decode(raw))
            except give_up:
                pass
            else:
                if records:
                    yield from records
                continue
        # The pure path, exactly as object_lines reads a line.
        yield from _object_line(number, raw, loads, records_of)


def json_lines(path: Path, max_line_bytes: int) -> Iterator[tuple[int, Any]]:
    """``(line number, parsed value)`` per line, or ``(line number, BadLine)``; streams."""
    loads, _ = json_parser()
    for line_number, raw in iter_lines(path, max_line_bytes):
        if raw is None:
            yield line_number, BadLine(line_number, too_long(max_line_bytes))
            continue
        try:
            yield line_number, loads(raw)
        except ValueError as error:
            yield line_number, BadLine(line_number, unreadable(error))


def load_document(path: Path) -> Any:
    """A whole JSON document (one that is not JSON lines), read against the input-file cap and
    the nesting limits; ``CouldNotJudge`` naming the file when it cannot be."""
    data = read_file_bytes(path, MAX_INPUT_FILE_BYTES, limit_name="a transcript document")
    try:
        return load_json(data, str(path))
    except ParseError as error:
        raise CouldNotJudge(f"{path}: not a JSON document ({error.why})") from None


def document_or_bad_line(path: Path) -> tuple[Any, BadLine | None]:
    """:func:`load_document`, its failure turned into the one bad line a scan counts."""
    try:
        return load_document(path), None
    except CouldNotJudge as error:
        return None, BadLine(1, str(error).replace(f"{path}: ", "", 1))


class OutOfRange(ValueError):
    """A record claims a token count no turn can have: its line is a bad line."""


def number(value: object) -> int:
    """A token count as written (a positive whole number), else 0. A claim past
    ``MAX_TOKEN_COUNT`` (2^64, 10^400 read as a float) raises :class:`OutOfRange`: the line is
    counted as bad, never summed, stored in the cache or shown."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if not value <= MAX_TOKEN_COUNT:  # (also a NaN)
        raise OutOfRange(f"a token count out of range ({value:.3g})")
    return value if isinstance(value, int) and value > 0 else 0


def items(value: object) -> list[Any]:
    """A list as written, else no items (a format's list field may hold anything)."""
    return value if isinstance(value, list) else []


# Parsed JSON objects are dicts: ``isinstance(x, dict)`` on the per-line path, where the
# Mapping ABC's check measured a tenth of a scan's reading time.


def blocks_text(content: object) -> tuple[str, tuple[Image, ...], int]:
    """Text, images and the number of other structured blocks of a content value as the
    Anthropic and OpenAI APIs write it (a string, a block, or a list of them)."""
    if isinstance(content, str):
        return content, (), 0
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return "", (), 0 if content is None else 1
    texts: list[str] = []
    images: list[Image] = []
    other = 0
    for block in content:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            other += 1
            continue
        block_type = block.get("type")
        text = block.get("text")
        if block_type in ("image", "input_image"):
            images.append(image_block(block))
        elif isinstance(text, str):
            texts.append(text)
        else:
            other += 1
    return "\n".join(texts), tuple(images), other


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
            parsed = load_json(value, "arguments")
        except ParseError:
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
    formats whose results follow their calls but name none of them.

    Each step costs constant time (amortized): an answered call stays in the queues and is
    skipped when it reaches their front, so a hostile file of many calls no result answers
    costs a pass, not a pass per result."""

    made: int = 0
    flagged: set[str] = field(default_factory=set)
    #: per session, the calls still waiting: id -> tool
    _waiting: dict[str, dict[str, str]] = field(default_factory=dict)
    #: per session, every call's id in order, and per tool
    _oldest: dict[str, deque[str]] = field(default_factory=dict)
    _by_tool: dict[str, dict[str, deque[str]]] = field(default_factory=dict)

    def _wait(self, session: str, call_id: str, tool: str) -> None:
        self._waiting.setdefault(session, {})[call_id] = tool
        self._oldest.setdefault(session, deque()).append(call_id)
        self._by_tool.setdefault(session, {}).setdefault(tool, deque()).append(call_id)

    def call(self, session: str, tool: str, arguments: Mapping[str, Any]) -> CallRecord:
        self.made += 1
        # The session in the id: a report counts each call once by id across files.
        call_id = f"{session}#{self.made}"
        self._wait(session, call_id, tool)
        return CallRecord(session, call_id, tool, arguments)

    def expect(self, session: str, call_id: str, tool: str) -> None:
        """A call that names its own id, waiting too: a format may answer it by that id or,
        as some agents write their results, by the tool's name and order."""
        self._wait(session, call_id, tool)

    def settle(self, session: str, call_id: str) -> bool:
        """Whether a result naming ``call_id`` answers a call still waiting (it stops waiting)."""
        return self._waiting.get(session, {}).pop(call_id, None) is not None

    def waiting(self, session: str) -> bool:
        return bool(self._waiting.get(session))

    def answer(self, session: str, tool: str | None = None) -> str | None:
        """The id of the oldest call of the session still waiting (of that tool, when the
        result names one), or None."""
        waiting = self._waiting.get(session)
        if not waiting:
            return None
        queue = self._oldest[session] if tool is None else self._by_tool[session].get(tool)
        while queue:
            call_id = queue.popleft()
            if call_id in waiting:
                del waiting[call_id]
                return call_id
        return None

    def flag(self, session: str) -> list[PairedByOrder]:
        """The flag record, the first time a session pairs a result by order."""
        if session in self.flagged:
            return []
        self.flagged.add(session)
        return [PairedByOrder(session)]
