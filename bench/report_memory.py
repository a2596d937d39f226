"""What the scan report's own state costs in memory, apart from reading: Python allocations
(tracemalloc) while :func:`build_report` merges a history's file summaries.

    python bench/report_memory.py HISTORY [--cache DIR] [--workers 2]

The summaries are read first (from the cache when ``--cache`` holds them, else by a scan that
fills it) and held in a list, so only what the report builds is traced: the peak during the
merge and what the report still holds once it returns, in MB, as JSON. This is the part of a
scan's peak RSS that grows with the history (issue 38: flat in history size).
"""

from __future__ import annotations

import argparse
import json
import sys
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_toll.transcripts.report import build_report
from pytest_toll.transcripts.scan import select_files, summarize_files

ROOTS = ("claude", "codex")
MB = 1 << 20


def report_memory(history: Path, cache: Path | None, workers: int) -> dict[str, float]:
    files = select_files([history / root for root in ROOTS if (history / root).is_dir()])
    summaries, _ = summarize_files(files, cache=cache, workers=workers)
    tracemalloc.start()
    try:
        report = build_report(iter(summaries))
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return {
        "files": len(summaries),
        "calls": report.calls,
        "repeats": len(report.repeats),
        "peak_mb": round(peak / MB, 1),
        "held_mb": round(held / MB, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("history", type=Path)
    parser.add_argument("--cache", type=Path, help="a summary cache to read (and fill)")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    print(json.dumps(report_memory(args.history, args.cache, args.workers)))


if __name__ == "__main__":
    main()
