"""Many transcript files: discovery, the process pool, progress, and :func:`scan`.

Data flows one way: transcript records (:mod:`~pytest_toll.transcripts.formats`) → facts per
byte segment of a file → one :class:`~pytest_toll.transcripts.summary.FileSummary` per file → a
:class:`~pytest_toll.transcripts.report.ScanReport` over many files. Work is split by bytes, not
files: a big Claude Code file is cut into segments of about ``SEGMENT_BYTES`` that the pool
reads side by side; workers return facts (counts, shapes, outcomes — never texts or records),
the parent folds each file's facts in order. Summaries, facts and whole reports are cached
(:mod:`~pytest_toll.transcripts.cache`). Which files are read and how is one
:class:`ReadOptions`, built once by the caller (the CLI, the gate, the fixture).
"""

from __future__ import annotations

import itertools
import os
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.inert import shown
from pytest_toll.core.tokens import exact_count
from pytest_toll.transcripts.cache import (
    SCOPE_DRIFT,
    SCOPE_TOLLS,
    SummaryCache,
    cache_dir,
    fingerprint,
    report_key,
)
from pytest_toll.transcripts.formats import format_of, transcript_format, tree_status
from pytest_toll.transcripts.formats.base import segment_bounds
from pytest_toll.transcripts.locations import discover
from pytest_toll.transcripts.report import ScanReport, build_report
from pytest_toll.transcripts.summary import (
    FileSummary,
    SegmentFacts,
    fold,
    segment_facts,
    summarize_file,
)

__all__ = [
    "ReadOptions",
    "cache_dir",
    "iter_summaries",
    "scan",
    "select_files",
    "summarize_files",
]

#: Seconds a scan runs before it shows its progress line (``TOLL_PROGRESS_AFTER`` overrides).
PROGRESS_AFTER_SECONDS = 1.0
PROGRESS_ENVIRONMENT = "TOLL_PROGRESS_AFTER"


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
    #: show a progress line on stderr (files, MB, ETA) once reading takes a while
    progress: bool = False


def select_files(
    roots: Sequence[Path], since_days: float | None = None, limit: int | None = None
) -> list[tuple[Path, os.stat_result]]:
    """Transcript files under the roots, newest first, filtered by age and count."""
    files = []
    cutoff = time.time() - since_days * 86400 if since_days is not None else None
    for path in discover(list(roots)):
        try:
            # A session read from more than its file (a storage tree, a database and its
            # log) is versioned by all of them, so the cache sees any change.
            status = tree_status(path, path.stat())
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


#: Below this much unread data a pool costs more than it saves.
POOL_MIN_BYTES = 4 * 1024 * 1024
#: Files of a format read in segments (Claude Code's) are cut at about this size: a big file spreads over the
#: pool, and an appended-to file re-reads only its last segments.
SEGMENT_BYTES = 16 * 1024 * 1024
#: From this much unread data per reading process on, the fast exact counter (when installed
#: and proven) counts: its load costs 0.16 s more than tiktoken's here (0.40 against 0.24,
#: bench/lines.py), repaid by counting a history's results in 2.0 ms per MB against 11.9
#: (bench/scan.py's floor).
FAST_COUNTER_MIN_BYTES = 16 * 1024 * 1024


#: Summaries and facts are written to the cache in one transaction per this many files, or
#: per this much source read, whichever comes first: facts wait in memory until written.
FLUSH_FILES = 200
FLUSH_BYTES = 32 * 1024 * 1024


@dataclass
class ScanStats:
    files: int = 0
    cached: int = 0
    read_bytes: int = 0
    workers: int = 1
    #: segments of changed files served from the cache instead of read
    cached_segments: int = 0


@dataclass
class _Job:
    path: str
    start: int
    end: int
    key: str
    drift: bool
    fast: bool
    #: whether a later segment follows (its line numbers continue from this one's)
    followed: bool
    #: the whole file in one job: the worker folds it and returns its summary
    whole: bool = False


def _read_segment(job: _Job) -> tuple[_Job, SegmentFacts | FileSummary]:
    """A segment's facts; for a file read whole, its summary (folded where it was read, so
    the parent has less to do while the pool reads)."""
    # The counter itself, not a content-hash cache in front of it: tool results rarely repeat
    # within a scan (4% of the bench history's bytes), and digesting each cost more than that.
    count = exact_count(job.fast)
    path = Path(job.path)
    facts = segment_facts(
        path, job.start, job.end, drift=job.drift, count=count, count_lines=job.followed
    )
    if job.whole:
        return job, fold(job.path, transcript_format(path), [facts], job.drift)
    return job, facts


class Progress:
    """``toll: read 12/60 files, 410/1,020 MB, about 7 s left`` on one rewritten line, once
    the reading has taken ``after`` seconds; nothing at all for a quick scan."""

    def __init__(self, files: int, total_bytes: int, after: float, stream: TextIO) -> None:
        self.files, self.total_bytes, self.after, self.stream = files, total_bytes, after, stream
        self.started = time.monotonic()
        self.shown_at = 0.0
        self.shown = False

    def update(self, files: int, done_bytes: int) -> None:
        now = time.monotonic()
        elapsed = now - self.started
        if elapsed < self.after or (now - self.shown_at < 0.2 and files < self.files):
            return
        self.shown_at, self.shown = now, True
        left = ""
        if 0 < done_bytes < self.total_bytes:
            left = f", about {elapsed * (self.total_bytes - done_bytes) / done_bytes:.0f} s left"
        self.stream.write(
            f"\rtoll: read {files:,}/{self.files:,} files, {done_bytes / 1e6:,.0f}/"
            f"{self.total_bytes / 1e6:,.0f} MB{left}\x1b[K"
        )
        self.stream.flush()

    def close(self) -> None:
        if self.shown:
            self.stream.write("\n")
            self.stream.flush()


def _progress_after(environ: Mapping[str, str] | None = None) -> float:
    environ = os.environ if environ is None else environ
    try:
        return max(0.0, float(environ.get(PROGRESS_ENVIRONMENT, PROGRESS_AFTER_SECONDS)))
    except ValueError:
        return PROGRESS_AFTER_SECONDS


class _Reading:
    """One scan's files on their way to summaries: which are cached, which segments of the
    changed ones are still to read (:attr:`jobs`), the facts found so far, the summaries
    ready to hand on in the files' order, the batch waiting to be written to the cache, and
    the progress line."""

    def __init__(
        self,
        files: Sequence[tuple[Path, os.stat_result]],
        drift: bool,
        store: SummaryCache | None,
        stats: ScanStats,
        progress: bool,
    ) -> None:
        self.files, self.drift, self.store, self.stats = files, drift, store, stats
        self.scope = SCOPE_DRIFT if drift else SCOPE_TOLLS
        self.order = [str(path) for path, _ in files]
        self.cached: set[str] = set()
        self.ready: dict[str, FileSummary] = {}
        # per changed file: its stat, its segment keys in order, and the facts found so far
        self.pending: dict[str, tuple[int, int, list[str], dict[str, SegmentFacts]]] = {}
        self.jobs: list[_Job] = []
        self.remaining: dict[str, int] = {}
        # what waits to be written to the cache
        self.done: list[tuple[str, str, int, int, FileSummary]] = []
        self.done_segments: list[tuple[str, dict[str, SegmentFacts]]] = []
        self.unflushed = 0
        self.finished_files = 0
        self.read_bytes = 0
        self.handed = 0
        stats.files = len(files)
        for path, status in files:
            self._plan(path, status)
        # The progress line is ours, digits and its own escape; the CLI's guarded stream
        # would show that escape as text.
        stream = getattr(sys.stderr, "unguarded", sys.stderr)
        self.progress = progress
        self.meter = Progress(len(self.pending), stats.read_bytes, _progress_after(), stream)

    def _plan(self, path: Path, status: os.stat_result) -> None:
        """A file served from the cache, or the jobs that read its segments not cached."""
        name, store, stats = str(path), self.store, self.stats
        if store is not None and store.has(name, self.scope, status.st_size, status.st_mtime_ns):
            self.cached.add(name)
            stats.cached += 1
            return
        # (the format is read from the file's first line: only for a file big enough to cut)
        split = not self.drift and status.st_size > SEGMENT_BYTES and format_of(path).segmented
        bounds = (
            segment_bounds(path, status.st_size, SEGMENT_BYTES) if split else [(0, status.st_size)]
        )
        # Without a cache no key is ever looked up again: the range alone names a segment.
        keys = [fingerprint(path, *bound) if store else f"{bound}" for bound in bounds]
        known = store.segments(name, self.scope) if store else {}
        facts = {key: known[key] for key in keys if key in known}
        stats.cached_segments += len(facts)
        self.pending[name] = (status.st_size, status.st_mtime_ns, keys, facts)
        self.remaining[name] = len(keys) - len(facts)
        whole = len(bounds) == 1
        for (start, end), key in zip(bounds, keys):
            if key not in facts:
                followed = end < status.st_size
                self.jobs.append(_Job(name, start, end, key, self.drift, False, followed, whole))
                stats.read_bytes += end - start

    def finish_cached(self) -> None:
        """Fold every changed file whose every segment was cached."""
        for name in [name for name, left in self.remaining.items() if left == 0]:
            self.finish(name)

    def flush(self) -> None:
        # In batches: one transaction per file would make thousands of small files slow, one
        # for the whole scan would hold every file's facts until the end.
        if self.store is not None:
            self.store.put(self.done)
            self.store.put_segments(self.scope, self.done_segments)
        self.done.clear()
        self.done_segments.clear()
        self.unflushed = 0

    def finish(self, name: str, summary: FileSummary | None = None) -> None:
        size, mtime, keys, facts = self.pending.pop(name)
        if summary is None:
            summary = fold(
                name, transcript_format(Path(name)), (facts[k] for k in keys), self.drift
            )
        self.ready[name] = summary
        self.finished_files += 1
        if self.store is not None:
            self.done.append((name, self.scope, size, mtime, summary))
            # Only a segment that ends before the file does can be read again unchanged: the
            # last one grows with the file (and a file of one segment is read whole again).
            complete = {key: facts[key] for key in keys[:-1]}
            if complete:
                self.done_segments.append((name, complete))
            self.unflushed += size
            if len(self.done) >= FLUSH_FILES or self.unflushed >= FLUSH_BYTES:
                self.flush()

    def collect(self, job: _Job, read: SegmentFacts | FileSummary) -> None:
        """A job's result: a whole file's summary, or one segment's facts (the file is
        folded once its last segment is in)."""
        self.read_bytes += job.end - job.start
        if isinstance(read, FileSummary):
            self.finish(job.path, read)
        else:
            self.pending[job.path][3][job.key] = read
            self.remaining[job.path] -= 1
            if self.remaining[job.path] == 0:
                self.finish(job.path)
        if self.progress:
            self.meter.update(self.finished_files, self.read_bytes)

    def hand_on(self) -> Iterator[FileSummary]:
        """The summaries ready, in the order of ``files`` (the report's order: problems,
        ties), up to the first one not ready yet."""
        while self.handed < len(self.order):
            name = self.order[self.handed]
            if name in self.cached:
                status = self.files[self.handed][1]
                found = self.store.get(name, self.scope, *_stat_key(status)) if self.store else None
                if found is None:  # gone from the cache since: read it now
                    found = summarize_file(Path(name), drift=self.drift)
                yield found
            elif name in self.ready:
                yield self.ready.pop(name)
            else:
                return
            self.handed += 1

    def close(self) -> None:
        """The progress line ended, and the last batch written to the cache."""
        if self.progress:
            self.meter.close()
        self.flush()


def iter_summaries(
    files: Sequence[tuple[Path, os.stat_result]],
    *,
    drift: bool = False,
    cache: Path | None = None,
    workers: int | None = None,
    progress: bool = False,
    stats: ScanStats | None = None,
) -> Iterator[FileSummary]:
    """A summary per file, in the order of ``files``, each handed on as soon as it and those
    before it are done: from the cache when unchanged, else read segment by segment (the
    unchanged segments of a changed file from the cache), in a pool when it pays. Nothing
    holds the summaries already handed on, so memory stays flat in the history's size."""
    store = SummaryCache(cache) if cache is not None else None
    stats = stats if stats is not None else ScanStats()
    reading = _Reading(files, drift, store, stats, progress)
    jobs = reading.jobs
    workers = workers if workers is not None else (os.cpu_count() or 1)
    workers = max(1, min(workers, len(jobs)))
    pooled = workers > 1 and stats.read_bytes >= POOL_MIN_BYTES
    # Each reading process loads its counter: the fast one pays where each reads enough.
    fast = stats.read_bytes >= FAST_COUNTER_MIN_BYTES * (workers if pooled else 1)
    for job in jobs:
        job.fast = fast
    reading.finish_cached()
    yield from reading.hand_on()
    # In the files' order, so summaries can be handed on as they come; segments are at most
    # SEGMENT_BYTES, so the last one to finish leaves the pool idle only briefly.
    if pooled:
        import multiprocessing  # only a big scan pays for it

        stats.workers = workers
        methods = multiprocessing.get_all_start_methods()
        if "fork" in methods and _single_threaded():
            # Each worker loads its own counter. Loaded here first and shared, the vocabulary
            # also sat in the parent, which counts nothing: a 1 GB scan peaked at 124 MB, not
            # 99, in the same wall time (while the load runs, a core idles either way).
            # multiprocessing.Pool forks its workers before starting its own threads
            # (concurrent.futures forks from a manager thread, which 3.12+ warns about).
            method: str | None = "fork"
        else:
            # Forking a multi-threaded process (a pytest-xdist worker, say) can leave a child
            # blocked on a lock another thread held: such hosts pay for fresh interpreters.
            method = "forkserver" if "forkserver" in methods else None
        context = multiprocessing.get_context(method)
        with context.Pool(processes=workers) as pool:
            for job, read in pool.imap_unordered(_read_segment, jobs):
                reading.collect(job, read)
                yield from reading.hand_on()
    else:
        for job in jobs:
            reading.collect(*_read_segment(job))
            yield from reading.hand_on()
    reading.close()
    if store is not None:
        store.close()


def _stat_key(status: os.stat_result) -> tuple[int, int]:
    return status.st_size, status.st_mtime_ns


def summarize_files(
    files: Sequence[tuple[Path, os.stat_result]],
    *,
    drift: bool = False,
    cache: Path | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> tuple[list[FileSummary], ScanStats]:
    """Every file's summary (:func:`iter_summaries`) in a list, and how they were found."""
    stats = ScanStats()
    summaries = list(
        iter_summaries(
            files, drift=drift, cache=cache, workers=workers, progress=progress, stats=stats
        )
    )
    return summaries, stats


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
    """The toll table of every transcript under ``roots``; CouldNotJudge when there is none.
    Summaries stream into the report: none is held once it is added. With a cache, a scan of
    exactly the files of an earlier one is served that scan's report."""
    files = transcript_files(roots, options.since_days, options.limit)
    store = SummaryCache(options.cache) if options.cache is not None else None
    key = report_key(SCOPE_TOLLS, ((str(path), *_stat_key(status)) for path, status in files))
    report = store.report(key) if store is not None else None
    if report is None:
        report = build_report(
            iter_summaries(
                files,
                cache=options.cache,
                workers=options.workers,
                progress=options.progress,
            )
        )
        if store is not None:
            store.put_report(key, report)
    if store is not None:
        store.close()
    if report.calls == 0:
        raise CouldNotJudge(_no_calls(len(files), report))
    return report


#: Files whose unreadable lines a scan with no call names (the rest are counted).
_UNREADABLE_NAMED = 3


def _no_calls(files: int, report: ScanReport) -> str:
    """Why a scan has nothing to rank, with the unreadable lines that may be why: a file that
    is not JSON at all is read as one bad line, and the report that would list it on stderr
    is never printed."""
    said = f"{files} transcript file(s) read, but they contain no tool calls"
    if not report.unreadable_lines:
        return said
    named = [
        f"{shown(path)} ({(report.problems.get(path) or ['unreadable'])[0]})"
        for path in itertools.islice(report.unreadable_by_file, _UNREADABLE_NAMED)
    ]
    more = len(report.unreadable_by_file) - len(named)
    return f"{said}; {report.unreadable_lines:,} line(s) could not be read: {', '.join(named)}" + (
        f" and {more:,} more file(s)" if more else ""
    )
