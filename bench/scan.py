"""``toll scan`` speed and memory, as ratios to the floor measured in the same run.

    python bench/scan.py [--megabytes 100 200] [--before /tmp/old-checkout] [--keep DIR] [--repeat 2]
        [--awtoll /path/to/venv/bin/awtoll [--tiktoken-cache DIR]] [--profile]

For each size, generates a history (:mod:`history`: Claude Code and Codex, subagents, a resumed
session), then runs, each in its own fresh process:

- the floor: orjson over every line of every file plus the fastest exact o200k counter
  installed (quicktok's ``count`` or tiktoken) over exactly the result texts the scan counts,
  one process, halved for 2 cores (vocabulary loads not timed; the fastest of ``--repeat``);
- ``toll scan --json`` cold with ``--workers 1`` and ``--workers 2`` (a fresh cache each), and
  warm (the same command again): whole-command wall time, interpreter start included;
- peak RSS of any process of each command (the largest ``ru_maxrss`` of the process tree).

With ``--awtoll``, the peer's ``awtoll scan --json`` runs over the same roots in every round
(it has no cache and no workers: each of its runs is cold, one process), and the ratios to it
are printed: its cold wall over ours (issue 38's milestone: ≥ 2× with 1 and 2 workers, ≥ 5× the
goal), our CPU seconds over its (≤ 1.0), its wall over our warm re-scan. awtoll counts exactly
only when tiktoken can load ``cl100k_base``; offline, ``--tiktoken-cache`` names a folder that
holds it under tiktoken's cache name (``TIKTOKEN_CACHE_DIR``), else it waits out its download's
retries and estimates, which would flatter nobody.

Goals (issue 15): cold 2 workers ≤ 1.5 × floor; peak RSS < 150 MB and flat in size; warm ≥ 20×
faster than cold; the JSON report of 1 and 2 workers, cold and warm, identical. ``--before``
runs the same commands against another checkout (``PYTHONPATH``) for a before/after table.

With ``--profile``, the share of a cold one-worker scan's CPU time in each stage (start and
counter load, cutting lines, decoding, building records, facts, counting, folding, report,
cache), measured by :func:`bench.lines.scan_shares` in a fresh process of this checkout over
the same history, beside the scan's own CPU seconds measured above.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.history import generate

#: The history's transcript folders, as :func:`bench.history.generate` writes them.
ROOTS = ("claude", "codex")


def _floor(history: Path, texts: Path) -> None:
    """One process: orjson over every line, then the fastest exact counter over the texts."""
    import orjson

    from pytest_toll.core.tokens import encoding

    # The transcripts only: the history folder also holds the result texts' own file.
    files = sorted(path for root in ROOTS for path in (history / root).rglob("*.jsonl"))
    started, cpu_started = time.perf_counter(), time.process_time()
    lines = 0
    for path in files:
        with path.open("rb") as stream:
            for line in stream:
                orjson.loads(line)
                lines += 1
    parse, parse_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    results = [json.loads(line) for line in texts.open(encoding="utf-8")]
    counters: dict[str, Any] = {"tiktoken": encoding().encode_ordinary}
    try:
        import quicktok

        counters["quicktok"] = quicktok.get_encoding("o200k_base").count
    except ImportError:
        pass
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    totals: dict[str, int] = {}
    for name, count in counters.items():
        count("warm up")
        started, cpu_started = time.perf_counter(), time.process_time()
        if name == "tiktoken":
            totals[name] = sum(len(count(text)) for text in results)
        else:
            totals[name] = sum(count(text) for text in results)
        timings[name] = time.perf_counter() - started
        cpu[name] = time.process_time() - cpu_started
    assert len(set(totals.values())) == 1, totals
    fastest = min(timings, key=timings.__getitem__)
    print(
        json.dumps(
            {
                "parse": parse,
                "parse_cpu": parse_cpu,
                "count_cpu": cpu[fastest],
                "lines": lines,
                "counter": fastest,
                "count": timings[fastest],
                "timings": timings,
                "tokens": totals[fastest],
            }
        )
    )


def _measured(command: list[str], environ: dict[str, str]) -> None:
    """Run one command; print its wall time, peak RSS of its process tree, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    # From a neutral folder: ``python -m`` puts the working folder first on sys.path, which
    # would run this checkout's code whatever PYTHONPATH says.
    neutral = tempfile.gettempdir()
    done = subprocess.run(command, env=environ, cwd=neutral, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        sys.exit(f"{command} failed ({done.returncode}): {done.stderr[-2000:]}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    # ru_maxrss of the children is the largest of any one of them (Linux: KiB), a peak and
    # not a sum; the CPU seconds are the whole tree's, as a delta (this process ran no other).
    rss = usage.ru_maxrss / 1024
    cpu = (usage.ru_utime - before.ru_utime) + (usage.ru_stime - before.ru_stime)
    print(
        json.dumps(
            {"seconds": seconds, "cpu": cpu, "rss_mb": rss, "report": json.loads(done.stdout)}
        )
    )


def _child(arguments: list[str], pythonpath: str | None = None) -> dict[str, Any]:
    environ = dict(os.environ)
    if pythonpath is not None:
        environ["PYTHONPATH"] = pythonpath
    output = subprocess.run(
        [sys.executable, __file__, *arguments], env=environ, check=True, capture_output=True
    ).stdout
    result: dict[str, Any] = json.loads(output)
    return result


def _scan(roots: list[Path], cache: Path, workers: int, code: str) -> dict[str, Any]:
    command = [sys.executable, "-m", "pytest_toll", "scan", "--json", "--workers"]
    command += [str(workers)]
    for root in roots:
        command += ["--root", str(root)]
    environ = {"XDG_CACHE_HOME": str(cache)}
    return _child(["--measured", json.dumps(command), json.dumps(environ)], code)


def _awtoll(awtoll: str, roots: list[Path], vocabulary: str | None) -> dict[str, Any]:
    """One cold ``awtoll scan --json`` over the roots (the peer keeps no cache)."""
    command = [awtoll, "scan", "--json"]
    for root in roots:
        command += ["--root", str(root)]
    environ = {"TIKTOKEN_CACHE_DIR": vocabulary} if vocabulary else {}
    return _child(["--measured", json.dumps(command), json.dumps(environ)])


def _shares(history: Path, rounds: int, code: str) -> dict[str, float]:
    """:func:`bench.lines.scan_shares` of the history, in a fresh process of ``code``."""
    environ = {**os.environ, "PYTHONPATH": code}
    lines = str(Path(__file__).with_name("lines.py"))
    command = [sys.executable, lines, "--shares", str(history), "--rounds", str(rounds)]
    output = subprocess.run(command, env=environ, check=True, capture_output=True).stdout
    shares: dict[str, float] = json.loads(output)
    return shares


def _print_shares(megabytes: float, shares: dict[str, float], scan_cpu: float) -> None:
    total = sum(shares.values())
    print()
    print(
        f"{megabytes:g} MB, where a cold 1-worker scan's CPU time goes (bench/lines.py "
        f"scan_shares, one process, fastest of the rounds): {total:.2f} CPU s in all, "
        f"against {scan_cpu:.2f} CPU s for the scan measured above"
    )
    print("| stage | CPU s | share |")
    print("|---|---|---|")
    for stage, seconds in shares.items():
        print(f"| {stage} | {seconds:.2f} | {seconds / total:.0%} |")


def _measure_code(roots: list[Path], work: Path, code: str, label: str) -> dict[str, Any]:
    one = _scan(roots, work / f"cache-{label}-1", 1, code)
    two = _scan(roots, work / f"cache-{label}-2", 2, code)
    warm = _scan(roots, work / f"cache-{label}-2", 2, code)
    shutil.rmtree(work / f"cache-{label}-1", ignore_errors=True)
    shutil.rmtree(work / f"cache-{label}-2", ignore_errors=True)
    identical = one["report"] == two["report"] == warm["report"]
    return {
        "cold_1": one["seconds"],
        "cold_2": two["seconds"],
        "warm": warm["seconds"],
        "cpu_1": one["cpu"],
        "cpu_2": two["cpu"],
        "cpu_warm": warm["cpu"],
        "rss_mb": max(one["rss_mb"], two["rss_mb"], warm["rss_mb"]),
        "identical": identical,
        "report": one["report"],
    }


def _best(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The fastest of repeated runs per figure (a shared machine only ever adds time), the
    largest peak RSS, and whether every run gave the same report."""
    best = dict(runs[0])
    for key in ("cold_1", "cold_2", "warm", "cpu_1", "cpu_2", "cpu_warm"):
        best[key] = min(run[key] for run in runs)
    best["rss_mb"] = max(run["rss_mb"] for run in runs)
    best["identical"] = all(run["identical"] for run in runs) and all(
        run["report"] == runs[0]["report"] for run in runs
    )
    return best


def _versus(result: dict[str, Any], peer: dict[str, Any]) -> str:
    """The milestone's ratios in words: wall is awtoll's over ours, CPU ours over awtoll's."""
    return (
        f"cold wall {peer['seconds'] / result['cold_1']:.2f}× (1 worker), "
        f"{peer['seconds'] / result['cold_2']:.2f}× (2 workers) (goal ≥ 2); "
        f"CPU {result['cpu_1'] / peer['cpu']:.2f} (1 worker), "
        f"{result['cpu_2'] / peer['cpu']:.2f} (2 workers) of awtoll's {peer['cpu']:.1f} s "
        f"(goal ≤ 1.0); warm {peer['seconds'] / result['warm']:.0f}× (goal ≥ 20); "
        f"peak RSS {result['rss_mb']:.0f} MB vs {peer['rss_mb']:.0f} MB"
    )


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--floor":
        _floor(Path(sys.argv[2]), Path(sys.argv[3]))
        return
    if len(sys.argv) > 1 and sys.argv[1] == "--measured":
        environ = {**os.environ, **json.loads(sys.argv[3])}
        _measured(json.loads(sys.argv[2]), environ)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, nargs="+", default=[100.0, 200.0])
    parser.add_argument("--before", type=Path, help="another checkout to compare against")
    parser.add_argument("--keep", type=Path, help="generate (or reuse) histories here")
    parser.add_argument("--repeat", type=int, default=2, help="rounds; the fastest is kept")
    parser.add_argument("--awtoll", help="the peer's awtoll executable (or its venv folder)")
    parser.add_argument(
        "--tiktoken-cache",
        default=os.environ.get("TIKTOKEN_CACHE_DIR"),
        help="TIKTOKEN_CACHE_DIR for awtoll: a folder holding cl100k_base under tiktoken's name",
    )
    parser.add_argument(
        "--profile", action="store_true", help="the share of a cold scan's CPU time per stage"
    )
    args = parser.parse_args()
    here = str(Path(__file__).resolve().parents[1])
    awtoll = args.awtoll
    if awtoll is not None and Path(awtoll).is_dir():
        awtoll = str(Path(awtoll) / "bin" / "awtoll")
    rows = []
    peers: list[tuple[float, dict[str, Any], dict[str, Any]]] = []
    profiles: list[tuple[float, dict[str, float], float]] = []
    for megabytes in args.megabytes:
        work = Path(tempfile.mkdtemp(prefix="toll-bench-scan-"))
        try:
            history = (args.keep or work) / f"history-{megabytes:g}"
            texts = history / "texts.jsonl"
            if not texts.exists():
                started = time.perf_counter()
                size, files = generate(history, megabytes, texts)
                took = time.perf_counter() - started
                print(f"history: {size / 1e6:.0f} MB in {files} files ({took:.0f} s to write)")
            roots = [history / root for root in ROOTS]
            # The fastest of --repeat runs, as for the scans: a floor slowed by a neighbour
            # would flatter every ratio.
            floors = [
                _child(["--floor", str(history), str(texts)], here) for _ in range(args.repeat)
            ]
            floor = min(floors, key=lambda run: run["parse"] + run["count"])
            floor_2 = (floor["parse"] + floor["count"]) / 2
            floor_cpu = floor["parse_cpu"] + floor["count_cpu"]
            timings = ", ".join(
                f"{name} {seconds:.2f} s" for name, seconds in floor["timings"].items()
            )
            print(
                f"{megabytes:g} MB: floor {floor_2:.2f} s on 2 cores (orjson over "
                f"{floor['lines']:,} lines {floor['parse']:.2f} s + {floor['tokens']:,} result "
                f"tokens: {timings}; halved), {floor_cpu:.2f} CPU s in all"
            )
            # Interleaved and repeated: neighbours' load shifts over minutes, so each code
            # gets its turn in every round and keeps its fastest round.
            codes = [("after", here)]
            if args.before is not None:
                codes.insert(0, ("before", str(args.before)))
            runs: dict[str, list[dict[str, Any]]] = {label: [] for label, _ in codes}
            peer_runs: list[dict[str, Any]] = []
            for _ in range(args.repeat):
                if awtoll is not None:
                    peer_runs.append(_awtoll(awtoll, roots, args.tiktoken_cache))
                for label, code in codes:
                    runs[label].append(_measure_code(roots, work, code, label))
            measured = [(label, _best(runs[label])) for label, _ in codes]
            if args.before is not None:
                same = measured[0][1]["report"] == measured[1][1]["report"]
                print(f"  reports before and after identical: {same}")
            for label, result in measured:
                rows.append((megabytes, label, (floor_2, floor_cpu), result))
                print(
                    f"  {label}: cold 1 worker {result['cold_1']:.2f} s, cold 2 workers "
                    f"{result['cold_2']:.2f} s = {result['cold_2'] / floor_2:.2f}× floor "
                    f"(goal ≤ 1.5), warm {result['warm']:.2f} s "
                    f"(cold/warm {result['cold_2'] / result['warm']:.0f}×, goal ≥ 20), "
                    f"peak RSS {result['rss_mb']:.0f} MB (goal < 150), "
                    f"1 vs 2 workers and warm identical: {result['identical']}"
                )
            if peer_runs:
                peer = {
                    "seconds": min(run["seconds"] for run in peer_runs),
                    "cpu": min(run["cpu"] for run in peer_runs),
                    "rss_mb": max(run["rss_mb"] for run in peer_runs),
                    "tokenizer": peer_runs[0]["report"].get("tokenizer"),
                }
                for label, result in measured:
                    peers.append((megabytes, {"label": label, **result}, peer))
                    print(f"  {label} against awtoll: {_versus(result, peer)}")
            if args.profile:
                profiles.append(
                    (megabytes, _shares(history, args.repeat, here), measured[-1][1]["cpu_1"])
                )
        finally:
            shutil.rmtree(work, ignore_errors=True)
    # Wall seconds depend on the neighbours on a shared machine; CPU seconds (the whole
    # process tree's, interpreter start and vocabulary loads included) much less so.
    print()
    print(
        "| history | code | cold, 1 worker | cold, 2 workers | floor, 2 cores "
        "| cold 2 workers / floor | warm | cold / warm | peak RSS |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for megabytes, label, (floor_2, floor_cpu), result in rows:
        print(
            f"| {megabytes:g} MB | {label} "
            f"| {result['cold_1']:.1f} s ({result['cpu_1']:.1f} CPU s) "
            f"| {result['cold_2']:.1f} s ({result['cpu_2']:.1f} CPU s) "
            f"| {floor_2:.1f} s ({floor_cpu:.1f} CPU s) "
            f"| {result['cold_2'] / floor_2:.1f}× ({result['cpu_2'] / floor_cpu:.1f}× in CPU) "
            f"| {result['warm']:.2f} s | {result['cold_2'] / result['warm']:.0f}× "
            f"| {result['rss_mb']:.0f} MB |"
        )
    if peers:
        print()
        print(
            "| history | code | awtoll cold | cold 1 worker: awtoll / ours (wall) | ours / awtoll "
            "(CPU) | cold 2 workers: awtoll / ours (wall) | ours / awtoll (CPU) "
            "| awtoll / our warm | peak RSS ours / awtoll |"
        )
        print("|---|---|---|---|---|---|---|---|---|")
        for megabytes, result, peer in peers:
            print(
                f"| {megabytes:g} MB | {result['label']} "
                f"| {peer['seconds']:.1f} s ({peer['cpu']:.1f} CPU s) "
                f"| {peer['seconds'] / result['cold_1']:.2f}× "
                f"| {result['cpu_1'] / peer['cpu']:.2f} "
                f"| {peer['seconds'] / result['cold_2']:.2f}× "
                f"| {result['cpu_2'] / peer['cpu']:.2f} "
                f"| {peer['seconds'] / result['warm']:.0f}× "
                f"| {result['rss_mb']:.0f} / {peer['rss_mb']:.0f} MB |"
            )
        print(f"awtoll counted with: {peers[0][2]['tokenizer']}")
    for megabytes, shares, scan_cpu in profiles:
        _print_shares(megabytes, shares, scan_cpu)
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
