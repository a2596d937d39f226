"""Prompt caching, estimated: the cacheable prefix of a request, and a run's cost with caching.

A request marks caching breakpoints with ``cache_control`` on a tool, a system block or a
message's content block (Bedrock Converse's ``cachePoint`` is read as the same). The
provider caches the prompt in the order tools → system → messages, so a breakpoint's
*prefix* is everything up to and including the marked block. Each prefix is measured like
a request (o200k, the model's scaled figure beside it) and remembered as a digest of its
content (breakpoint markers left out), never as text.

:func:`run_cost` replays a run's requests in order, as the provider's cache would see them:

- a request **reads** the longest of its prefixes that an earlier request of the same model
  wrote (every breakpoint writes its prefix);
- it **writes** its longest prefix when that was not cached yet: the tokens of it beyond
  what was read, at the cache-write price (``cache_write_1h`` for ``ttl: "1h"``, else
  ``cache_write_5m``, else ``cache_write``);
- the rest of the request is uncached input.

It is an estimate of what caching would save, never a measurement: it assumes every write
is still cached when read (no TTL expiry), leaves out the provider's minimum cacheable
length and its lookback limit, and prices scaled o200k counts. USD is per the catalogue's
prices at the request's tier; a model without cache prices makes the run's estimate absent,
with the reason.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_toll.calls.measuring import CallReport, measure
from pytest_toll.core.models import PER_MILLION, Catalogue, Model

CACHE_ESTIMATE_LABEL = (
    "estimate of what prompt caching would save: every write assumed still cached when read, "
    "no minimum cacheable length, scaled o200k counts at the catalogue's prices; "
    "not a measurement"
)


@dataclass(frozen=True)
class Breakpoint:
    """One cacheable prefix of a request: its digest, o200k tokens, scaled tokens, TTL."""

    digest: str
    tokens: int
    billed: int
    ttl: str


def _marked(block: object) -> str | None:
    """The TTL of a block's ``cache_control`` breakpoint (``5m`` by default); None: unmarked."""
    if not isinstance(block, Mapping):
        return None
    control = block.get("cache_control")
    if not isinstance(control, Mapping):
        return None
    ttl = control.get("ttl")
    return ttl if isinstance(ttl, str) else "5m"


def _without_markers(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {
            key: _without_markers(item) for key, item in value.items() if key != "cache_control"
        }
    if isinstance(value, list):
        return [_without_markers(item) for item in value]
    return value


def _cut_points(
    system: object, messages: object, tools: object
) -> list[tuple[str, object, object, object]]:
    """``(ttl, tools, system, messages)`` for each breakpoint, in cache order."""
    cuts: list[tuple[str, object, object, object]] = []
    tool_list = tools if isinstance(tools, list) else []
    for index, tool in enumerate(tool_list):
        ttl = _marked(tool)
        if ttl:
            cuts.append((ttl, tool_list[: index + 1], None, []))
    if isinstance(system, list):
        for index, block in enumerate(system):
            ttl = _marked(block)
            if ttl:
                cuts.append((ttl, tools, system[: index + 1], []))
    message_list = messages if isinstance(messages, list) else []
    for number, message in enumerate(message_list):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            continue
        for index, block in enumerate(content):
            ttl = _marked(block)
            if ttl:
                cut = {**message, "content": content[: index + 1]}
                cuts.append((ttl, tools, system, [*message_list[:number], cut]))
    return cuts


def breakpoints(
    model: Model,
    call_name: str,
    system: object,
    messages: object,
    tools: object,
    catalogue: Catalogue,
) -> tuple[Breakpoint, ...]:
    """The cacheable prefixes of a request, measured; () when it marks no breakpoint."""
    found: list[Breakpoint] = []
    for ttl, cut_tools, cut_system, cut_messages in _cut_points(system, messages, tools):
        report = measure(model, cut_system, cut_messages, cut_tools, catalogue=catalogue)  # type: ignore[arg-type]
        tokens, billed = _prefix_tokens(report, bool(cut_messages))
        content = [
            call_name,
            _without_markers(cut_tools),
            _without_markers(cut_system),
            _without_markers(cut_messages),
        ]
        text = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
        digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        found.append(Breakpoint(digest, tokens, billed, ttl))
    return tuple(found)


def _prefix_tokens(report: CallReport, has_messages: bool) -> tuple[int, int]:
    """A prefix's o200k and billed (scaled) tokens; a prefix of tools or system alone was
    measured with measure()'s one-message probe, which is taken back out."""
    tokens, billed = report.graded_tokens, report.total.billed
    if not has_messages:
        tokens -= report.parts["messages"].tokens
        billed -= report.parts["messages"].billed
    return max(tokens, 0), max(billed, 0)


@dataclass(frozen=True)
class CachedRequest:
    """What :func:`run_cost` needs of one request: its model, billed total and prefixes."""

    model: Model
    billed: int
    breakpoints: tuple[Breakpoint, ...]


def _write_price(model: Model, billed: int, ttl: str) -> float | None:
    prices = model.prices_for(billed)
    if ttl == "1h" and prices.cache_write_1h is not None:
        return prices.cache_write_1h
    return prices.cache_write_5m if prices.cache_write_5m is not None else prices.cache_write


def run_cost(requests: Sequence[CachedRequest]) -> dict[str, Any] | None:
    """A run's input cost with caching beside it without; None when no request marks a
    breakpoint. ``usd`` is absent (with ``reason``) when a model lacks a price it needs."""
    if not any(request.breakpoints for request in requests):
        return None
    written: set[tuple[str, str]] = set()
    read_tokens = write_tokens = 0
    cached_usd = uncached_usd = 0.0
    missing: list[str] = []
    for request in requests:
        model = request.model
        prices = model.prices_for(request.billed)
        read = write = 0
        ttl = "5m"
        if request.breakpoints:
            hits = [
                point.billed
                for point in request.breakpoints
                if (model.name, point.digest) in written
            ]
            read = max(hits, default=0)
            longest = max(request.breakpoints, key=lambda point: point.billed)
            ttl = longest.ttl
            if (model.name, longest.digest) not in written:
                write = max(longest.billed - read, 0)
            written.update((model.name, point.digest) for point in request.breakpoints)
        read_tokens += read
        write_tokens += write
        write_price = _write_price(model, request.billed, ttl)
        needed = {"input": prices.input}
        if read:
            needed["cache_read"] = prices.cache_read
        if write:
            needed["cache_write"] = write_price
        lacking = [name for name, price in needed.items() if price is None]
        if lacking:
            missing.append(f"{model.name} has no {'/'.join(lacking)} price in the catalogue")
            continue
        rest = max(request.billed - read - write, 0)
        uncached_usd += request.billed * (prices.input or 0.0) / PER_MILLION
        cached_usd += (
            read * (prices.cache_read or 0.0)
            + write * (write_price or 0.0)
            + rest * (prices.input or 0.0)
        ) / PER_MILLION
    estimate: dict[str, Any] = {
        "label": CACHE_ESTIMATE_LABEL,
        "read_tokens": read_tokens,
        "write_tokens": write_tokens,
    }
    if missing:
        estimate["reason"] = "; ".join(sorted(set(missing)))
    else:
        estimate["uncached_usd"] = round(uncached_usd, 10)
        estimate["cached_usd"] = round(cached_usd, 10)
        estimate["saved_usd"] = round(uncached_usd - cached_usd, 10)
    return estimate
