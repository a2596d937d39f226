"""The transcript cache: a summary per unchanged file, the facts of each read segment.

One SQLite file. A scan of exactly the files scanned before (same paths, sizes and mtimes)
is served the report it made (so a warm scan reads one row, whatever the history's size). An
unchanged file (same path, size and mtime) is served its
:class:`~pytest_toll.transcripts.summary.FileSummary`; a changed one is cut into the same
segments as before (:func:`~pytest_toll.transcripts.formats.base.segment_bounds`), and every segment
whose bytes are still those it was read from — same range, same bytes at both of its ends —
is served its facts, so an appended-to session re-reads only what was appended (and the
segment it was appended to). Any cache failure just means a re-read.

The cache is trusted only as far as its owner: its folder and files must belong to the
current user and be writable by no one else (created 0700 and 0600), or it is not used at all
(one notice line, every file read again) — another user's rows would be served as this
user's facts. A row whose data is not exactly the shape this version writes (bad JSON, a
missing or extra field, a value of the wrong type, an unknown fact) is a miss: that file is
read again, never a failure. A cache whose tables are of another layout
(:data:`SCHEMA_VERSION`) is emptied and rebuilt on open, never misread.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import hashlib
import json
import os
import sqlite3
import stat
import sys
import types
import typing
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.textio import open_regular
from pytest_toll.core.tokens import TOKENIZER_NAME
from pytest_toll.transcripts.outcomes import OUTCOMES
from pytest_toll.transcripts.report import REPORT_VERSION, ScanReport
from pytest_toll.transcripts.summary import SUMMARY_VERSION, FileSummary, SegmentFacts

#: The cache's one SQLite file, in :func:`cache_dir`.
DATABASE_NAME = "transcripts.sqlite"
#: Bytes at each end of a segment that must be unchanged for its cached facts to be used.
FINGERPRINT_BYTES = 4096
#: The layout of the cache's tables, kept in SQLite's ``user_version``: bump it when a table
#: changes, and a cache of another layout is emptied and rebuilt rather than misread.
#: 0: the first, unnumbered layout (a summary's scope in a column named ``kind``); 1: ``scope``.
SCHEMA_VERSION = 1
#: A summary's scope: what was read of the file (the tolls: calls, results and turns; or
#: drift's, the conversation text counted too).
SCOPE_TOLLS = "tolls"
SCOPE_DRIFT = "drift"


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "pytest-toll"


def fingerprint(path: Path, start: int, end: int) -> str:
    """The segment's range and a digest of the bytes at both of its ends."""
    digest = hashlib.blake2b(digest_size=16)
    with open_regular(path) as stream:
        stream.seek(start)
        digest.update(stream.read(min(FINGERPRINT_BYTES, end - start)))
        tail = max(start, end - FINGERPRINT_BYTES)
        stream.seek(tail)
        digest.update(stream.read(end - tail))
    return f"{start}-{end}-{digest.hexdigest()}"


#: Whole scan reports kept (one per set of files and options scanned lately).
REPORTS_KEPT = 8


def report_key(scope: str, files: Iterable[tuple[str, int, int]]) -> str:
    """Names one scan's input exactly: the summaries' scope, the summary and report versions,
    the tokenizer, and every file's path, size and mtime in the order read (which orders the
    report's problems and ties); any file added, removed or changed is another key."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{scope}\0{SUMMARY_VERSION}\0{REPORT_VERSION}\0{TOKENIZER_NAME}".encode())
    for path, size, mtime in files:
        digest.update(f"\0{path}\0{size}\0{mtime}".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def _codec() -> tuple[Callable[[Any], bytes | str], Callable[[bytes | str], Any]]:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.dumps, json.loads
    return orjson.dumps, orjson.loads


class SummaryCache:
    """File summaries and segment facts in one SQLite file; a failure is a re-read."""

    def __init__(self, directory: Path, notice: Callable[[str], None] | None = None) -> None:
        self.path = directory / DATABASE_NAME
        self._db: sqlite3.Connection | None = None
        self._dumps, self._loads = _codec()
        try:
            directory.parent.mkdir(parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                directory.mkdir(mode=0o700)
            why = untrusted(directory, self.path)
            if why is not None:
                _notice_once(directory, f"{why}; not used, every file is read again", notice)
                return
            if not self.path.exists():
                # Created 0600 before SQLite opens it: its journal files take the same mode.
                flags = os.O_CREAT | os.O_EXCL | os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0)
                os.close(os.open(self.path, flags, 0o600))
            self._db = sqlite3.connect(self.path, timeout=10)
            # A write-ahead log, synced at checkpoints only: a commit per batch of files cost
            # a sync each (0.23 s of the parent's time in a 1 GB scan, by cProfile); a crash loses at most
            # latest batches, which are read again.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            if _schema_version(self._db) != SCHEMA_VERSION:
                _rebuild(self._db)
        except (sqlite3.Error, OSError):
            self._db = None

    def has(self, path: str, scope: str, size: int, mtime: int) -> bool:
        """Whether an unchanged file's summary is cached (without reading it)."""
        if self._db is None:
            return False
        try:
            row = self._db.execute(
                "SELECT 1 FROM summaries WHERE path=? AND scope=? AND size=? AND mtime=?"
                " AND tokenizer=? AND version=?",
                (path, scope, size, mtime, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchone()
        except sqlite3.Error:
            return False
        return row is not None

    def get(self, path: str, scope: str, size: int, mtime: int) -> FileSummary | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT data FROM summaries WHERE path=? AND scope=? AND size=? AND mtime=?"
                " AND tokenizer=? AND version=?",
                (path, scope, size, mtime, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchone()
            return None if row is None else _summary(self._loads(row[0]))
        except (sqlite3.Error, ValueError, TypeError, KeyError):
            return None

    def put(self, entries: Iterable[tuple[str, str, int, int, FileSummary]]) -> None:
        if self._db is None:
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO summaries VALUES (?,?,?,?,?,?,?)",
                    [
                        (
                            path,
                            scope,
                            size,
                            mtime,
                            TOKENIZER_NAME,
                            SUMMARY_VERSION,
                            self._dumps(summary.to_json()),
                        )
                        for path, scope, size, mtime, summary in entries
                    ],
                )
        except sqlite3.Error:
            pass

    def segments(self, path: str, scope: str) -> dict[str, SegmentFacts]:
        """The cached facts of a file's segments, by fingerprint."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute(
                "SELECT segment, data FROM segments WHERE path=? AND scope=? AND tokenizer=?"
                " AND version=?",
                (path, scope, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchall()
            found = {}
            for segment, data in rows:
                facts = _segment(self._loads(data))
                if not isinstance(segment, str) or facts is None:
                    return {}  # one bad row: the whole file is read again
                found[segment] = facts
            return found
        except (sqlite3.Error, ValueError, TypeError):
            return {}

    def put_segments(
        self, scope: str, files: Iterable[tuple[str, Mapping[str, SegmentFacts]]]
    ) -> None:
        """Replace each file's cached segments with these (the ones it is cut into now)."""
        if self._db is None:
            return
        try:
            with self._db:
                for path, segments in files:
                    self._db.execute("DELETE FROM segments WHERE path=? AND scope=?", (path, scope))
                    self._db.executemany(
                        "INSERT OR REPLACE INTO segments VALUES (?,?,?,?,?,?)",
                        [
                            (
                                path,
                                scope,
                                segment,
                                TOKENIZER_NAME,
                                SUMMARY_VERSION,
                                self._dumps([facts.facts, facts.lines]),
                            )
                            for segment, facts in segments.items()
                        ],
                    )
        except sqlite3.Error:
            pass

    def report(self, key: str) -> ScanReport | None:
        """The report made from exactly these files before (:func:`report_key`), if any."""
        if self._db is None:
            return None
        try:
            row = self._db.execute("SELECT data FROM reports WHERE key=?", (key,)).fetchone()
            return None if row is None else _report(self._loads(row[0]))
        except (sqlite3.Error, ValueError, TypeError, KeyError):
            return None

    def put_report(self, key: str, report: ScanReport) -> None:
        """Keep this report under its key, and only the ``REPORTS_KEPT`` newest reports."""
        if self._db is None:
            return
        try:
            with self._db:
                used = self._db.execute("SELECT COALESCE(MAX(used), 0) + 1 FROM reports")
                self._db.execute(
                    "INSERT OR REPLACE INTO reports VALUES (?,?,?)",
                    (key, used.fetchone()[0], self._dumps(report.to_json())),
                )
                self._db.execute(
                    "DELETE FROM reports WHERE used <= (SELECT MAX(used) FROM reports) - ?",
                    (REPORTS_KEPT,),
                )
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def _schema_version(db: sqlite3.Connection) -> int:
    version: int = db.execute("PRAGMA user_version").fetchone()[0]
    return version


def _rebuild(db: sqlite3.Connection) -> None:
    """The tables of this layout, empty, in place of whatever layout the file held (checked
    again under the write lock: another scan may have rebuilt it meanwhile)."""
    db.execute("BEGIN IMMEDIATE")  # (waits for another scan's write, as every write does)
    try:
        if _schema_version(db) != SCHEMA_VERSION:
            for table in ("summaries", "segments", "reports"):
                db.execute(f"DROP TABLE IF EXISTS {table}")
            db.execute(
                "CREATE TABLE summaries (path TEXT, scope TEXT, size INTEGER, mtime INTEGER,"
                " tokenizer TEXT, version INTEGER, data BLOB, PRIMARY KEY (path, scope))"
            )
            db.execute(
                "CREATE TABLE segments (path TEXT, scope TEXT, segment TEXT, tokenizer TEXT,"
                " version INTEGER, data BLOB, PRIMARY KEY (path, scope, segment))"
            )
            db.execute("CREATE TABLE reports (key TEXT PRIMARY KEY, used INTEGER, data BLOB)")
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        db.execute("COMMIT")
    except sqlite3.Error:
        db.execute("ROLLBACK")
        raise


# --- whose cache ----------------------------------------------------------------------------

_noticed: set[str] = set()


def _notice_once(directory: Path, message: str, notice: Callable[[str], None] | None) -> None:
    """One line per cache folder and process (a scan opens the cache more than once)."""
    if str(directory) in _noticed:
        return
    _noticed.add(str(directory))
    line = f"toll: the scan cache {directory} {message}"
    if notice is not None:
        notice(line)
    else:
        print(line, file=sys.stderr)


def untrusted(directory: Path, database: Path) -> str | None:
    """Why the cache at ``directory`` must not be used, or None: the folder and every file
    of the database must be this user's own (not a link), writable by no one else."""
    checks = [(directory, True)]
    checks += [(Path(f"{database}{suffix}"), False) for suffix in ("", "-wal", "-shm")]
    for path, is_folder in checks:
        try:
            status = os.lstat(path)
        except FileNotFoundError:
            if is_folder:
                return "is missing"
            continue
        except OSError as error:
            return f"cannot be checked ({error.strerror or error})"
        mode = status.st_mode
        # "the scan cache DIR is …" or "the scan cache DIR: its transcripts.sqlite is …"
        subject = "is" if is_folder else f"holds {path.name}, which is"
        if stat.S_ISLNK(mode):
            return f"{subject} a symbolic link"
        if not (stat.S_ISDIR(mode) if is_folder else stat.S_ISREG(mode)):
            return f"{subject} not a {'folder' if is_folder else 'regular file'}"
        owner = getattr(os, "getuid", None)
        if owner is not None and status.st_uid != owner():
            return f"{subject} another user's (uid {status.st_uid})"
        if sys.platform != "win32" and mode & 0o022:
            return f"{subject} writable by others (mode {stat.S_IMODE(mode):o})"
    return None


# --- rows exactly as this version writes them -----------------------------------------------


@functools.cache
def _fields_of(cls: Any) -> tuple[dict[str, Any], frozenset[str]]:
    """A dataclass's resolved field types and names, worked out once per class: resolving
    them costs ~90 µs, paid per cached row it was 0.7 s of a 0.8 s warm scan of 1 GB."""
    return typing.get_type_hints(cls), frozenset(f.name for f in dataclasses.fields(cls))


def _conforms(value: Any, expected: Any) -> bool:
    """Whether decoded JSON ``value`` is of the annotated type ``expected`` (int is never a
    bool; a dataclass is a mapping of exactly its fields)."""
    if expected is Any:
        return True
    if expected is type(None):  # the None of an optional field (``str | None``)
        return value is None
    if expected is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if expected is float:
        return isinstance(value, int | float) and not isinstance(value, bool)
    if expected in (str, bool):
        return isinstance(value, expected)
    if isinstance(expected, type) and dataclasses.is_dataclass(expected):
        hints, names = _fields_of(expected)
        return (
            isinstance(value, dict)
            and set(value) == names
            and all(_conforms(value[name], hints[name]) for name in names)
        )
    origin, arguments = typing.get_origin(expected), typing.get_args(expected)
    if origin in (typing.Union, types.UnionType):
        return any(_conforms(value, option) for option in arguments)
    if origin is list:
        return isinstance(value, list) and all(_conforms(item, arguments[0]) for item in value)
    if origin is dict:
        return isinstance(value, dict) and all(
            _conforms(k, arguments[0]) and _conforms(v, arguments[1]) for k, v in value.items()
        )
    return False


_TEXT: Any = str
_OPTIONAL_TEXT: Any = str | None
_OUTCOME = frozenset(OUTCOMES)
#: Each fact's fields after its letter (see :mod:`~pytest_toll.transcripts.summary`).
_FACTS: dict[str, tuple[Any, ...]] = {
    "C": (_TEXT, _TEXT, _TEXT, _OPTIONAL_TEXT, bool, _OPTIONAL_TEXT, _TEXT),
    "R": (_TEXT, _TEXT, _OUTCOME, int, int),
    "U": (_TEXT, _OPTIONAL_TEXT, _OPTIONAL_TEXT, int, int, int, int, int),
    "T": (_TEXT, int, int),
    "B": (_TEXT,),
    "X": (int, _TEXT),
}
#: The rows of a summary's logs: [call id, shape, outcome, tokens], [message id, prompt],
#: [message id, model, reported growth, our count].
_CALL_ROW = (_TEXT, _TEXT, _OUTCOME, int)
_TURN_ROW = (_OPTIONAL_TEXT, int)
_DRIFT_ROW = (_OPTIONAL_TEXT, _OPTIONAL_TEXT, int, int)


def _row(value: Any, fields: tuple[Any, ...]) -> bool:
    if not isinstance(value, list) or len(value) != len(fields):
        return False
    for item, expected in zip(value, fields):
        if isinstance(expected, frozenset):
            if item not in expected:
                return False
        elif not _conforms(item, expected):
            return False
    return True


def _segment(data: Any) -> SegmentFacts | None:
    if not (isinstance(data, list) and len(data) == 2 and isinstance(data[0], list)):
        return None
    facts, lines = data
    if not _conforms(lines, int) or lines < 0:
        return None
    for fact in facts:
        if not (isinstance(fact, list) and fact and fact[0] in _FACTS):
            return None
        if not _row(fact[1:], _FACTS[fact[0]]):
            return None
    return SegmentFacts(facts, lines)


def _summary(data: Any) -> FileSummary | None:
    if not _conforms(data, FileSummary):
        return None
    if not all(_row(row, _CALL_ROW) for row in data["call_log"]):
        return None
    if not all(_row(row, _TURN_ROW) for row in data["turn_log"]):
        return None
    if data["drift"] is not None and not all(_row(row, _DRIFT_ROW) for row in data["drift"]):
        return None
    return FileSummary.from_json(data)


def _report(data: Any) -> ScanReport | None:
    return ScanReport.from_json(data) if _conforms(data, ScanReport) else None
