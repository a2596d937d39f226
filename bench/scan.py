"""Transcript scan speed and memory, against raw tiktoken on the same result texts.

    python bench/scan.py [--megabytes N] [--files N]

Generates a synthetic Claude Code history (default 200 MB: sessions of tool calls with a
realistic mix of results — source files, command output, searches, errors, empty results —
one line per content block with the usage repeated, and the ``toolUseResult`` copy Claude Code
writes beside each result), then prints, each in its own fresh process:

- scan throughput on one core as a ratio to raw tiktoken ``encode_ordinary`` over exactly the
  result texts the scan must count (goal >= 0.8);
- the speed-up with 2 processes over 1 (cold caches both);
- peak RSS of the scanning process tree (goal < 300 MB, independent of corpus size);
- cold / warm re-scan time with the per-file cache (goal >= 20);
- the same one-core scan with the standard ``json`` module instead of orjson, as a ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SYLLABLES = "ka ri to mo na se lu vi po de an ex or im us et al in on ra".split()
IDENTIFIERS = [
    "".join(random.Random(i).choice(SYLLABLES) for _ in range(1 + i % 3)) for i in range(400)
]
PROSE = (
    "the request failed because the configuration file was missing a required field so the "
    "service fell back to its defaults and logged a warning for each retry of the handler"
).split()


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for index in range(lines):
        name = rng.choice(IDENTIFIERS)
        other = rng.choice(IDENTIFIERS)
        kind = index % 5
        if kind == 0:
            out.append(f"def {name}_{other}({other}, limit={rng.randint(0, 999)}):")
        elif kind == 1:
            out.append(f"    {name} = {other}.get('{rng.choice(IDENTIFIERS)}', {rng.random():.4f})")
        elif kind == 2:
            out.append(
                f"    if {name} > {rng.randint(0, 99999)}: return {other}[{rng.randint(0, 9)}]"
            )
        elif kind == 3:
            out.append(f"    # {' '.join(rng.choice(PROSE) for _ in range(rng.randint(3, 12)))}")
        else:
            out.append("")
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(out, 1))


def _log(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"{rng.getrandbits(28):07x} {' '.join(rng.choice(PROSE) for _ in range(rng.randint(4, 10)))}"
        for _ in range(lines)
    )


def _grep(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"src/{rng.choice(IDENTIFIERS)}/{rng.choice(IDENTIFIERS)}.py:{rng.randint(1, 2000)}:"
        f"    {rng.choice(IDENTIFIERS)}({rng.choice(IDENTIFIERS)})"
        for _ in range(lines)
    )


def _tests(rng: random.Random, lines: int) -> str:
    out = [
        f"tests/test_{rng.choice(IDENTIFIERS)}.py::test_{rng.choice(IDENTIFIERS)} PASSED [{i % 100:>3}%]"
        for i in range(lines)
    ]
    out.append(f"===== {lines} passed in {rng.random() * 20:.2f}s =====")
    return "\n".join(out)


def _tool(rng: random.Random, cwd: str) -> tuple[str, dict[str, object], str, bool]:
    """A (tool, input, result text, is_error) drawn from a coding agent's usual mix."""
    roll = rng.random()
    path = f"{cwd}/src/{rng.choice(IDENTIFIERS)}/{rng.choice(IDENTIFIERS[:60])}.py"
    if roll < 0.35:
        return "Read", {"file_path": path}, _code(rng, rng.randint(20, 400)), False
    if roll < 0.50:
        return (
            "Bash",
            {"command": f"cd {cwd} && git log --oneline -n {rng.randint(5, 80)}"},
            _log(rng, rng.randint(5, 80)),
            False,
        )
    if roll < 0.62:
        return (
            "Bash",
            {"command": "timeout 300 python -m pytest -q"},
            _tests(rng, rng.randint(10, 200)),
            False,
        )
    if roll < 0.74:
        return (
            "Grep",
            {"pattern": rng.choice(IDENTIFIERS), "path": cwd},
            _grep(rng, rng.randint(1, 120)),
            False,
        )
    if roll < 0.80:
        return (
            "Bash",
            {"command": f"ls -la {cwd}/src"},
            "\n".join(rng.choice(IDENTIFIERS) + ".py" for _ in range(rng.randint(3, 40))),
            False,
        )
    if roll < 0.86:
        return (
            "Edit",
            {"file_path": path, "old_string": "a", "new_string": "b"},
            f"The file {path} has been updated.",
            False,
        )
    if roll < 0.92:
        return (
            "Bash",
            {"command": f"sudo env X=1 make {rng.choice(IDENTIFIERS)}"},
            f"make: *** No rule to make target '{rng.choice(IDENTIFIERS)}'.  Stop.",
            True,
        )
    if roll < 0.96:
        return (
            "mcp__docs__search",
            {"query": " ".join(rng.choice(PROSE) for _ in range(4))},
            " ".join(rng.choice(PROSE) for _ in range(rng.randint(50, 600))),
            False,
        )
    return "Bash", {"command": f"mkdir -p {cwd}/build"}, "", False


def generate(root: Path, megabytes: float, files: int, texts_out: Path, seed: int = 11) -> int:
    """Write the history; the result texts go to ``texts_out`` for the baseline. Returns bytes."""
    rng = random.Random(seed)
    per_file = megabytes * 1_000_000 / files
    total = 0
    with texts_out.open("w", encoding="utf-8") as texts:
        for number in range(files):
            session = f"{number:08d}-0000-4000-8000-{rng.getrandbits(48):012x}"
            cwd = f"/home/dev/project{number % 7}"
            project = root / f"-home-dev-project{number % 7}"
            project.mkdir(parents=True, exist_ok=True)
            path = project / f"{session}.jsonl"
            written = 0
            turn = 0
            prompt = 12_000
            with path.open("w", encoding="utf-8") as out:
                while written < per_file:
                    turn += 1
                    usage = {
                        "input_tokens": 3,
                        "cache_read_input_tokens": prompt,
                        "cache_creation_input_tokens": 500,
                        "output_tokens": 120,
                    }
                    message_id = f"msg_{number}_{turn}"
                    calls = [_tool(rng, cwd) for _ in range(rng.randint(1, 3))]
                    lines = []
                    base = {
                        "sessionId": session,
                        "cwd": cwd,
                        "version": "2.1.0",
                        "gitBranch": "main",
                        "userType": "external",
                    }
                    text_block: dict[str, object] = {
                        "type": "text",
                        "text": " ".join(rng.choice(PROSE) for _ in range(rng.randint(5, 40))),
                    }
                    block: dict[str, object]
                    tool_blocks: list[dict[str, object]] = [
                        {
                            "type": "tool_use",
                            "id": f"toolu_{number}_{turn}_{index}",
                            "name": tool,
                            "input": arguments,
                        }
                        for index, (tool, arguments, _, _) in enumerate(calls)
                    ]
                    for block in [text_block, *tool_blocks]:
                        message = {
                            "id": message_id,
                            "type": "message",
                            "role": "assistant",
                            "model": "claude-sonnet-4-5",
                            "content": [block],
                            "usage": usage,
                        }
                        lines.append(
                            {**base, "type": "assistant", "uuid": f"u{turn}", "message": message}
                        )
                    for index, (_, _, result, is_error) in enumerate(calls):
                        block = {
                            "type": "tool_result",
                            "tool_use_id": f"toolu_{number}_{turn}_{index}",
                            "content": result,
                            "is_error": is_error,
                        }
                        lines.append(
                            {
                                **base,
                                "type": "user",
                                "message": {"role": "user", "content": [block]},
                                "toolUseResult": {
                                    "stdout": result,
                                    "stderr": "",
                                    "interrupted": False,
                                },
                            }
                        )
                        texts.write(json.dumps(result) + "\n")
                        prompt += len(result) // 4
                    encoded = "".join(
                        json.dumps(line, separators=(",", ":")) + "\n" for line in lines
                    )
                    out.write(encoded)
                    written += len(encoded)
            total += written
    return total


# --- measured runs, each in a fresh process --------------------------------------------


def _child(mode: str, root: str, cache: str, workers: int) -> None:
    if mode == "raw":
        from pytest_toll.core.tokens import encoding

        encode = encoding().encode_ordinary
        started, cpu_started = time.perf_counter(), time.process_time()
        tokens = 0
        with open(root, encoding="utf-8") as texts:
            for line in texts:
                tokens += len(encode(json.loads(line)))
        seconds = time.perf_counter() - started
    else:
        from pytest_toll.core.tokens import encoding
        from pytest_toll.transcripts import readers as transcripts
        from pytest_toll.transcripts import scan as tolls
        from pytest_toll.transcripts.report import build_report

        if mode == "json":
            transcripts._loads = json.loads
        encoding()  # both sides load the vocabulary before the clock starts
        started, cpu_started = time.perf_counter(), time.process_time()
        files = tolls.select_files([Path(root)])
        summaries, _ = tolls.summarize_files(files, cache=Path(cache), workers=workers)
        report = build_report(summaries)
        seconds = time.perf_counter() - started
        tokens = report.admitted_tokens
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    # CPU seconds of the timed part (pool workers fork after the vocabulary is loaded).
    cpu = time.process_time() - cpu_started + children.ru_utime + children.ru_stime
    rss = max(own.ru_maxrss, children.ru_maxrss) / 1024
    print(json.dumps({"seconds": seconds, "tokens": tokens, "rss_mb": rss, "cpu": cpu}))


def _run(mode: str, root: Path, cache: Path, workers: int = 1) -> dict[str, float]:
    output = subprocess.run(
        [sys.executable, __file__, "--child", mode, str(root), str(cache), str(workers)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(output)
    return result


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=200.0)
    parser.add_argument("--files", type=int, default=0, help="session files (default: 1 per 2 MB)")
    parser.add_argument(
        "--skip-json", action="store_true", help="skip the standard-json comparison run"
    )
    args = parser.parse_args()
    files = args.files or max(2, int(args.megabytes / 2))
    work = Path(tempfile.mkdtemp(prefix="toll-bench-scan-"))
    try:
        history, texts = work / "projects", work / "texts.jsonl"
        started = time.perf_counter()
        size = generate(history, args.megabytes, files, texts)
        print(
            f"corpus: {size / 1e6:.0f} MB in {files} session files (generated in {time.perf_counter() - started:.0f} s)"
        )
        raw = _run("raw", texts, work / "unused")
        one = _run("scan", history, work / "cache-1", 1)
        warm = _run("scan", history, work / "cache-1", 1)
        two = _run("scan", history, work / "cache-2", 2)
        assert one["tokens"] == raw["tokens"] == two["tokens"], (one, raw, two)
        print(f"result texts: {raw['tokens']:,} o200k tokens (scan and raw tiktoken agree)")
        print(
            f"scan throughput / raw tiktoken, 1 process: {raw['seconds'] / one['seconds']:.2f}  (goal >= 0.8; raw {raw['seconds']:.1f} s, scan {one['seconds']:.1f} s)"
        )
        print(
            f"  same ratio in CPU seconds: {raw['cpu'] / one['cpu']:.2f}  (raw {raw['cpu']:.1f}, scan {one['cpu']:.1f})"
        )
        print(f"speed-up with 2 processes: {one['seconds'] / two['seconds']:.2f}x")
        # On a shared machine the wall-clock speed-up says more about the neighbours than
        # about the pool; CPU seconds show whether the pool itself added work.
        print(
            f"  CPU seconds: 1 process {one['cpu']:.1f}, 2 processes {two['cpu']:.1f} in total; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores"
        )
        print(
            f"peak RSS: {max(one['rss_mb'], two['rss_mb']):.0f} MB  (goal < 300 MB; 1 process {one['rss_mb']:.0f} MB, largest of 2 {two['rss_mb']:.0f} MB)"
        )
        print(
            f"cold / warm re-scan: {one['seconds'] / warm['seconds']:.0f}x  (goal >= 20; warm {warm['seconds'] * 1000:.0f} ms)"
        )
        if not args.skip_json:
            plain = _run("json", history, work / "cache-3", 1)
            print(
                f"scan with orjson / with json, 1 process: {plain['seconds'] / one['seconds']:.2f}x faster"
            )
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
