"""Transcript formats: which agent wrote a file, judged from its content, and its reader.

Claude Code and Codex CLI are read by :mod:`~pytest_toll.transcripts.readers` exactly as
before; every other agent's format has a module here whose reader yields the same records.
A file's format is decided by what it holds (its first line, or the whole document when the
first line is not a JSON value), never by its name: a name only says where to look.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import MAX_INPUT_FILE_BYTES, MAX_TRANSCRIPT_LINE_BYTES
from pytest_toll.transcripts import readers
from pytest_toll.transcripts.formats import (
    antigravity,
    cline,
    copilot,
    cursor,
    gemini,
    opencode,
    openhands,
    qwen,
)
from pytest_toll.transcripts.formats.base import load_document
from pytest_toll.transcripts.readers import CLAUDE, CODEX
from pytest_toll.transcripts.records import BadLine, Record

Reader = Callable[..., Iterator[Record]]


@dataclass(frozen=True)
class Format:
    name: str
    sniff: Callable[[object], bool]
    read: Reader
    #: whether the format writes what a call returned ("result not recorded" when not)
    results_recorded: bool = True


#: Checked in this order against a file's first value; the first that claims it reads it.
FORMATS: tuple[Format, ...] = (
    Format(gemini.NAME, gemini.sniff, gemini.read),
    Format(copilot.NAME, copilot.sniff, copilot.read),
    Format(qwen.NAME, qwen.sniff, qwen.read),
    Format(antigravity.NAME, antigravity.sniff, antigravity.read),
    Format(opencode.NAME, opencode.sniff, opencode.read),
    Format(openhands.NAME, openhands.sniff, openhands.read),
    Format(cline.NAME, cline.sniff, cline.read),
    Format(cursor.NAME, cursor.sniff, cursor.read, results_recorded=False),
)
_BY_NAME = {format.name: format for format in FORMATS}
#: Every agent a transcript can come from, in report order.
AGENTS: tuple[str, ...] = (CLAUDE, CODEX, *(format.name for format in FORMATS))
#: How much of a file's start is read to judge its format.
HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class Detection:
    name: str
    #: a whole JSON document (read bounded), not JSON lines (streamed)
    document: bool
    #: a format claimed it; False is the Claude Code default of a file nothing claimed
    claimed: bool


def results_recorded(name: str) -> bool:
    format = _BY_NAME.get(name)
    return format.results_recorded if format is not None else True


def _claim(value: object) -> str | None:
    if isinstance(value, dict) and readers._is_codex(value):
        return CODEX
    for format in FORMATS:
        if format.sniff(value):
            return format.name
    return None


def detect(path: Path) -> Detection:
    """The format of one file, from its content (cached per file version)."""
    try:
        status = path.stat()
    except OSError:
        return Detection(CLAUDE, False, False)
    return _detect(str(path), status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _detect(name: str, size: int, mtime_ns: int) -> Detection:
    path = Path(name)
    try:
        with path.open("rb") as stream:
            head = stream.read(HEAD_BYTES)
    except OSError:
        return Detection(CLAUDE, False, False)
    if head.startswith(opencode.SQLITE_MAGIC):
        database = opencode.is_database(path)
        return Detection(opencode.NAME if database else CLAUDE, True, database)
    loads, _ = readers.json_parser()
    stripped = head.lstrip()
    lines = stripped.split(b"\n")
    whole_file = len(head) == size
    complete = lines if whole_file else lines[:-1]  # the head may end inside a line
    value: Any = None
    document = False
    if lines[0].strip() in (b"{", b"["):
        # A document written over many lines: read it whole, within the input-file cap.
        document = True
        try:
            value = load_document(path)
        except CouldNotJudge:
            value = None
    elif not complete:
        # A first line longer than the head: that line alone, bounded, says what it is.
        try:
            with path.open("rb") as stream:
                first = stream.readline(MAX_INPUT_FILE_BYTES)
                document = not stream.read(1)
            value = loads(first)
        except (OSError, ValueError):
            value = None
    else:
        # JSON lines: the first line that parses says (a broken first line is skipped).
        document = whole_file and len(stripped.rstrip().split(b"\n")) == 1
        for line in complete[:8]:
            if not line.strip():
                continue
            try:
                value = loads(line)
            except ValueError:
                continue
            break
    claimed = _claim(value)
    if claimed is not None:
        return Detection(claimed, document and claimed != CODEX, True)
    if isinstance(value, dict):
        return Detection(CLAUDE, False, False)  # (Codex was ruled out by _claim)
    # Nothing readable in the head: the Claude Code reader's own judgement, as before.
    return Detection(readers.transcript_format(path), False, False)


def transcript_format(path: Path) -> str:
    """The agent that wrote a transcript file (``claude`` when no format claims it)."""
    name = detect(path).name
    if name == gemini.NAME and ".qwen" in path.parts:
        # Qwen Code's older sessions are in Gemini CLI's format (Qwen Code is its fork): the
        # content says the format, the folder which of the two agents wrote it.
        return qwen.NAME
    return name


def session_name(path: Path) -> str:
    """The name a file's session goes by: its file name, or the folder that names it where the
    file's own name is the same for every session (``events.jsonl``, ``transcript.jsonl``, a
    Cline task's files, an event store's ``0.json``)."""
    name = detect(path).name
    if name == copilot.NAME and path.stem == "events":
        return path.parent.name
    if name == antigravity.NAME:
        return antigravity.session_of(path)
    if name == cline.NAME:
        return path.parent.name
    if name == openhands.NAME and path.parent.name == "events":
        return path.parent.parent.name
    return path.stem


def read_records(
    path: Path,
    *,
    with_text: bool = False,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Record]:
    """Every record of one transcript file, whatever agent wrote it (see
    :func:`pytest_toll.transcripts.readers.read_records`; only Claude Code files are cut into
    segments, so ``start``/``end`` apply to them alone)."""
    detection = detect(path)
    if detection.name in (CLAUDE, CODEX):
        yield from readers.read_records(
            path, with_text=with_text, max_line_bytes=max_line_bytes, start=start, end=end
        )
        return
    if start:
        return
    reader = _BY_NAME[detection.name].read
    try:
        yield from reader(
            path, with_text=with_text, max_line_bytes=max_line_bytes, document=detection.document
        )
    except OSError as error:
        yield BadLine(0, f"cannot read: {error.strerror or error}")
    except (TypeError, ValueError, AttributeError, KeyError, IndexError) as error:
        # A shape no reader expected ends the file as one bad line, never a crashed scan.
        yield BadLine(0, f"unexpected record shape ({type(error).__name__}); rest not read")


def tree_status(path: Path, status: os.stat_result) -> os.stat_result:
    """The version of everything a file's session is read from: a storage-tree session's
    message and part files, a database's write-ahead log, an event store's other events.
    A change to any of them changes the cached summary's key (size and newest mtime)."""
    if path.suffix == ".jsonl":
        return status
    detection = detect(path)
    files: list[Path] = []
    if detection.name == opencode.NAME:
        if head_is_database(path):
            files = [path, path.with_name(path.name + "-wal")]
        else:
            value = load_document_quietly(path)
            if opencode.is_session_info(value):
                files = list(opencode.tree_files(path, str(value["id"])))
    elif detection.name == openhands.NAME:
        files = openhands.event_files(path) if path.parent.name == "events" else []
    elif detection.name == cline.NAME:
        files = [path, path.parent / cline.UI_MESSAGES]
    if not files:
        return status
    size, newest = 0, status.st_mtime_ns
    for file in files:
        try:
            found = file.stat()
        except OSError:
            continue
        size += found.st_size
        newest = max(newest, found.st_mtime_ns)
    values = list(status)[:10]
    values[6], values[8] = size, newest // 1_000_000_000  # st_size, st_mtime
    return os.stat_result(values, {"st_mtime_ns": newest})


def head_is_database(path: Path) -> bool:
    try:
        with path.open("rb") as stream:
            return stream.read(len(opencode.SQLITE_MAGIC)) == opencode.SQLITE_MAGIC
    except OSError:
        return False


def load_document_quietly(path: Path) -> Any:
    try:
        return load_document(path)
    except CouldNotJudge:
        return None
