"""Prompt caching, estimated: the cacheable prefix of a request, and a run's cost with caching.

A request marks caching breakpoints with ``cache_control`` on a tool, a system block or a
message's content block (Bedrock Converse's ``cachePoint`` is read as the same). The
provider caches the prompt in the order tools → system → messages, so a breakpoint's
*prefix* is everything up to and including the marked block. Each prefix is measured like
a request (o200k, the model's scaled figure beside it) and remembered as a digest of its
content (breakpoint markers left out), never as text.

:func:`run_cost` replays a run's requests in order, as the provider's cache would see them:

- a breakpoint whose prefix is shorter than the model's **minimum cacheable length** (the
  catalogue's ``cache_minimum``, compared with the scaled count the provider bills) is not
  cached: it is neither written nor read, and the estimate says which and why;
- a request **reads** the longest prefix an earlier request of the same model wrote, found
  at one of its breakpoints or at the block boundaries up to ``LOOKBACK_BLOCKS`` before each
  (as the provider looks back), so a conversation that moves its breakpoint to the newest
  message each turn reads what the turn before wrote;
- it **writes** its longest cacheable prefix when that was not cached yet: the tokens of it
  beyond what was read, at the write price of that breakpoint's duration
  (``cache_write_1h`` for ``ttl: "1h"``, ``cache_write_5m`` for the default 5 minutes, else
  the model's one ``cache_write`` price), and the estimate names the durations it priced;
- the rest of the request is uncached input.

Token figures of the estimate (``read_tokens``, ``write_tokens``) are scaled o200k, what USD
is priced on.

It is an estimate of what caching would save, never a measurement: it assumes every write
is still cached when read (no TTL expiry), leaves out the provider's lookback limit, and
prices scaled o200k counts. USD is per the catalogue's prices at the request's tier; a model
without the cache prices it needs makes the run's estimate absent, with the reason. A model
whose minimum no page gave is estimated without one, and the estimate says so.
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
    "a prefix below the model's minimum cacheable length not cached, scaled o200k counts at "
    "the catalogue's prices; not a measurement"
)
#: The write durations a breakpoint's ``ttl`` names, as the estimate reports them.
WRITE_DURATIONS = {"5m": "5 minutes", "1h": "1 hour"}
#: What the estimate says of a write priced at a model's one ``cache_write`` price.
ONE_WRITE_PRICE = "the model's one cache-write price"


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
    """The TTL of a block's ``cache_control`` breakpoint (``5m`` or ``1h``); None: unmarked."""
    if not isinstance(block, Mapping):
        return None
    control = block.get("cache_control")
    if not isinstance(control, Mapping):
        return None
    # The provider takes two durations: "1h", or the default 5 minutes.
    return "1h" if control.get("ttl") == "1h" else "5m"


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


def _write_price(model: Model, billed: int, ttl: str) -> tuple[str, float | None]:
    """The price a write of this duration is billed at, and its field: the duration's own
    price (never the other duration's), else the model's one ``cache_write`` price."""
    prices = model.prices_for(billed)
    field = "cache_write_1h" if ttl == "1h" else "cache_write_5m"
    if getattr(prices, field) is None and prices.cache_write is not None:
        return "cache_write", prices.cache_write
    return field, getattr(prices, field)


def _cacheable(model: Model, points: Sequence[Breakpoint]) -> tuple[Breakpoint, ...]:
    """The breakpoints whose prefix reaches the model's minimum cacheable length."""
    minimum = model.cache_minimum
    if minimum is None or minimum.tokens is None:
        return tuple(points)
    return tuple(point for point in points if point.billed >= minimum.tokens)


def _below_text(model: Model, short: int) -> str:
    minimum = model.cache_minimum
    assert minimum is not None and minimum.tokens is not None
    plural = "breakpoint's prefix is" if short == 1 else "breakpoints' prefixes are"
    return (
        f"{model.name}: {short} {plural} below its minimum cacheable length of "
        f"{minimum.tokens:,} tokens ({minimum.source}), so not cached: priced as uncached input"
    )


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
    short: dict[str, int] = {}
    unknown_minimum: set[str] = set()
    durations: set[str] = set()
    by_name: dict[str, Model] = {}
    for request in requests:
        model = request.model
        by_name[model.name] = model
        prices = model.prices_for(request.billed)
        points = _cacheable(model, request.marks.breakpoints)
        dropped = len(request.marks.breakpoints) - len(points)
        if dropped:
            short[model.name] = short.get(model.name, 0) + dropped
        if request.marks.breakpoints and (
            model.cache_minimum is None or model.cache_minimum.tokens is None
        ):
            unknown_minimum.add(model.name)
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
        field, write_price = _write_price(model, request.billed, ttl)
        needed = {"input": prices.input}
        if read:
            needed["cache_read"] = prices.cache_read
        if write:
            needed[field] = write_price
            durations.add(ONE_WRITE_PRICE if field == "cache_write" else WRITE_DURATIONS[ttl])
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
        "write_duration": ", ".join(sorted(durations)) or "none written",
    }
    if short:
        estimate["below_minimum"] = [
            _below_text(by_name[name], count) for name, count in sorted(short.items())
        ]
    if unknown_minimum:
        estimate["minimum_unknown"] = sorted(unknown_minimum)
    if missing:
        estimate["reason"] = "; ".join(sorted(set(missing)))
    else:
        estimate["uncached_usd"] = round(uncached_usd, 10)
        estimate["cached_usd"] = round(cached_usd, 10)
        estimate["saved_usd"] = round(uncached_usd - cached_usd, 10)
    return estimate
