"""Weighing speed against raw tiktoken, on a generated 1,000-tool list, in one process.

    python bench/weigh.py [--tools N] [--repeat R]

Prints the time per tool of ``normalize_tools`` + ``weigh`` (three serializations, per-tool
rows, the breakdown of the heaviest tools) and its ratio to raw tiktoken ``encode_ordinary``
counting exactly the same strings weigh counts, with the same Encoding (goal <= 1.2). Our
count cache is cleared before every run so it cannot flatter us; the best of R runs is kept
for each side,
the two alternating so a busy machine slows both alike; CPU time of this process, not wall
time, because the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from typing import Any

from pytest_toll.core import tokens
from pytest_toll.definitions.serialize import (
    claude_json,
    claude_line,
    serialize_claude,
    serialize_openai,
    serialize_raw,
)
from pytest_toll.definitions.tools import normalize_tools
from pytest_toll.definitions.weigh import BREAKDOWN_TOP, cost_breakdown, weigh

WORDS = (
    "read write list search the file directory issue branch commit user project page "
    "returns when use this tool to find a matching record and its metadata for the agent"
).split()


def make_tools(count: int, seed: int = 11) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    tools = []
    for index in range(count):
        properties: dict[str, Any] = {}
        for p in range(rng.randint(1, 8)):
            schema: dict[str, Any] = {
                "type": rng.choice(["string", "integer", "boolean"]),
                "description": " ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 15))),
            }
            if rng.random() < 0.2:
                schema = {
                    "type": "string",
                    "enum": [f"v{index}_{e}" for e in range(rng.randint(2, 12))],
                }
            properties[f"param_{p}_{rng.choice(WORDS)}"] = schema
        tool: dict[str, Any] = {
            "name": f"tool_{index:04d}_{rng.choice(WORDS)}",
            "description": " ".join(rng.choice(WORDS) for _ in range(rng.randint(10, 80))),
            "inputSchema": {
                "type": "object",
                "properties": properties,
                "required": list(properties)[:1],
            },
            "annotations": {"readOnlyHint": rng.random() < 0.5},
        }
        if rng.random() < 0.3:
            tool["outputSchema"] = {"type": "object", "properties": {"result": {"type": "string"}}}
        tools.append(tool)
    return tools


def same_strings(elements: list[dict[str, Any]]) -> list[str]:
    """Every string weigh() counts, built up front (the baseline pays no serialization)."""
    tools, _ = normalize_tools(elements)
    texts = [claude_line(t) for t in tools]
    texts += [t.description or "" for t in tools]
    texts += [claude_json(t.parameters) for t in tools]
    texts += ["" if t.output_schema is None else claude_json(t.output_schema) for t in tools]
    texts += [serialize_claude(tools), serialize_raw(tools), serialize_openai(tools)]
    # The breakdown's pieces, recorded by counting through a recorder.
    recorder = _Recorder()
    lines = [claude_line(t) for t in tools]
    heaviest = sorted(range(len(tools)), key=lambda i: -len(lines[i]))[:BREAKDOWN_TOP]
    for i in heaviest:
        cost_breakdown(tools[i], 0, recorder)
    return texts + recorder.texts


class _Recorder:
    method = "record"
    description = "records texts"

    def __init__(self) -> None:
        self.texts: list[str] = []

    def count(self, text: str) -> int:
        self.texts.append(text)
        return 0

    def count_many(self, texts: Any) -> list[int]:
        return [self.count(text) for text in texts]

    def measure(self, text: str) -> Any:
        raise NotImplementedError


def best_of(repeat: int, *runs: Any) -> list[float]:
    """The best time of each run, alternating them so load on a shared machine hits both."""
    best = [float("inf")] * len(runs)
    for _ in range(repeat):
        for index, run in enumerate(runs):
            tokens._cache.clear()
            started = time.process_time()
            run()
            best[index] = min(best[index], time.process_time() - started)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    elements = make_tools(args.tools)
    encoding = tokens.encoding()  # load the vocabulary outside the timings
    texts = same_strings(elements)

    def ours() -> None:
        tools, shape = normalize_tools(elements)
        weigh(tools, source_shape=shape)

    def raw_tiktoken() -> None:
        for text in texts:
            len(encoding.encode_ordinary(text))

    ours_seconds, raw_seconds = best_of(args.repeat, ours, raw_tiktoken)
    size = len(json.dumps(elements))
    print(f"{args.tools} tools, {size / 1e6:.2f} MB of definitions, {len(texts)} strings counted")
    print(f"weigh:         {ours_seconds * 1e6 / args.tools:8.1f} µs per tool")
    print(f"raw tiktoken:  {raw_seconds * 1e6 / args.tools:8.1f} µs per tool (same strings)")
    print(f"ratio weigh / raw tiktoken: {ours_seconds / raw_seconds:.3f} (goal <= 1.2)")


if __name__ == "__main__":
    main()
