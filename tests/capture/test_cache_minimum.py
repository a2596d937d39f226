"""The cache estimate and the minimum cacheable length (issue #39), through the Anthropic SDK
against the local server: a prompt below the model's minimum is never cached, so the
estimate with caching equals the one without and says why; one above it saves what the
published prices give."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import jsonschema
import pytest

from pytest_toll.calls.capture import ANTHROPIC_MESSAGES, CaptureReport, SentRequest, measure_sent
from pytest_toll.capture_hook import Capture
from pytest_toll.core.models import Prices, load_models
from pytest_toll.report.data import SCHEMA_PATH
from pytest_toll.report.markdown import capture_line
from tests.capture.llm_server import Server, serving

EPHEMERAL = {"type": "ephemeral"}
#: About 150 o200k tokens: the size of prompt the issue resent three times.
SHORT = "You are the notes assistant. " * 25
#: About 1,500 o200k tokens: above Claude Sonnet 4.5's 1,024-token minimum (×1.29 scaled),
#: below Claude Haiku 4.5's 4,096.
LONG = "You are the notes assistant. " * 250
#: Claude Sonnet 4.5 as Anthropic's pricing table publishes it (USD per million tokens):
#: input, 5-minute cache write, cache hit; the catalogue must say the same.
PUBLISHED = {"input": 3, "cache_write_5m": 3.75, "cache_read": 0.30}


@pytest.fixture
def server() -> Iterator[Server]:
    with serving() as running:
        yield running


def _resend(server: Server, model: str, system_text: str, times: int = 3) -> CaptureReport:
    """The same request, its system prompt marked for caching, sent ``times`` times."""
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-local", max_retries=0)
    system: Any = [{"type": "text", "text": system_text, "cache_control": EPHEMERAL}]
    with Capture() as capture:
        for _ in range(times):
            reply = client.messages.create(
                model=model,
                max_tokens=20,
                system=system,
                messages=[{"role": "user", "content": "What is in the notes?"}],
            )
            assert reply.content[0].type == "text"
    return capture.measure()


def _cache_schema(node: Any) -> dict[str, Any] | None:
    """The report schema's ``cache`` object (under the capture's properties)."""
    if isinstance(node, dict):
        found = node.get("properties", {}).get("cache")
        if isinstance(found, dict) and "read_tokens" in found.get("properties", {}):
            return found
        children = list(node.values())
    elif isinstance(node, list):
        children = node
    else:
        return None
    for child in children:
        if (hit := _cache_schema(child)) is not None:
            return hit
    return None


def _valid(estimate: dict[str, Any]) -> dict[str, Any]:
    schema = _cache_schema(json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    assert schema is not None
    jsonschema.validate(estimate, schema)
    return estimate


def _prefix(report: CaptureReport) -> tuple[int, list[int]]:
    """The billed tokens of the marked prefix, and of each request."""
    (point,) = report.requests[0].cache.breakpoints
    billed = [r.report.total.billed for r in report.requests if r.report is not None]
    return point.billed, billed


def test_below_the_minimum_caching_saves_nothing_and_the_report_says_why(server: Server) -> None:
    report = _resend(server, "claude-sonnet-4-5", SHORT)
    prefix, billed = _prefix(report)
    assert 0 < prefix < 1024
    estimate = _valid(report.as_dict()["cache"])
    assert estimate["read_tokens"] == estimate["write_tokens"] == 0
    assert (
        estimate["cached_usd"]
        == estimate["uncached_usd"]
        == pytest.approx(sum(billed) * PUBLISHED["input"] / 1e6)
    )
    assert estimate["saved_usd"] == 0
    (why,) = estimate["below_minimum"]
    assert why == (
        "claude-sonnet-4-5: 3 breakpoints' prefixes are below its minimum cacheable length of "
        "1,024 tokens (https://github.com/anthropics/anthropic-sdk-python/issues/1194), so not "
        "cached: priced as uncached input"
    )
    line = capture_line(report.as_dict())
    assert "below its minimum cacheable length of 1,024 tokens" in line
    assert "writes at" not in line  # nothing was written


def test_above_the_minimum_caching_saves_what_the_published_prices_give(server: Server) -> None:
    prices = load_models().get("claude-sonnet-4-5").prices
    assert {name: getattr(prices, name) for name in PUBLISHED} == PUBLISHED
    report = _resend(server, "claude-sonnet-4-5", LONG)
    prefix, billed = _prefix(report)
    assert 1024 <= prefix < 4096
    estimate = _valid(report.as_dict()["cache"])
    # The first request writes the prefix (5 minutes, the default); the other two read it.
    assert (estimate["write_tokens"], estimate["read_tokens"]) == (prefix, 2 * prefix)
    assert estimate["write_duration"] == "5 minutes"
    rest = [total - prefix for total in billed]
    cached = (
        prefix * PUBLISHED["cache_write_5m"]
        + 2 * prefix * PUBLISHED["cache_read"]
        + sum(rest) * PUBLISHED["input"]
    ) / 1e6
    uncached = sum(billed) * PUBLISHED["input"] / 1e6
    assert estimate["cached_usd"] == pytest.approx(cached, abs=1e-9)
    assert estimate["saved_usd"] == pytest.approx(uncached - cached, abs=1e-9)
    assert uncached - cached > 0
    assert "below_minimum" not in estimate and "minimum_unknown" not in estimate
    assert "writes at the 5 minutes price" in capture_line(report.as_dict())


def test_the_same_prompt_is_cached_by_one_model_and_not_by_another(server: Server) -> None:
    # Claude Haiku 4.5's minimum is 4,096 tokens: the prompt Sonnet 4.5 caches, it does not.
    report = _resend(server, "claude-haiku-4-5", LONG)
    prefix, _ = _prefix(report)
    assert 1024 <= prefix < 4096
    estimate = report.as_dict()["cache"]
    assert estimate["saved_usd"] == 0 and estimate["read_tokens"] == 0
    assert "minimum cacheable length of 4,096 tokens" in estimate["below_minimum"][0]


# --- bodies measured directly -------------------------------------------------------------


def _body(model: str, system_text: str, ttl: str | None = None) -> SentRequest:
    control: dict[str, str] = {**EPHEMERAL, **({"ttl": ttl} if ttl else {})}
    body = {
        "model": model,
        "max_tokens": 10,
        "system": [{"type": "text", "text": system_text, "cache_control": control}],
        "messages": [{"role": "user", "content": "hi"}],
    }
    return SentRequest(ANTHROPIC_MESSAGES, "h", "/v1/messages", json.dumps(body).encode())


def test_a_model_whose_minimum_is_not_known_is_estimated_without_one_and_says_so() -> None:
    body = _body("claude-sonnet-5-5", SHORT)
    estimate = _valid(measure_sent([body, body]).as_dict()["cache"])
    assert estimate["minimum_unknown"] == ["claude-sonnet-5-5"]
    assert estimate["read_tokens"] > 0 and estimate["saved_usd"] > 0
    assert "no minimum cacheable length known for claude-sonnet-5-5" in capture_line(
        measure_sent([body, body]).as_dict()
    )


def test_a_one_hour_write_needs_the_one_hour_price() -> None:
    # Never the 5-minute price in its place: the estimate has no USD and names the price.
    catalogue = load_models(
        {
            "house": {
                "provider": "anthropic",
                "prices": Prices(input=1, cache_read=0.1, cache_write_5m=1.25).as_dict(),
                "cache_minimum": {"tokens": 1024},
            }
        }
    )
    hour = measure_sent([_body("house", LONG, ttl="1h")], catalogue).as_dict()["cache"]
    assert hour["reason"] == "house has no cache_write_1h price in the catalogue"
    five = measure_sent([_body("house", LONG)], catalogue).as_dict()["cache"]
    assert five["write_duration"] == "5 minutes" and "cached_usd" in five


def test_a_model_with_one_write_price_says_so() -> None:
    catalogue = load_models(
        {"house": {"provider": "anthropic", "prices": {"input": 1, "cache_write": 1.25}}}
    )
    estimate = measure_sent([_body("house", LONG, ttl="1h")], catalogue).as_dict()["cache"]
    assert estimate["write_duration"] == "the model's one cache-write price"
    assert estimate["cached_usd"] > estimate["uncached_usd"]
