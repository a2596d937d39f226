"""Where a cold scan's time goes, per line, in one process: the floor's two parts against the
reader's stages, as ratios to the floor and as microseconds of Python work per line.

    python bench/lines.py [--megabytes 50] [--keep DIR]

On a generated history (:mod:`history`), each stage timed in CPU seconds, best of three:

- the floor: orjson over every line, and the fastest exact counter over the result texts;
- ``read_records``: lines read, parsed and turned into records;
- ``segment_facts``: records turned into facts (counts, shapes, outcomes), counting included;
- the summaries: facts folded per file (what a scan's worker does);

each for the typed reader (msgspec, :mod:`pytest_toll.core.jsonlines`) and the pure one
(``TOLL_PARSER=pure``), and, in fresh processes, each exact counter's load (a fixed cost each
reading process pays). Then a worker's time on the typed path as shares: cutting lines,
decoding them, building records, counting, facts, folding.

    python bench/lines.py --shares HISTORY [--rounds 3]

prints, as JSON, a cold scan's CPU seconds per stage over an existing history (what
``bench/scan.py --profile`` shows beside the scan it measured): :func:`scan_shares`.

What a stage costs beyond the floor is the scan's own Python work; divided by the lines read,
it says how far a design that keeps the line loop in Python can get.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.history import generate
from bench.outputs import best_cpu
from pytest_toll.core import jsonlines
from pytest_toll.core.tokens import exact_count, exact_engine
from pytest_toll.transcripts.cache import SCOPE_TOLLS, SummaryCache
from pytest_toll.transcripts.formats import claude, codex, read_records, transcript_format
from pytest_toll.transcripts.formats.base import NO_RECORDS, iter_lines, typed_object_lines
from pytest_toll.transcripts.report import ScanReport, build_report
from pytest_toll.transcripts.summary import FileSummary, SegmentFacts, fold, segment_facts

ROOTS = ("claude", "codex")


def _cpu(work: Callable[[], object]) -> float:
    return best_cpu(work, rounds=3)


_LOAD = """
import time
started = time.perf_counter()
from pytest_toll.core.tokens import exact_count
exact_count({fast})("x")
print(time.perf_counter() - started)
"""


def _load_seconds(fast: bool, rounds: int = 3) -> float:
    """The fastest first count in a fresh process: import, vocabulary load (and for the fast
    counter its proof on the probe corpus)."""
    here = str(Path(__file__).resolve().parents[1])
    return min(
        float(
            subprocess.run(
                [sys.executable, "-c", _LOAD.format(fast=fast)],
                cwd=here,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        )
        for _ in range(rounds)
    )


_START = """
import resource
from pytest_toll.cli import main
from pytest_toll.transcripts import scan, summary
from pytest_toll.core.tokens import exact_count
exact_count(True)("x")
usage = resource.getrusage(resource.RUSAGE_SELF)
print(usage.ru_utime + usage.ru_stime)
"""

#: The stages of :func:`scan_shares`, in the order a line goes through them.
STAGES = (
    "start and counter load",
    "cutting lines",
    "decoding (msgspec)",
    "building records",
    "facts (shapes, outcomes)",
    "counting",
    "folding",
    "report",
    "cache",
)


def _start_cpu(rounds: int) -> float:
    """A fresh process's CPU seconds (rusage: interpreter start included) to import the CLI
    and the scan, and to load and prove the exact counter a big scan counts with."""
    return min(
        float(
            subprocess.run(
                [sys.executable, "-c", _START], check=True, capture_output=True, text=True
            ).stdout
        )
        for _ in range(rounds)
    )


def _zero(text: str) -> int:
    return 0


def scan_shares(history: Path, rounds: int = 3) -> dict[str, float]:
    """A cold one-worker scan's CPU seconds per stage (:data:`STAGES`), in this process over
    every transcript of ``history``, each the fastest of ``rounds``. Each stage is measured
    as the difference between two passes that differ by that stage alone, so nothing is
    instrumented: cutting lines is :func:`iter_lines`; decoding adds the typed decoder (and
    the pure path for any line it gives up) with builders that make no record; building
    records is the rest of :func:`read_records` (the subtrees kept whole are parsed there);
    facts are :func:`segment_facts` with a counter that returns 0; counting is the real
    counter's difference (its Python wrapper included); folding, the report and the cache
    (summaries and report written to a fresh SQLite file) are timed on their own. The start is
    a fresh process's: interpreter, imports, the counter's load and proof."""
    files = sorted(path for root in ROOTS for path in (history / root).rglob("*.jsonl"))
    formats = {path: transcript_format(path) for path in files}
    decoders = {"claude": claude._decode, "codex": codex._decode}
    count = exact_count(True)
    count("warm up")

    def nothing(_: object) -> list[Any]:
        return NO_RECORDS

    def cut() -> None:
        for path in files:
            for _ in iter_lines(path):
                pass

    def decode() -> None:
        for path in files:
            decoder = decoders[formats[path]]
            for _ in typed_object_lines(path, decoder, nothing, nothing, 1 << 62):
                pass

    def records() -> None:
        for path in files:
            for _ in read_records(path):
                pass

    facts: list[SegmentFacts] = []
    summaries: list[FileSummary] = []

    def counted() -> None:
        facts[:] = [segment_facts(path, count=count) for path in files]

    def folded() -> None:
        summaries[:] = [
            fold(str(path), formats[path], [found]) for path, found in zip(files, facts)
        ]

    def cached(report: ScanReport) -> None:
        with tempfile.TemporaryDirectory(prefix="toll-bench-cache-") as folder:
            store = SummaryCache(Path(folder))
            store.put(
                (str(path), SCOPE_TOLLS, path.stat().st_size, path.stat().st_mtime_ns, summary)
                for path, summary in zip(files, summaries)
            )
            store.put_report("bench", report)
            store.close()

    def cpu(work: Callable[[], object]) -> float:
        return best_cpu(work, rounds)

    lines, decoded, built = cpu(cut), cpu(decode), cpu(records)
    shaped = cpu(lambda: [segment_facts(path, count=_zero) for path in files])
    whole = cpu(counted)
    folding = cpu(folded)
    reporting = cpu(lambda: build_report(iter(summaries)))
    report = build_report(iter(summaries))
    seconds = (
        _start_cpu(rounds),
        lines,
        decoded - lines,
        built - decoded,
        shaped - built,
        whole - shaped,
        folding,
        reporting,
        cpu(lambda: cached(report)),
    )
    return dict(zip(STAGES, seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=50.0)
    parser.add_argument("--keep", type=Path, help="generate (or reuse) the history here")
    parser.add_argument("--shares", type=Path, help="a history: print scan_shares as JSON")
    parser.add_argument("--rounds", type=int, default=3, help="--shares: the fastest is kept")
    args = parser.parse_args()
    if args.shares is not None:
        print(json.dumps(scan_shares(args.shares, args.rounds)))
        return
    history = (args.keep or Path(tempfile.mkdtemp(prefix="toll-bench-lines-"))) / (
        f"history-{args.megabytes:g}"
    )
    texts_path = history / "texts.jsonl"
    if not texts_path.exists():
        generate(history, args.megabytes, texts_path)
    files = sorted(path for root in ROOTS for path in (history / root).rglob("*.jsonl"))
    texts = [json.loads(line) for line in texts_path.open(encoding="utf-8")]
    count = exact_count(True)
    count("warm up")  # the counter's load is a fixed cost, not a per-line one
    lines = sum(1 for path in files for _ in path.open("rb"))

    def parse() -> None:
        for path in files:
            with path.open("rb") as stream:
                for line in stream:
                    orjson.loads(line)

    def records() -> None:
        for path in files:
            for _ in read_records(path):
                pass

    def facts() -> None:
        for path in files:
            segment_facts(path, count=count)

    def summaries() -> None:
        for path in files:
            fold(str(path), transcript_format(path), [segment_facts(path, count=count)])

    print(
        f"first count in a fresh process: tiktoken {_load_seconds(False):.2f} s, "
        f"the fast counter {_load_seconds(True):.2f} s"
    )
    floor_parse = _cpu(parse)
    floor_count = _cpu(lambda: [count(text) for text in texts])
    floor = floor_parse + floor_count
    print(
        f"{sum(path.stat().st_size for path in files) / 1e6:.0f} MB, {len(files)} files, "
        f"{lines:,} lines; counter: {exact_engine()}"
    )
    print(f"floor: parse {floor_parse:.3f} s + count {floor_count:.3f} s = {floor:.3f} CPU s")
    decoders = {"claude": claude._decode, "codex": codex._decode}
    formats = {path: transcript_format(path) for path in files}

    def cut() -> None:
        for path in files:
            for _ in iter_lines(path):
                pass

    def decode() -> None:
        for path in files:
            typed = decoders[formats[path]]
            for _, raw in iter_lines(path):
                if raw is not None:
                    typed(raw)

    stages: dict[str, dict[str, float]] = {}
    for path_name in ("pure", "typed"):
        os.environ[jsonlines.ENVIRONMENT] = path_name
        stage = stages[path_name] = {}
        for label, work in (
            ("read_records", records),
            ("segment_facts", facts),
            ("summaries (a worker's work)", summaries),
        ):
            seconds = stage[label] = _cpu(work)
            counted = floor_count if work is not records else 0.0
            python = seconds - floor_parse - counted
            print(
                f"{path_name:<5} {label:<28} {seconds:.3f} CPU s = {seconds / floor:.2f}× floor; "
                f"beyond it: {python * 1e6 / lines:.2f} µs of Python per line"
            )
    os.environ.pop(jsonlines.ENVIRONMENT, None)
    typed = stages["typed"]
    lines_cut = _cpu(cut)
    decoded = _cpu(decode)
    whole = typed["summaries (a worker's work)"]
    shares = {
        "cutting lines": lines_cut,
        "decoding (msgspec)": decoded - lines_cut,
        "building records": typed["read_records"] - decoded,
        "counting": floor_count,
        "facts (shapes, outcomes)": typed["segment_facts"] - typed["read_records"] - floor_count,
        "folding": whole - typed["segment_facts"],
    }
    print(f"a worker's {whole:.3f} CPU s on the typed path:")
    for label, seconds in shares.items():
        print(f"  {label:<26} {seconds:6.3f} s  {seconds / whole:4.0%}")


if __name__ == "__main__":
    main()
