"""Many transcript files: discovery, the summary cache, the process pool, and :func:`scan`.

Data flows one way: transcript records (:mod:`~pytest_toll.transcripts.readers`) → one
:class:`~pytest_toll.transcripts.summary.FileSummary` per file → a
:class:`~pytest_toll.transcripts.report.ScanReport` over many files. File summaries are plain
data, cached per file keyed by (path, size, mtime, tokenizer) so an unchanged history re-scans
almost free, and computed in a process pool when many files need reading. Which files are read
and how is one :class:`ReadOptions`, built once by the caller (the CLI, the gate, the fixture).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.tokens import TOKENIZER_NAME, encoding
from pytest_toll.transcripts.counting import text_counter
from pytest_toll.transcripts.readers import discover
from pytest_toll.transcripts.report import ScanReport, build_report
from pytest_toll.transcripts.summary import SUMMARY_VERSION, FileSummary, summarize_file


@dataclass(frozen=True)
class ReadOptions:
    """Which transcript files to read and how: the options every transcript verb shares."""

    #: only files changed in the last N days
    since_days: float | None = None
    #: only the N newest files
    limit: int | None = None
    #: the summary cache's folder; None reads every file again
    cache: Path | None = None
    #: processes for reading files; None is one per core
    workers: int | None = None
    #: show "read N/M transcript files" on stderr
    progress: bool = False


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "pytest-toll"


class SummaryCache:
    """Per-file summaries in one SQLite file; any cache failure just means a re-read."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "transcripts.sqlite"
        self._db: sqlite3.Connection | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=10)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS summaries (path TEXT, kind TEXT, size INTEGER,"
                " mtime INTEGER, tokenizer TEXT, version INTEGER, data TEXT,"
                " PRIMARY KEY (path, kind))"
            )
        except (sqlite3.Error, OSError):
            self._db = None

    def get(self, path: str, kind: str, size: int, mtime: int) -> FileSummary | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT data FROM summaries WHERE path=? AND kind=? AND size=? AND mtime=?"
                " AND tokenizer=? AND version=?",
                (path, kind, size, mtime, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchone()
            return None if row is None else FileSummary.from_json(json.loads(row[0]))
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
                            json.dumps(summary.to_json()),
                        )
                        for path, kind, size, mtime, summary in entries
                    ],
                )
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def select_files(
    roots: Sequence[Path], since_days: float | None = None, limit: int | None = None
) -> list[tuple[Path, os.stat_result]]:
    """Transcript files under the roots, newest first, filtered by age and count."""
    files = []
    cutoff = time.time() - since_days * 86400 if since_days is not None else None
    for path in discover(list(roots)):
        try:
            status = path.stat()
        except OSError:
            continue
        if cutoff is not None and status.st_mtime < cutoff:
            continue
        files.append((path, status))
    files.sort(key=lambda item: item[1].st_mtime, reverse=True)
    return files[:limit] if limit is not None else files


def transcript_files(
    roots: Sequence[Path], since_days: float | None = None, limit: int | None = None
) -> list[tuple[Path, os.stat_result]]:
    """``select_files``, where finding none is could-not-judge, never an empty pass."""
    files = select_files(roots, since_days, limit)
    if not files:
        raise CouldNotJudge(
            f"no transcripts found under {', '.join(map(str, roots)) or 'no roots'}"
        )
    return files


def _single_threaded() -> bool:
    """Whether this process runs one thread, counting threads started outside ``threading``
    (execnet's, in a pytest-xdist worker) where the OS can tell."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


def _summarize_for_pool(job: tuple[str, bool]) -> tuple[str, FileSummary]:
    path, drift = job
    return path, summarize_file(Path(path), drift=drift)


#: Below this much unread data a pool costs more than it saves.
POOL_MIN_BYTES = 4 * 1024 * 1024


@dataclass
class ScanStats:
    files: int = 0
    cached: int = 0
    read_bytes: int = 0
    workers: int = 1


def summarize_files(
    files: Sequence[tuple[Path, os.stat_result]],
    *,
    drift: bool = False,
    cache: Path | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> tuple[list[FileSummary], ScanStats]:
    """A summary per file: from the cache when unchanged, else read (in a pool if it pays)."""
    kind = "drift" if drift else "tolls"
    store = SummaryCache(cache) if cache is not None else None
    summaries: dict[str, FileSummary] = {}
    missing: list[tuple[str, int, int]] = []
    for path, status in files:
        name = str(path)
        found = store.get(name, kind, status.st_size, status.st_mtime_ns) if store else None
        if found is not None:
            summaries[name] = found
        else:
            missing.append((name, status.st_size, status.st_mtime_ns))
    stats = ScanStats(len(files), len(summaries), sum(size for _, size, _ in missing))
    workers = workers if workers is not None else (os.cpu_count() or 1)
    workers = max(1, min(workers, len(missing)))
    done: list[tuple[str, str, int, int, FileSummary]] = []
    shown = [0.0]

    def report(finished: int) -> None:
        now = time.monotonic()
        if progress and (now - shown[0] > 0.2 or finished == len(missing)):
            shown[0] = now
            sys.stderr.write(f"\rtoll: read {finished}/{len(missing)} transcript files")
            if finished == len(missing):
                sys.stderr.write("\n")
            sys.stderr.flush()

    # Largest first, so one big file does not finish last on an otherwise idle pool.
    missing.sort(key=lambda item: item[1], reverse=True)
    if workers > 1 and stats.read_bytes >= POOL_MIN_BYTES:
        import multiprocessing  # only a big scan pays for it

        stats.workers = workers
        methods = multiprocessing.get_all_start_methods()
        if "fork" in methods and _single_threaded():
            # Forked workers share the vocabulary loaded here instead of each reading it.
            # multiprocessing.Pool forks its workers before starting its own threads
            # (concurrent.futures forks from a manager thread, which 3.12+ warns about).
            encoding()
            method: str | None = "fork"
        else:
            # Forking a multi-threaded process (a pytest-xdist worker, say) can leave a child
            # blocked on a lock another thread held: such hosts pay for fresh interpreters.
            method = "forkserver" if "forkserver" in methods else None
        context = multiprocessing.get_context(method)
        where = {name: (size, mtime) for name, size, mtime in missing}
        jobs = [(name, drift) for name, _size, _mtime in missing]
        with context.Pool(processes=workers) as pool:
            for finished, (name, summary) in enumerate(
                pool.imap_unordered(_summarize_for_pool, jobs), 1
            ):
                size, mtime = where[name]
                summaries[name] = summary
                done.append((name, kind, size, mtime, summary))
                report(finished)
    else:
        count = text_counter()
        for finished, (name, size, mtime) in enumerate(missing, 1):
            summary = summarize_file(Path(name), drift=drift, count=count)
            summaries[name] = summary
            done.append((name, kind, size, mtime, summary))
            report(finished)
    if store is not None:
        store.put(done)
        store.close()
    return [summaries[str(path)] for path, _ in files], stats


def read_summaries(
    roots: Sequence[Path], options: ReadOptions, *, drift: bool = False
) -> list[FileSummary]:
    """A summary of each transcript file under ``roots`` that the options select, newest
    first; finding none is could-not-judge."""
    files = transcript_files(roots, options.since_days, options.limit)
    summaries, _ = summarize_files(
        files,
        drift=drift,
        cache=options.cache,
        workers=options.workers,
        progress=options.progress,
    )
    return summaries


def scan(roots: Sequence[Path], options: ReadOptions) -> ScanReport:
    """The toll table of every transcript under ``roots``; CouldNotJudge when there is none."""
    summaries = read_summaries(roots, options)
    report = build_report(summaries)
    if report.calls == 0:
        raise CouldNotJudge(
            f"{len(summaries)} transcript file(s) read, but they contain no tool calls"
        )
    return report
