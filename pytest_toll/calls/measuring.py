"""Measure a whole call before sending it: messages, system, skills and tools, attributed.

``measure()`` counts a call in four cumulative stages, in this order::

    1. messages
    2. system   + messages
    3. skills   + system + messages      (the skills catalogue is prepended to the system)
    4. skills   + system + tools + messages

Each part is its stage minus the stage before, so the parts always sum exactly to the total.
A tokenizer may merge characters across a boundary, so a part can be off by a token or two,
and can even be negative; the report says so when that happens.

How each stage is counted:

- **estimate** (the default): the stage's text is counted with o200k_base (or with a
  chars-per-token figure when ``Tuning.chars_per_token`` is set), plus
  ``tokens_per_message`` for each message (role and delimiters) and ``tokens_per_image``
  for each image. Images have no text; without ``tokens_per_image`` they are reported as
  *not estimated* (the count leaves them out and says so), never counted as zero silently.
  Tools are serialized the way the model's provider sees them: Claude's ``<functions>``
  block for Anthropic models, the OpenAI ``tools`` array for every other provider.
  For a model whose tokenizer differs from o200k (Claude), each stage is also scaled by the
  model's factor (rounded up), shown beside the raw o200k count; grades and pins use the raw
  count, USD uses the scaled one (the best estimate of what is billed).
- **native** (``exact=True``, Anthropic models only): each stage is a real
  ``count_tokens`` request, and the tools part is exactly the difference between the
  request with the tools and the same request without them. If the API refuses the request
  shape, the whole report falls back to estimates and says why; any other error (auth,
  rate limit, overload, timeout) raises ``CouldNotJudge``.

Messages may be Anthropic-shaped (content blocks, ``tool_use``/``tool_result``) or
OpenAI-shaped (``tool_calls``, ``role: tool``, ``image_url`` parts, ``system``/``developer``
messages, which are lifted into the system part). Empty or omitted messages are replaced by
one user message ``"."`` and the report is flagged ``probe: true``.

``tool_schemas="compact"`` measures compacted copies of the tool input schemas (see
``compact_schema``); the caller's tools are never changed.
"""

from __future__ import annotations

import math
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_toll.calls.anthropic import CountRefused, CountTokensClient
from pytest_toll.calls.catalogues import anthropic_tool, as_tools, serialize_tools, skills_catalogue
from pytest_toll.calls.compact import compact_tools
from pytest_toll.calls.messages import (
    SEPARATOR,
    Conversation,
    normalize_messages,
    render_message_texts,
    system_text,
)
from pytest_toll.calls.request_options import SettingsCount, natively_countable, settings_in
from pytest_toll.core.errors import UsageError
from pytest_toll.core.models import Catalogue, Model, Scale, load_models
from pytest_toll.core.tokens import (
    ESTIMATE,
    NATIVE,
    O200K,
    TOKENIZER_NAME,
    Counter,
    EstimateCounter,
    O200kCounter,
    scaled_method,
)
from pytest_toll.definitions.tools import Tool

PARTS = ("messages", "system", "skills", "tools")
FULL = "full"
COMPACT = "compact"
DEFAULT_TOKENS_PER_MESSAGE = 4
USD_DIGITS = 10


# --- tuning and results -----------------------------------------------------------------


@dataclass(frozen=True)
class Tuning:
    """How estimates are made; printed with every estimated report.

    ``chars_per_token`` None means o200k_base. ``tokens_per_message`` covers each message's
    role and delimiters. ``tokens_per_image`` None means images are not estimated.
    """

    chars_per_token: float | None = None
    tokens_per_message: int = DEFAULT_TOKENS_PER_MESSAGE
    tokens_per_image: int | None = None

    def __post_init__(self) -> None:
        if self.chars_per_token is not None and not (
            math.isfinite(self.chars_per_token) and self.chars_per_token > 0
        ):
            raise UsageError(f"chars per token must be above zero, not {self.chars_per_token}")
        if self.tokens_per_message < 0:
            raise UsageError(
                f"tokens per message must not be negative, not {self.tokens_per_message}"
            )
        if self.tokens_per_image is not None and self.tokens_per_image < 0:
            raise UsageError(f"tokens per image must not be negative, not {self.tokens_per_image}")

    def as_dict(self) -> dict[str, Any]:
        return {
            "chars_per_token": self.chars_per_token,
            "tokens_per_message": self.tokens_per_message,
            "tokens_per_image": self.tokens_per_image,
        }

    def describe(self) -> str:
        counter = (
            "o200k_base"
            if self.chars_per_token is None
            else f"{self.chars_per_token:g} chars/token"
        )
        images = (
            "images not estimated"
            if self.tokens_per_image is None
            else f"{self.tokens_per_image} tokens/image"
        )
        return f"{counter}, {self.tokens_per_message} tokens/message, {images}"


@dataclass(frozen=True)
class Part:
    """One part of a call (or the total): tokens, how they were made, and what they cost.

    ``tokens`` is the raw o200k (or native, or chars) count; ``scaled`` the count scaled for
    the model's tokenizer when that differs; ``cost_usd`` is None when the price is unknown.
    """

    tokens: int
    source: str
    cost_usd: float | None = None
    scaled: int | None = None

    @property
    def billed(self) -> int:
        """The best estimate of what the provider counts: scaled when there is a scale."""
        return self.tokens if self.scaled is None else self.scaled

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tokens": self.tokens, "source": self.source}
        if self.scaled is not None:
            data["scaled"] = self.scaled
        if self.cost_usd is not None:
            data["cost_usd"] = round(self.cost_usd, USD_DIGITS)
        return data


@dataclass(frozen=True)
class CallReport:
    """A measured call. ``as_dict()`` is the JSON report (``"kind": "call"``).

    ``method`` says how every ``tokens`` figure was made (``o200k``, ``estimate`` or
    ``native``); ``scaled_method`` (``o200k×1.80``) how the ``scaled`` figures were, when the
    model's tokenizer is not o200k. Budgets and pins use ``total.tokens``.
    """

    model: str
    provider: str
    probe: bool
    method: str
    tokenizer: str
    scale: Scale
    parts: Mapping[str, Part]
    total: Part
    tool_schemas: str = FULL
    tuning: Tuning = field(default_factory=Tuning)
    window: int | None = None
    images: int = 0
    images_estimated: bool = True
    exact_requested: bool = False
    fallback_reason: str | None = None
    notes: tuple[str, ...] = ()
    #: For a native report, the o200k count of each part and the total (what is graded).
    o200k: Mapping[str, int] | None = None
    #: What the request body carried beyond the parts, and what of it was counted.
    settings: SettingsCount | None = None

    @property
    def graded_tokens(self) -> int:
        """The number budgets and pins use: the o200k total, even beside native counts."""
        return self.o200k["total"] if self.o200k is not None else self.total.tokens

    @property
    def source(self) -> str:
        return self.total.source

    @property
    def scaled_method(self) -> str | None:
        if self.total.scaled is None:
            return None
        return scaled_method(self.scale.factor)

    @property
    def window_share(self) -> float | None:
        return None if not self.window else self.total.billed / self.window

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "call",
            "model": self.model,
            "provider": self.provider,
            "probe": self.probe,
            "tokenizer": self.tokenizer,
            "method": self.method,
            "scaled_method": self.scaled_method,
            "scale": self.scale.as_dict(),
            "parts": {name: self.parts[name].as_dict() for name in PARTS},
            "total": self.total.as_dict(),
            "tool_schemas": self.tool_schemas,
            "tuning": self.tuning.as_dict(),
            "images": {"count": self.images, "estimated": self.images_estimated},
            "exact": {"requested": self.exact_requested, "used": self.source == NATIVE},
        }
        if self.fallback_reason is not None:
            data["exact"]["reason"] = self.fallback_reason
        if self.window is not None:
            data["window"] = self.window
            data["window_share"] = self.window_share
        if self.o200k is not None:
            data["o200k"] = dict(self.o200k)
        if self.settings is not None:
            data["request_settings"] = self.settings.as_dict()
        data["notes"] = list(self.notes)
        return data


# --- counting joined texts --------------------------------------------------------------


def _safe_start(text: str) -> bool:
    """Whether o200k's pre-tokenizer must start a new piece at ``text[0]`` after ``\\n\\n``.

    A piece only crosses a ``\\n\\n`` into the next text when that text starts with
    whitespace (the whitespace patterns) or ``/`` (punctuation absorbs ``[\\r\\n/]*``).
    Separators, control and format characters are treated as unsafe too, conservatively.
    """
    if not text:
        return False
    first = text[0]
    return not (first.isspace() or first == "/" or unicodedata.category(first)[0] in "ZC")


def count_joined(counter: Counter, pieces: Sequence[str]) -> int:
    """Exactly ``counter.count("\\n\\n".join(pieces))``, counted piece by piece where it can.

    o200k pre-tokenizes with a regex and encodes each regex piece on its own, so where no
    piece can cross a boundary the count of the joined text is the sum of the counts of
    ``piece + "\\n\\n"`` chunks. Each chunk is cached by content, so measuring a growing
    conversation turn after turn counts only what is new. Where a boundary is not safe the
    neighbours are joined first; other counters count the joined text whole.
    """
    if counter.method != O200K:
        return counter.count(SEPARATOR.join(pieces))
    total = 0
    pending: str | None = None
    for piece in pieces:
        if pending is None:
            pending = piece
        elif _safe_start(piece):
            total += counter.count(pending + SEPARATOR)
            pending = piece
        else:
            pending = pending + SEPARATOR + piece
    return total + (counter.count(pending) if pending is not None else 0)


# --- measuring --------------------------------------------------------------------------


def join_texts(*texts: str) -> str:
    return "\n\n".join(text for text in texts if text)


def resolve_model(model: str | Model, catalogue: Catalogue | None) -> Model:
    """The catalogue row of ``model``; a name it lacks is measured as an uncatalogued model
    (o200k, unscaled, unpriced) whose report says how to add it."""
    if isinstance(model, Model):
        return model
    return (catalogue or load_models()).resolve(model)


@dataclass(frozen=True)
class _Call:
    """A call ready to count: the model's view of each part."""

    conversation: Conversation
    system: str
    skills: str
    tools: tuple[Tool, ...]
    settings: Mapping[str, Any] = field(default_factory=dict)


def _prepare(
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: object,
    tools: object,
    skills: object,
    tool_schemas: str,
    settings: Mapping[str, Any] | None = None,
) -> _Call:
    if tool_schemas not in (FULL, COMPACT):
        raise UsageError(f"tool_schemas must be 'full' or 'compact', not {tool_schemas!r}")
    system = system_text(system)
    conversation = normalize_messages(messages)
    prepared_tools = as_tools(tools)
    if tool_schemas == COMPACT:
        prepared_tools = compact_tools(prepared_tools)
    return _Call(
        conversation=conversation,
        system=join_texts(*conversation.system_texts, system or ""),
        skills=skills_catalogue(skills),
        tools=tuple(prepared_tools),
        settings=settings_in(settings or {}),
    )


def _stage_pieces(call: _Call, provider: str) -> list[list[str]]:
    """Each stage as the texts it joins with blank lines (empty parts leave no gap)."""
    messages = render_message_texts(call.conversation)
    tools = serialize_tools(call.tools, provider)
    prefixes = [
        [],
        [call.system],
        [call.skills, call.system],
        [call.skills, call.system, tools],
    ]
    return [[text for text in prefix if text] + messages for prefix in prefixes]


def _stage_texts(call: _Call, provider: str) -> list[str]:
    return [SEPARATOR.join(pieces) for pieces in _stage_pieces(call, provider)]


def _stage_bodies(call: _Call, model_id: str) -> list[dict[str, Any] | None]:
    """count_tokens bodies per stage; None where the stage adds nothing (no request sent)."""
    base: dict[str, Any] = {"model": model_id, "messages": list(call.conversation.messages)}
    with_system = {**base, "system": call.system} if call.system else None
    system_with_skills = join_texts(call.skills, call.system)
    with_skills = {**base, "system": system_with_skills} if call.skills else None
    last = with_skills or with_system or base
    with_tools = (
        {**last, "tools": [anthropic_tool(tool) for tool in call.tools]} if call.tools else None
    )
    return [base, with_system, with_skills, with_tools]


def _parts_from_stages(
    stages: Sequence[int], source: str, model: Model, scale: float | None
) -> tuple[dict[str, Part], Part]:
    scaled_stages = [math.ceil(count * scale) for count in stages] if scale else None
    billed_total = scaled_stages[-1] if scaled_stages else stages[-1]
    parts: dict[str, Part] = {}
    previous, previous_scaled = 0, 0
    for index, name in enumerate(PARTS):
        tokens = stages[index] - previous
        scaled = None
        if scaled_stages is not None:
            scaled = scaled_stages[index] - previous_scaled
            previous_scaled = scaled_stages[index]
        billed = tokens if scaled is None else scaled
        parts[name] = Part(tokens, source, model.cost_usd(billed, billed_total), scaled)
        previous = stages[index]
    total = Part(
        stages[-1],
        source,
        model.cost_usd(billed_total, billed_total),
        scaled_stages[-1] if scaled_stages else None,
    )
    return parts, total


def measure(
    model: str | Model,
    system: str | Sequence[Mapping[str, Any]] | None = None,
    messages: object = None,
    tools: object = None,
    skills: object = None,
    tool_schemas: str = FULL,
    exact: bool = False,
    *,
    tuning: Tuning | None = None,
    catalogue: Catalogue | None = None,
    client: CountTokensClient | None = None,
    request_settings: Mapping[str, Any] | None = None,
) -> CallReport:
    """Measure one call before sending it; see the module docstring for exactly how.

    ``model`` is a catalogue name (or a ``Model``); ``catalogue`` carries toll.yaml
    overrides. ``tools`` is any tools array ``normalize_tools`` accepts, or ``Tool``s.
    ``exact=True`` asks Anthropic's count_tokens (``client``, or one built from the
    environment); for other providers the report stays an estimate and says why.
    ``request_settings`` (``output_format``, ``response_format``, ``tool_choice``,
    ``thinking``) are named in the report, and counted natively beside the total with
    ``exact`` (``pytest_toll.calls.request_options``).
    """
    resolved = resolve_model(model, catalogue)
    model_id = model if isinstance(model, str) else resolved.name
    tuning = tuning or Tuning()
    call = _prepare(system, messages, tools, skills, tool_schemas, request_settings)
    if not exact:
        return _measure_estimate(call, resolved, model_id, tuning, tool_schemas)
    if resolved.provider != "anthropic":
        reason = (
            f"exact counts come from Anthropic's count_tokens; {resolved.provider} models "
            "have no counting endpoint here, so these are estimates"
        )
        return _measure_estimate(call, resolved, model_id, tuning, tool_schemas, reason)
    try:
        native = _measure_native(call, resolved, model_id, tool_schemas, client)
    except CountRefused as refused:
        reason = f"count_tokens refused the request, so these are estimates: {refused}"
        return _measure_estimate(call, resolved, model_id, tuning, tool_schemas, reason)
    # The o200k twin is what budgets and pins grade; it is shown beside the native counts.
    twin = _measure_estimate(call, resolved, model_id, Tuning(), tool_schemas)
    graded = {name: twin.parts[name].tokens for name in PARTS}
    graded["total"] = twin.total.tokens
    return replace(native, exact_requested=True, o200k=graded)


def _measure_estimate(
    call: _Call,
    resolved: Model,
    model_id: str,
    tuning: Tuning,
    tool_schemas: str,
    fallback: str | None = None,
) -> CallReport:
    notes: list[str] = []
    counter = _counter(tuning)
    stage_pieces = _stage_pieces(call, resolved.provider)
    overhead = tuning.tokens_per_message * len(call.conversation.messages)
    images = call.conversation.images
    images_estimated = images == 0 or tuning.tokens_per_image is not None
    if images and tuning.tokens_per_image is not None:
        overhead += images * tuning.tokens_per_image
    elif images:
        notes.append(
            f"{images} image(s) not estimated: the messages part leaves them out "
            "(set tokens_per_image, or use exact counts)"
        )
    stages = [count_joined(counter, pieces) + overhead for pieces in stage_pieces]
    use_scale = tuning.chars_per_token is None and resolved.scale.factor != 1.0
    parts, total = _parts_from_stages(
        stages, ESTIMATE, resolved, resolved.scale.factor if use_scale else None
    )
    if tuning.chars_per_token is not None:
        method, tokenizer = ESTIMATE, f"{tuning.chars_per_token:g} chars/token"
        scale = Scale(1.0, False, "a chars/token estimate is not scaled")
    else:
        method, tokenizer = O200K, TOKENIZER_NAME
        scale = resolved.scale
    if fallback:
        notes.insert(0, fallback)
    if not resolved.catalogued and resolved.note:
        notes.append(resolved.note)
    settings = SettingsCount(tuple(call.settings)) if call.settings else None
    if settings is not None:
        notes.extend(settings.notes(bool(call.tools)))
    notes.extend(_boundary_notes(parts))
    return CallReport(
        model=model_id,
        provider=resolved.provider,
        probe=call.conversation.probe,
        method=method,
        tokenizer=tokenizer,
        scale=scale,
        parts=parts,
        total=total,
        tool_schemas=tool_schemas,
        tuning=tuning,
        window=resolved.window,
        images=images,
        images_estimated=images_estimated,
        exact_requested=fallback is not None,
        fallback_reason=fallback,
        notes=tuple(notes),
        settings=settings,
    )


def _counter(tuning: Tuning) -> Counter:
    if tuning.chars_per_token is None:
        return O200kCounter()
    return EstimateCounter(tuning.chars_per_token)


def _boundary_notes(parts: Mapping[str, Part]) -> list[str]:
    negative = [name for name in PARTS if parts[name].tokens < 0]
    if not negative:
        return []
    return [
        f"{', '.join(negative)} came out negative: the tokenizer merged text across a part "
        "boundary; parts still sum exactly to the total"
    ]


def _measure_native(
    call: _Call,
    model: Model,
    model_id: str,
    tool_schemas: str,
    client: CountTokensClient | None,
) -> CallReport:
    owned = client is None
    counter = client or CountTokensClient.from_environment()
    countable = natively_countable(call.settings, bool(call.tools))
    with_settings = 0
    try:
        stages: list[int] = []
        bodies = _stage_bodies(call, model_id)
        for body in bodies:
            stages.append(counter.count(body) if body is not None else stages[-1])
        if countable:
            whole = next(body for body in reversed(bodies) if body is not None)
            with_settings = counter.count({**whole, **countable})
    finally:
        if owned:
            counter.close()
    parts, total = _parts_from_stages(stages, NATIVE, model, None)
    settings = None
    notes = _boundary_notes(parts)
    if call.settings:
        counted = tuple(countable)
        tokens = with_settings - stages[-1] if countable else None
        settings = SettingsCount(tuple(call.settings), counted, tokens, exact=True)
        notes = settings.notes(bool(call.tools)) + notes
    return CallReport(
        model=model_id,
        provider=model.provider,
        probe=call.conversation.probe,
        method=NATIVE,
        tokenizer="anthropic count_tokens",
        scale=Scale(1.0, True, "native counts need no scale"),
        parts=parts,
        total=total,
        tool_schemas=tool_schemas,
        window=model.window,
        images=call.conversation.images,
        images_estimated=True,
        notes=tuple(notes),
        settings=settings,
    )
