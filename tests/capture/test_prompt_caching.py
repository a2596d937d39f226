"""Cache-aware cost: the cacheable prefix of each request and the run's estimated cost with
prompt caching beside it without, from ``cache_control`` breakpoints (an Anthropic SDK loop
against the local server, and bodies measured directly)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from pytest_toll.calls.capture import (
    ANTHROPIC_MESSAGES,
    CaptureReport,
    SentRequest,
    measure_sent,
)
from pytest_toll.calls.prompt_caching import CACHE_ESTIMATE_LABEL
from pytest_toll.capture_hook import Capture
from pytest_toll.core.models import load_models
from pytest_toll.report.markdown import capture_line
from tests.capture.llm_server import Server, serving

EPHEMERAL = {"type": "ephemeral"}
#: A system prompt well above claude-sonnet-5's minimum cacheable length (1,024 tokens).
SYSTEM = [
    {"type": "text", "text": "You are the notes assistant. " * 300, "cache_control": EPHEMERAL}
]
TOOLS = [
    {
        "name": "search_notes",
        "description": "Search the team's notes by keyword; returns matching titles.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
        "cache_control": EPHEMERAL,
    }
]


@pytest.fixture
def server() -> Iterator[Server]:
    with serving() as running:
        yield running


def _loop(client: anthropic.Anthropic, model: str, turns: int = 3) -> None:
    """The usual incremental pattern: the breakpoint moves to the newest user turn."""
    messages: list[dict[str, Any]] = []
    for turn in range(turns):
        for message in messages:  # only the newest turn keeps its marker
            if isinstance(message["content"], list):
                message["content"] = [{"type": "text", "text": message["content"][0]["text"]}]
        question = f"What changed in release {turn + 1}? " * 20
        messages.append(
            {
                "role": "user",
                "content": [{"type": "text", "text": question, "cache_control": EPHEMERAL}],
            }
        )
        reply = client.messages.create(
            model=model,
            max_tokens=50,
            system=SYSTEM,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
            messages=messages,  # type: ignore[arg-type]
        )
        assert reply.content[0].type == "text"
        messages.append({"role": "assistant", "content": reply.content[0].text})


def test_a_loop_reads_what_the_turn_before_wrote(server: Server) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-local", max_retries=0)
    with Capture() as capture:
        _loop(client, "claude-sonnet-5")
    report = capture.measure()
    requests = report.requests
    longest = [max(point.billed for point in r.cache.breakpoints) for r in requests]
    # Three breakpoints each (tools, system, the newest turn); the prefix grows every turn.
    assert [len(r.cache.breakpoints) for r in requests] == [3, 3, 3]
    assert longest[0] < longest[1] < longest[2]
    for request in requests:
        shown = request.as_dict()
        assert shown["cache_breakpoints"] == 3
        assert 0 < shown["cacheable_prefix"] <= (request.tokens or 0)
    estimate = report.as_dict()["cache"]
    # Turn 1 writes its prefix; turns 2 and 3 read the one before and write the new part.
    assert estimate["read_tokens"] == longest[0] + longest[1]
    assert estimate["write_tokens"] == longest[2]
    prices = load_models().get("claude-sonnet-5").prices
    assert prices.cache_read is not None and prices.cache_write_5m is not None
    billed = [r.report.total.billed for r in requests if r.report is not None]
    reads, writes = (
        [0, longest[0], longest[1]],
        [longest[0], longest[1] - longest[0], longest[2] - longest[1]],
    )
    expected = (
        sum(
            (read * prices.cache_read + write * prices.cache_write_5m + (total - read - write) * 2)
            for read, write, total in zip(reads, writes, billed, strict=True)
        )
        / 1_000_000
    )
    assert estimate["cached_usd"] == pytest.approx(expected, abs=1e-9)
    assert estimate["uncached_usd"] == pytest.approx(sum(billed) * 2 / 1_000_000, abs=1e-9)
    assert estimate["saved_usd"] > 0 and estimate["label"] == CACHE_ESTIMATE_LABEL
    assert estimate["write_duration"] == "5 minutes"
    # The tools breakpoint alone is far below the minimum: never cached, and said so.
    (short,) = estimate["below_minimum"]
    assert short.startswith("claude-sonnet-5: 3 breakpoints' prefixes are below its minimum")
    line = capture_line(report.as_dict())
    assert "(an estimate, not a measurement)" in line and "estimated with prompt caching" in line


def _body(**fields: Any) -> SentRequest:
    body = {"model": "claude-sonnet-5", "max_tokens": 10, **fields}
    return SentRequest(ANTHROPIC_MESSAGES, "h", "/v1/messages", json.dumps(body).encode())


def _report(*bodies: SentRequest) -> CaptureReport:
    return measure_sent(list(bodies))


def test_no_breakpoint_no_estimate() -> None:
    report = _report(_body(messages=[{"role": "user", "content": "hi"}]))
    assert "cache" not in report.as_dict()
    assert "cacheable_prefix" not in report.requests[0].as_dict()


def test_a_model_without_cache_prices_has_no_usd_and_says_why() -> None:
    body = _body(
        model="claude-fable-5-2", system=SYSTEM, messages=[{"role": "user", "content": "hi"}]
    )
    estimate = _report(body, body).as_dict()["cache"]
    assert "cached_usd" not in estimate
    assert "claude-fable-5-2 has no cache_write_5m price" in estimate["reason"]


def test_a_one_hour_breakpoint_is_written_at_the_one_hour_price() -> None:
    hour = [{**SYSTEM[0], "cache_control": {"type": "ephemeral", "ttl": "1h"}}]
    messages = [{"role": "user", "content": "hi"}]
    five, one = (
        _report(_body(system=system, messages=messages)).as_dict()["cache"]
        for system in (SYSTEM, hour)
    )
    prices = load_models().get("claude-sonnet-5").prices
    assert prices.cache_write_1h is not None and prices.cache_write_5m is not None
    assert five["write_tokens"] == one["write_tokens"] > 0
    assert (five["write_duration"], one["write_duration"]) == ("5 minutes", "1 hour")
    extra = one["write_tokens"] * (prices.cache_write_1h - prices.cache_write_5m) / 1_000_000
    assert one["cached_usd"] - five["cached_usd"] == pytest.approx(extra, abs=1e-9)


def test_the_same_prefix_for_another_model_is_not_read() -> None:
    messages = [{"role": "user", "content": "hi"}]
    estimate = _report(
        _body(system=SYSTEM, messages=messages),
        _body(model="claude-haiku-4-5", system=SYSTEM, messages=messages),
    ).as_dict()["cache"]
    assert estimate["read_tokens"] == 0
