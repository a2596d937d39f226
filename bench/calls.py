"""Measuring calls against the naive approach, in one process on one workload.

    python bench/calls.py [--turns N] [--tools N]

The workload is an agent loop: a fixed system prompt, a skills catalogue and N tools, with
the conversation growing one exchange (a tool call and its result) per turn; every turn is
measured. The baseline is the least any attributed measurement must do: raw tiktoken
``encode_ordinary`` of the same four cumulative stage texts that ``measure()`` counts.

Prints, as ratios (baseline time / ours; 1.0 = no overhead, above 1.0 = faster):
- ``measure()`` with cold count caches (cleared every turn): the cost of normalising the
  messages, serializing the tools, rendering and pricing over the raw counting;
- ``measure()`` as it runs in a test session (caches kept across turns);
- ``compact`` over ``full``: the extra cost of measuring compacted schemas.

``measure()`` beats the baseline because ``calls.count_joined`` counts each message (and
each part) once per call instead of once per stage, and reuses counts of messages already
seen in earlier turns — exactly, since o200k cannot merge across the blank line it uses
where the next text starts safely (tests/test_calls.py proves equality with the joined count).
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from pytest_toll.calls import measuring as calls
from pytest_toll.calls.catalogues import skills_catalogue
from pytest_toll.calls.messages import normalize_messages
from pytest_toll.core import tokens
from pytest_toll.definitions.tools import normalize_tools


def make_workload(
    turns: int, tool_count: int
) -> tuple[str, list[dict[str, Any]], list[dict[str, Any]], list[dict[str, str]]]:
    system = "You are a careful engineering assistant. " * 40
    tools = [
        {
            "name": f"tool_{i}",
            "description": f"Tool {i}: reads project files and returns their text. Use it to inspect code.",
            "inputSchema": {
                "type": "object",
                "title": f"Tool{i}Args",
                "properties": {
                    "path": {
                        "type": "string",
                        "title": "Path",
                        "description": "A path inside the project.",
                    },
                    "limit": {"type": "integer", "description": "At most this many lines."},
                },
                "required": ["path"],
            },
        }
        for i in range(tool_count)
    ]
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Find the bug in the parser."}]
    for turn in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": f"Looking at file {turn}."},
                    {
                        "type": "tool_use",
                        "id": f"t{turn}",
                        "name": "tool_1",
                        "input": {"path": f"src/m{turn}.py"},
                    },
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": f"t{turn}",
                        "content": f"def f_{turn}(x):\n    return x * {turn}\n" * 30,
                    }
                ],
            }
        )
    skills = [
        {"name": f"skill-{i}", "description": f"Skill {i} helps with task {i}."} for i in range(10)
    ]
    return system, tools, messages, skills


def naive(
    model: str,
    system: str,
    tools: list[dict[str, Any]],
    messages: list[dict[str, Any]],
    skills: list[dict[str, str]],
) -> int:
    """The same four stage texts, encoded with raw tiktoken and no cache."""
    encoding = tokens.encoding()
    conversation = normalize_messages(messages)
    texts = calls._stage_texts(
        calls._Call(
            conversation, system, skills_catalogue(skills), tuple(normalize_tools(tools)[0])
        ),
        "anthropic",
    )
    return sum(len(encoding.encode_ordinary(text)) for text in texts)


def timed(function: Any, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        samples.append(time.perf_counter() - began)
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=40)
    parser.add_argument("--tools", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    system, tools, messages, skills = make_workload(args.turns, args.tools)
    model = "claude-sonnet-5"
    tokens.count("warm up")
    # Only the raw encoding is timed for the baseline: the text it encodes is prepared first.
    conversation_texts = []
    for turn in range(1, len(messages) + 1, 2):
        conversation = normalize_messages(messages[:turn])
        call = calls._Call(
            conversation, system, skills_catalogue(skills), tuple(normalize_tools(tools)[0])
        )
        conversation_texts.append(calls._stage_texts(call, "anthropic"))
    encoding = tokens.encoding()

    def baseline() -> None:
        for texts in conversation_texts:
            for text in texts:
                encoding.encode_ordinary(text)

    def ours_cold() -> None:
        for turn in range(1, len(messages) + 1, 2):
            tokens._cache.clear()
            calls.measure(model, system, messages[:turn], tools, skills)

    def ours_warm() -> None:
        tokens._cache.clear()
        for turn in range(1, len(messages) + 1, 2):
            calls.measure(model, system, messages[:turn], tools, skills)

    def ours_compact() -> None:
        tokens._cache.clear()
        for turn in range(1, len(messages) + 1, 2):
            calls.measure(model, system, messages[:turn], tools, skills, tool_schemas="compact")

    raw = timed(baseline, args.repeats)
    cold = timed(ours_cold, args.repeats)
    warm = timed(ours_warm, args.repeats)
    compact = timed(ours_compact, args.repeats)
    calls_made = len(conversation_texts)
    print(
        f"workload: {calls_made} measured calls, {args.tools} tools, up to {len(messages)} messages"
    )
    print(f"raw tiktoken on the same stage texts / measure() with cold caches: {raw / cold:.2f}")
    print(f"raw tiktoken on the same stage texts / measure() in a session:     {raw / warm:.2f}")
    print(
        f"measure(full) / measure(compact) in a session:                      {warm / compact:.2f}"
    )
    assert naive(model, system, tools, messages, skills) > 0


if __name__ == "__main__":
    main()
