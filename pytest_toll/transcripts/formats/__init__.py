"""Transcript formats: which agent wrote a file, judged from its content, and its reader.

Every agent's format is one module here and one row of :data:`FORMATS`: its name and title,
how its content is known, its reader (yielding the common records of
:mod:`~pytest_toll.transcripts.records`), where the agent keeps its sessions, and the hooks of
a format whose sessions are named or stored unlike a plain file's. A file's format is decided
by what it holds (its first line, or the whole document when the first line is not a JSON
value), never by its name: a name only says where to look, and whose transcript a file is
that cannot be read at all (a document an agent names as its own, cut short by a crash).
"""

from __future__ import annotations

import fnmatch
import functools
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.limits import MAX_INPUT_FILE_BYTES, MAX_TRANSCRIPT_LINE_BYTES
from pytest_toll.core.textio import open_regular
from pytest_toll.transcripts.formats import (
    antigravity,
    claude,
    cline,
    codex,
    copilot,
    cursor,
    gemini,
    opencode,
    openhands,
    qwen,
)
from pytest_toll.transcripts.formats.base import (
    Home,
    document_or_bad_line,
    iter_lines,
    json_parser,
)
from pytest_toll.transcripts.records import BadLine, Record

Reader = Callable[..., Iterator[Record]]


@dataclass(frozen=True)
class Format:
    """One agent's transcript format."""

    #: the agent as reports name it (``toll scan``'s sessions per agent, ``--json``'s ``agents``)
    name: str
    #: the agent as help text names it
    title: str
    #: whether a file's first JSON value is this format's; None for the format that claims
    #: nothing by content and reads whatever no other format claims (Claude Code's)
    sniff: Callable[[object], bool] | None
    #: ``read(path, *, with_text, max_line_bytes, document)`` -> the file's records
    read: Reader
    #: the folders where the agent may keep its sessions (found or not)
    folders: Callable[[Home], list[Path]]
    #: whether the format writes what a call returned ("result not recorded" when not)
    results_recorded: bool = True
    #: whether a file may hold one whole JSON document (else it is always JSON lines)
    documents: bool = True
    #: whether the reader also reads one byte range (``start``, ``end``) of a file on its own:
    #: a big file is then cut into segments read side by side, and a call or turn a later
    #: segment repeats is dropped when they are folded
    segmented: bool = False
    #: the name a file's session goes by, where it is not the file's own name
    session_name: Callable[[Path], str] | None = None
    #: the files a session is read from besides its own (they version its cached summary)
    session_files: Callable[[Path], list[Path]] | None = None
    #: the fuller file of its session a file is read from instead, where the agent may keep
    #: one beside it (:func:`superseded`); None for a file that has no such companion
    read_instead: Callable[[Path], Path | None] | None = None
    #: which agent wrote a file of this format, where another agent writes the format too
    writer: Callable[[Path], str] | None = None
    #: the names (``fnmatch`` patterns) the agent gives its whole-document files: such a file
    #: that cannot be read as JSON (cut short by a crash, past the cap) is still its
    #: transcript, counted as unreadable in a folder's scan rather than passed over unseen
    document_names: tuple[str, ...] = ()


#: Every agent a transcript can come from, in report order; their content is checked in this
#: order, and the first format that claims a file reads it.
FORMATS: tuple[Format, ...] = (
    Format(claude.NAME, claude.TITLE, None, claude.read, claude.folders,
           documents=False, segmented=True),
    Format(codex.NAME, codex.TITLE, codex.sniff, codex.read, codex.folders, documents=False),
    Format(gemini.NAME, gemini.TITLE, gemini.sniff, gemini.read, gemini.folders,
           writer=gemini.writer, document_names=gemini.DOCUMENT_NAMES),
    Format(copilot.NAME, copilot.TITLE, copilot.sniff, copilot.read, copilot.folders,
           session_name=copilot.session_name),
    Format(qwen.NAME, qwen.TITLE, qwen.sniff, qwen.read, qwen.folders),
    Format(antigravity.NAME, antigravity.TITLE, antigravity.sniff, antigravity.read,
           antigravity.folders, session_name=antigravity.session_name,
           read_instead=antigravity.read_instead),
    Format(opencode.NAME, opencode.TITLE, opencode.sniff, opencode.read, opencode.folders,
           session_files=opencode.session_files),
    Format(openhands.NAME, openhands.TITLE, openhands.sniff, openhands.read,
           openhands.folders, session_name=openhands.session_name,
           session_files=openhands.session_files),
    Format(cline.NAME, cline.TITLE, cline.sniff, cline.read, cline.folders,
           session_name=cline.session_name, session_files=cline.session_files,
           read_instead=cline.read_instead,
           document_names=(cline.API_HISTORY, cline.UI_MESSAGES)),
    Format(cursor.NAME, cursor.TITLE, cursor.sniff, cursor.read, cursor.folders,
           results_recorded=False),
)  # fmt: skip
#: Each format by its agent's name.
BY_NAME = {format.name: format for format in FORMATS}
#: The format of a file no format claims.
DEFAULT = next(format for format in FORMATS if format.sniff is None)
#: Every agent a transcript can come from, in report order.
AGENTS: tuple[str, ...] = tuple(BY_NAME)
#: How much of a file's start is read to judge its format.
HEAD_BYTES = 1 << 16


@dataclass(frozen=True)
class Detection:
    name: str
    #: a whole JSON document (read bounded), not JSON lines (streamed)
    document: bool
    #: a format claimed it; False is the default format of a file nothing claimed
    claimed: bool
    #: why a file could not be read as what it starts as (a JSON document too big, not JSON
    #: or nested too deeply; an SQLite file that is no session store): its one bad line,
    #: rather than each of its lines read as JSON lines
    unreadable: str = ""


def results_recorded(name: str) -> bool:
    format = BY_NAME.get(name)
    return format.results_recorded if format is not None else True


def _claim(value: object) -> Format | None:
    for format in FORMATS:
        if format.sniff is not None and format.sniff(value):
            return format
    return None


def detect(path: Path) -> Detection:
    """The format of one file, from its content (cached per file version)."""
    try:
        status = path.stat()
    except OSError:
        return Detection(DEFAULT.name, False, False)
    return _detect(str(path), status.st_size, status.st_mtime_ns)


@functools.lru_cache(maxsize=4096)
def _detect(name: str, size: int, mtime_ns: int) -> Detection:
    path = Path(name)
    try:
        with open_regular(path) as stream:
            head = stream.read(HEAD_BYTES)
    except OSError:
        return Detection(DEFAULT.name, False, False)
    if head.startswith(opencode.SQLITE_MAGIC):
        if opencode.is_database(path):
            return Detection(opencode.NAME, True, True)
        # Never read as JSON lines (each of its pages "invalid UTF-8"); under OpenCode's own
        # name, a database that cannot be opened is still its session store, counted as
        # unreadable.
        own = path.name == opencode.DATABASE_NAME
        return Detection(opencode.NAME if own else DEFAULT.name, True, own, _NOT_A_STORE)
    loads, _ = json_parser()
    stripped = head.lstrip()
    lines = stripped.split(b"\n")
    whole_file = len(head) == size
    complete = lines if whole_file else lines[:-1]  # the head may end inside a line
    value: Any = None
    document = False
    named = _named_document(path.name)
    if lines[0].strip() in (b"{", b"[") or named is not None:
        # A document written over many lines, or under a name an agent gives its documents:
        # read it whole, within the input-file cap.
        document = True
        value, bad = document_or_bad_line(path)
        if bad is not None:
            # One bad line, not every line of it read as JSON lines; its content claims nothing,
            # so only its name can say it is an agent's transcript.
            return Detection((named or DEFAULT).name, True, named is not None, bad.reason)
    elif not complete:
        # A first line longer than the head: that line alone, bounded, says what it is.
        try:
            with open_regular(path) as stream:
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
        return Detection(claimed.name, document and claimed.documents, True)
    if isinstance(value, dict):
        return Detection(DEFAULT.name, False, False)
    # Nothing readable in the head: the file's first JSON object says, claiming nothing.
    claimed = _claim(_first_object(path))
    return Detection((claimed or DEFAULT).name, False, False)


_NOT_A_STORE = (
    "an SQLite database without OpenCode's session, message and part tables, or one that "
    "cannot be opened; not read"
)


def _named_document(name: str) -> Format | None:
    for format in FORMATS:
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in format.document_names):
            return format
    return None


def _first_object(path: Path) -> dict[str, Any] | None:
    loads, _ = json_parser()
    # A small buffer: only the first lines are wanted (a megabyte's buffer per file cost 0.14 s
    # over the 611 files of bench/scan.py's 1 GB history, by cProfile).
    for _, raw in iter_lines(path, buffer_bytes=1 << 16):
        if raw is None:
            continue
        try:
            line = loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            return line
    return None


def format_of(path: Path) -> Format:
    """The format of one transcript file (the default when no format claims it)."""
    return BY_NAME[detect(path).name]


def transcript_format(path: Path) -> str:
    """The agent that wrote a transcript file (Claude Code when no format claims it)."""
    format = format_of(path)
    return format.writer(path) if format.writer is not None else format.name


def session_name(path: Path) -> str:
    """The name a file's session goes by: its file name, or the folder that names it where the
    file's own name is the same for every session (``events.jsonl``, ``transcript.jsonl``, a
    Cline task's files, an event store's ``0.json``)."""
    format = format_of(path)
    return format.session_name(path) if format.session_name is not None else path.stem


def is_transcript(path: Path) -> bool:
    """Whether a file a format claims is a transcript on its own (not read beside another)."""
    detection = detect(path)
    return detection.claimed and not superseded(path, (BY_NAME[detection.name],))


def superseded(path: Path, formats: Iterable[Format] = FORMATS) -> bool:
    """Whether the session of ``path`` is read from a fuller file beside it (a format's
    ``read_instead``), one that exists and can be read: beside a Cline task's history cut short
    by a crash, the task is read from its ui_messages.json (the history counted as
    unreadable), so no task is lost."""
    for format in formats:
        instead = format.read_instead(path) if format.read_instead is not None else None
        if instead is not None and instead.is_file() and not detect(instead).unreadable:
            return True
    return False


def read_records(
    path: Path,
    *,
    with_text: bool = False,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Record]:
    """Every record of one transcript file, whatever agent wrote it, in file order; each
    unreadable line a :class:`~pytest_toll.transcripts.records.BadLine`. ``with_text`` adds
    the conversation text (for context and drift); scans leave it off. ``start``/``end`` read
    one segment of a file whose format is read in segments (``Format.segmented``); another
    format's file is read whole from its start."""
    detection = detect(path)
    format = BY_NAME[detection.name]
    if start and not format.segmented:
        return
    if detection.unreadable:
        if not start:  # (once, not once per segment)
            yield BadLine(1, detection.unreadable)
        return
    ranged = {"start": start, "end": end} if format.segmented else {}
    try:
        yield from format.read(
            path,
            with_text=with_text,
            max_line_bytes=max_line_bytes,
            document=detection.document,
            **ranged,
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
    session_files = format_of(path).session_files
    files = session_files(path) if session_files is not None else []
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
