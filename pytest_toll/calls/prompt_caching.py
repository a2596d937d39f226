"""Prompt caching, estimated: the cacheable prefix of a request, and a run's cost with caching.

A request marks caching breakpoints with ``cache_control`` on a tool, a system block or a
message's content block (Bedrock Converse's ``cachePoint`` is read as the same). The
provider caches the prompt in the order tools → system → messages, so a breakpoint's
*prefix* is everything up to and including the marked block. Each prefix is measured like
a request (o200k, the model's scaled figure beside it) and remembered as a digest of its
content (breakpoint markers left out), never as text.

:func:`run_cost` replays a run's requests in order, as the provider's cache would see them:

- a request **reads** the longest prefix an earlier request of the same model wrote, found
  at one of its breakpoints or at the block boundaries up to ``LOOKBACK_BLOCKS`` before each
  (as the provider looks back), so a conversation that moves its breakpoint to the newest
  message each turn reads what the turn before wrote;
- it **writes** its longest prefix when that was not cached yet: the tokens of it beyond
  what was read, at the cache-write price (``cache_write_1h`` for ``ttl: "1h"``, else
  ``cache_write_5m``, else ``cache_write``); every breakpoint's prefix is then cached;
- the rest of the request is uncached input.

Token figures of the estimate (``read_tokens``, ``write_tokens``) are scaled o200k, what USD
is priced on.

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


#: How many block boundaries before a breakpoint the provider looks back for a cached
#: prefix (Anthropic: "up to approximately 20 blocks before the explicit breakpoint").
LOOKBACK_BLOCKS = 20


@dataclass(frozen=True)
class Breakpoint:
    """One cacheable prefix of a request: its digest, o200k tokens, scaled tokens, TTL."""

    digest: bytes
    tokens: int
    billed: int
    ttl: str


@dataclass(frozen=True)
class CacheMarks:
    """What the cache estimate keeps of a request: its breakpoints, measured, and the
    digests of the prefixes it could read (each breakpoint and the blocks it looks back
    over). Digests, never text: a few hundred bytes however large the request."""

    breakpoints: tuple[Breakpoint, ...] = ()
    readable: frozenset[bytes] = frozenset()


#: A request that marks no breakpoint.
NO_MARKS = CacheMarks()


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


#: A prefix: ``(tools, system, messages)`` up to one block boundary, in cache order.
_Prefix = tuple[object, object, list[Any]]


def _boundaries(
    system: object, messages: object, tools: object
) -> list[tuple[str | None, _Prefix]]:
    """Every block boundary of a request in cache order (tools, system, messages), each
    with the TTL of its breakpoint (None: not marked) and the prefix that ends there."""
    found: list[tuple[str | None, _Prefix]] = []
    tool_list = tools if isinstance(tools, list) else []
    for index, tool in enumerate(tool_list):
        found.append((_marked(tool), (tool_list[: index + 1], None, [])))
    if isinstance(system, list):
        for index, block in enumerate(system):
            found.append((_marked(block), (tools, system[: index + 1], [])))
    elif system is not None:
        found.append((None, (tools, system, [])))
    message_list = messages if isinstance(messages, list) else []
    for number, message in enumerate(message_list):
        content = message.get("content") if isinstance(message, Mapping) else None
        if not isinstance(content, list):
            found.append((None, (tools, system, message_list[: number + 1])))
            continue
        for index, block in enumerate(content):
            cut = {**message, "content": content[: index + 1]}
            found.append((_marked(block), (tools, system, [*message_list[:number], cut])))
    return found


def _digest(model_name: str, prefix: _Prefix) -> bytes:
    tools, system, messages = prefix
    content = [model_name, _without_markers(tools), _without_markers(system),
               _without_markers(messages)]  # fmt: skip
    text = json.dumps(content, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()[:16]


def cache_marks(
    model: Model, system: object, messages: object, tools: object, catalogue: Catalogue
) -> CacheMarks:
    """A request's breakpoints, measured, and what it could read; empty when it marks none."""
    boundaries = _boundaries(system, messages, tools)
    marked = [index for index, (ttl, _) in enumerate(boundaries) if ttl is not None]
    if not marked:
        return NO_MARKS
    found: list[Breakpoint] = []
    readable: set[bytes] = set()
    for index in marked:
        ttl, prefix = boundaries[index]
        cut_tools, cut_system, cut_messages = prefix
        report = measure(model, cut_system, cut_messages, cut_tools, catalogue=catalogue)  # type: ignore[arg-type]
        tokens, billed = _prefix_tokens(report, bool(cut_messages))
        digest = _digest(model.name, prefix)
        found.append(Breakpoint(digest, tokens, billed, ttl or "5m"))
        for earlier in range(max(index - LOOKBACK_BLOCKS, 0), index):
            readable.add(_digest(model.name, boundaries[earlier][1]))
        readable.add(digest)
    return CacheMarks(tuple(found), frozenset(readable))


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
    """What :func:`run_cost` needs of one request: its model, billed total and marks."""

    model: Model
    billed: int
    marks: CacheMarks


def _write_price(model: Model, billed: int, ttl: str) -> float | None:
    prices = model.prices_for(billed)
    if ttl == "1h" and prices.cache_write_1h is not None:
        return prices.cache_write_1h
    return prices.cache_write_5m if prices.cache_write_5m is not None else prices.cache_write


def run_cost(requests: Sequence[CachedRequest]) -> dict[str, Any] | None:
    """A run's input cost with caching beside it without; None when no request marks a
    breakpoint. ``usd`` is absent (with ``reason``) when a model lacks a price it needs."""
    if not any(request.marks.breakpoints for request in requests):
        return None
    #: The prefixes written so far (the model is part of the digest), by billed tokens.
    written: dict[bytes, int] = {}
    read_tokens = write_tokens = 0
    cached_usd = uncached_usd = 0.0
    missing: list[str] = []
    for request in requests:
        model = request.model
        prices = model.prices_for(request.billed)
        points = request.marks.breakpoints
        read = write = 0
        ttl = "5m"
        if points:
            read = max((written[d] for d in request.marks.readable if d in written), default=0)
            longest = max(points, key=lambda point: point.billed)
            ttl = longest.ttl
            if longest.digest not in written:
                write = max(longest.billed - read, 0)
            written.update((point.digest, point.billed) for point in points)
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
