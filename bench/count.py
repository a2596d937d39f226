"""Counting speed against raw tiktoken, measured in one run on one corpus.

    python bench/count.py [--megabytes N]

Prints:
- count throughput / raw ``tiktoken`` ``encode_ordinary`` throughput (goal >= 0.95), both on
  cold caches, with the same Encoding, on unique texts (so our count cache cannot flatter us);
- time to the first count in a fresh process (vocabulary load + verify; goal <= 1.5 s),
  beside tiktoken's own ``get_encoding`` from its cache in a fresh process, as a ratio;
- import time of ``pytest_toll.plugin`` over bare ``import pytest`` (goal <= 30 ms).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_toll.core import tokens

WORDS = (
    "the agent reads a file and returns its contents to the model which then decides "
    "whether to call another tool or answer the user directly with a summary"
).split()
CJK = "日本語のテキストと中文文本还有한국어텍스트"


def make_corpus(megabytes: float, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    texts: list[str] = []
    size = 0
    serial = 0
    while size < megabytes * 1_000_000:
        serial += 1
        kind = serial % 4
        if kind == 0:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 400)))
        elif kind == 1:
            text = "\n".join(
                f"    def f_{serial}_{i}(x):\n        return x * {rng.randint(0, 999)}"
                for i in range(rng.randint(2, 40))
            )
        elif kind == 2:
            text = json.dumps(
                {f"k{serial}_{i}": [rng.random(), rng.choice(WORDS)] for i in range(30)}
            )
        else:
            text = "".join(rng.choice(CJK) for _ in range(rng.randint(50, 600)))
        text = f"{serial} {text}"  # unique, so no cache hits
        texts.append(text)
        size += len(text)
    return texts


def throughput_ratio(texts: list[str], repeats: int = 5) -> tuple[float, float]:
    """Raw and ours interleaved in small blocks, so clock drift and noise hit both alike."""
    encoding = tokens.encoding()
    counter = tokens.O200kCounter()
    raw = ours = batch = 0.0
    block = 64
    for _ in range(repeats):
        tokens._cache.clear()
        for start in range(0, len(texts), block):
            chunk = texts[start : start + block]
            began = time.perf_counter()
            for text in chunk:
                encoding.encode_ordinary(text)
            raw += time.perf_counter() - began
            began = time.perf_counter()
            for text in chunk:
                counter.count(text)
            ours += time.perf_counter() - began
        tokens._cache.clear()
        began = time.perf_counter()
        counter.count_many(texts)
        batch += time.perf_counter() - began
    return raw / ours, raw / batch


def fresh_process_seconds(code: str, env: dict[str, str] | None = None, runs: int = 5) -> float:
    samples = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        samples.append(float(out.stdout))
    return statistics.median(samples)


def first_count_seconds() -> tuple[float, float]:
    ours = fresh_process_seconds(
        "import time; t = time.perf_counter()\n"
        "from pytest_toll.core import tokens; tokens.count('hello')\n"
        "print(time.perf_counter() - t)"
    )
    with tempfile.TemporaryDirectory() as cache:
        url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
        name = hashlib.sha1(url.encode()).hexdigest()
        with gzip.open(tokens.VOCABULARY_PATH) as src, open(Path(cache) / name, "wb") as out:
            shutil.copyfileobj(src, out)
        env = {**os.environ, "TIKTOKEN_CACHE_DIR": cache}
        theirs = fresh_process_seconds(
            "import time; t = time.perf_counter()\n"
            "import tiktoken; tiktoken.get_encoding('o200k_base').encode_ordinary('hello')\n"
            "print(time.perf_counter() - t)",
            env,
        )
    return ours, theirs


def import_overhead_seconds(runs: int = 7) -> tuple[float, float]:
    """``-X importtime``'s cumulative time of pytest_toll.plugin imported after pytest.

    Reading the interpreter's own import timer avoids the noise of process start-up.
    """

    # An installed package imports from cached bytecode; PYTHONDONTWRITEBYTECODE (set on some
    # CI images) would make every sample time the compiler instead. The first sample warms it.
    bytecode_cached = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def cumulative_us(module: str) -> float:
        samples = []
        for _ in range(runs):
            err = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", "import pytest, pytest_toll.plugin"],
                capture_output=True,
                text=True,
                check=True,
                env=bytecode_cached,
            ).stderr
            for line in err.splitlines():
                parts = [part.strip() for part in line.removeprefix("import time:").split("|")]
                if len(parts) == 3 and parts[2] == module:
                    samples.append(float(parts[1]))
        return statistics.median(samples)

    return cumulative_us("pytest_toll.plugin") / 1e6, cumulative_us("pytest") / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=8.0)
    args = parser.parse_args()
    texts = make_corpus(args.megabytes)
    tokens.count("warm up")  # load the vocabulary before timing throughput
    single, batch_vs_raw = throughput_ratio(texts)
    print(f"corpus: {len(texts):,} unique texts, {sum(map(len, texts)) / 1e6:.1f} M chars")
    print(f"count throughput / raw tiktoken encode_ordinary: {single:.3f}  (goal >= 0.95)")
    print(f"count_many throughput / raw encode_ordinary:     {batch_vs_raw:.2f}")
    first, theirs = first_count_seconds()
    print(
        f"first count in a fresh process: {first:.3f} s  (goal <= 1.5 s); "
        f"{first / theirs:.2f}x tiktoken's own cached get_encoding ({theirs:.3f} s)"
    )
    overhead, bare = import_overhead_seconds()
    print(
        f"import pytest_toll.plugin over bare import pytest: {overhead * 1000:.1f} ms "
        f"(goal <= 30 ms); {overhead / bare:.3f} of import pytest itself"
    )


if __name__ == "__main__":
    main()
