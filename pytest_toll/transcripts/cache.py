"""The transcript cache: a summary per unchanged file, the facts of each read segment.

One SQLite file. A scan of exactly the files scanned before (same paths, sizes and mtimes)
is served the report it made (so a warm scan reads one row, whatever the history's size). An
unchanged file (same path, size and mtime) is served its
:class:`~pytest_toll.transcripts.summary.FileSummary`; a changed one is cut into the same
segments as before (:func:`~pytest_toll.transcripts.readers.segment_bounds`), and every segment
whose bytes are still those it was read from — same range, same bytes at both of its ends —
is served its facts, so an appended-to session re-reads only what was appended (and the
segment it was appended to). Any cache failure just means a re-read.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.tokens import TOKENIZER_NAME
from pytest_toll.transcripts.report import REPORT_VERSION, ScanReport
from pytest_toll.transcripts.summary import SUMMARY_VERSION, FileSummary, SegmentFacts

#: Bytes at each end of a segment that must be unchanged for its cached facts to be used.
FINGERPRINT_BYTES = 4096


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "pytest-toll"


def fingerprint(path: Path, start: int, end: int) -> str:
    """The segment's range and a digest of the bytes at both of its ends."""
    digest = hashlib.blake2b(digest_size=16)
    with path.open("rb") as stream:
        stream.seek(start)
        digest.update(stream.read(min(FINGERPRINT_BYTES, end - start)))
        tail = max(start, end - FINGERPRINT_BYTES)
        stream.seek(tail)
        digest.update(stream.read(end - tail))
    return f"{start}-{end}-{digest.hexdigest()}"


#: Whole scan reports kept (one per set of files and options scanned lately).
REPORTS_KEPT = 8


def report_key(kind: str, files: Iterable[tuple[str, int, int]]) -> str:
    """Names one scan's input exactly: the kind of summary, the summary and report versions,
    the tokenizer, and every file's path, size and mtime in the order read (which orders the
    report's problems and ties); any file added, removed or changed is another key."""
    digest = hashlib.blake2b(digest_size=20)
    digest.update(f"{kind}\0{SUMMARY_VERSION}\0{REPORT_VERSION}\0{TOKENIZER_NAME}".encode())
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

    def __init__(self, directory: Path) -> None:
        self.path = directory / "transcripts.sqlite"
        self._db: sqlite3.Connection | None = None
        self._dumps, self._loads = _codec()
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=10)
            # A write-ahead log, synced at checkpoints only: a commit per batch of files cost
            # a sync each (0.23 s of the parent's time in a 1 GB scan, by cProfile); a crash loses at most
            # latest batches, which are read again.
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS summaries (path TEXT, kind TEXT, size INTEGER,"
                " mtime INTEGER, tokenizer TEXT, version INTEGER, data BLOB,"
                " PRIMARY KEY (path, kind))"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS segments (path TEXT, kind TEXT, segment TEXT,"
                " tokenizer TEXT, version INTEGER, data BLOB, PRIMARY KEY (path, kind, segment))"
            )
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS reports (key TEXT PRIMARY KEY, used INTEGER, data BLOB)"
            )
        except (sqlite3.Error, OSError):
            self._db = None

    def has(self, path: str, kind: str, size: int, mtime: int) -> bool:
        """Whether an unchanged file's summary is cached (without reading it)."""
        if self._db is None:
            return False
        try:
            row = self._db.execute(
                "SELECT 1 FROM summaries WHERE path=? AND kind=? AND size=? AND mtime=?"
                " AND tokenizer=? AND version=?",
                (path, kind, size, mtime, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchone()
        except sqlite3.Error:
            return False
        return row is not None

    def get(self, path: str, kind: str, size: int, mtime: int) -> FileSummary | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT data FROM summaries WHERE path=? AND kind=? AND size=? AND mtime=?"
                " AND tokenizer=? AND version=?",
                (path, kind, size, mtime, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchone()
            return None if row is None else FileSummary.from_json(self._loads(row[0]))
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
                            kind,
                            size,
                            mtime,
                            TOKENIZER_NAME,
                            SUMMARY_VERSION,
                            self._dumps(summary.to_json()),
                        )
                        for path, kind, size, mtime, summary in entries
                    ],
                )
        except sqlite3.Error:
            pass

    def segments(self, path: str, kind: str) -> dict[str, SegmentFacts]:
        """The cached facts of a file's segments, by fingerprint."""
        if self._db is None:
            return {}
        try:
            rows = self._db.execute(
                "SELECT segment, data FROM segments WHERE path=? AND kind=? AND tokenizer=?"
                " AND version=?",
                (path, kind, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchall()
            found = {}
            for segment, data in rows:
                facts, lines = self._loads(data)
                found[segment] = SegmentFacts(facts, lines)
            return found
        except (sqlite3.Error, ValueError, TypeError):
            return {}

    def put_segments(
        self, kind: str, files: Iterable[tuple[str, Mapping[str, SegmentFacts]]]
    ) -> None:
        """Replace each file's cached segments with these (the ones it is cut into now)."""
        if self._db is None:
            return
        try:
            with self._db:
                for path, segments in files:
                    self._db.execute("DELETE FROM segments WHERE path=? AND kind=?", (path, kind))
                    self._db.executemany(
                        "INSERT OR REPLACE INTO segments VALUES (?,?,?,?,?,?)",
                        [
                            (
                                path,
                                kind,
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
            return None if row is None else ScanReport.from_json(self._loads(row[0]))
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
