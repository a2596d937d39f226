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

import copy
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_toll.core.errors import CouldNotJudge, UsageError

if TYPE_CHECKING:
    from pytest_toll.calls.anthropic import CountTokensClient
    from pytest_toll.core.models import Catalogue, Model, Scale
    from pytest_toll.core.tokens import Counter
    from pytest_toll.definitions.tools import Tool

PARTS = ("messages", "system", "skills", "tools")
ESTIMATE = "estimate"
NATIVE = "native"
FULL = "full"
COMPACT = "compact"
PROBE_MESSAGE: dict[str, Any] = {"role": "user", "content": "."}
DEFAULT_TOKENS_PER_MESSAGE = 4
_USD_DIGITS = 10


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
            data["cost_usd"] = round(self.cost_usd, _USD_DIGITS)
        return data


@dataclass(frozen=True)
class Measurement:
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
        from pytest_toll.core.tokens import scaled_method

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
        data["notes"] = list(self.notes)
        return data


# --- messages ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Conversation:
    """Messages normalised to the Anthropic shape, plus what was lifted out of them."""

    messages: tuple[Mapping[str, Any], ...]
    system_texts: tuple[str, ...]
    images: int
    probe: bool


def _kind(value: object) -> str:
    return "null" if value is None else type(value).__name__


def _text_of(content: object, where: str) -> str:
    """The text of a system content: a string, or text parts / blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
                raise CouldNotJudge(f"{where}[{index}]: expected a text part")
            texts.append(part["text"])
        return "\n".join(texts)
    raise CouldNotJudge(f"{where}: must be a string or a list of parts, not {_kind(content)}")


def system_text(system: object) -> str | None:
    """A system prompt as one text: a string, or Anthropic text blocks on their own lines."""
    if system is None or isinstance(system, str):
        return system
    return _text_of(system, "system")


_DATA_URL = re.compile(r"data:([\w/+.-]+);base64,(.*)", re.S)


def _image_block(url: str) -> dict[str, Any]:
    match = _DATA_URL.fullmatch(url)
    if match:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": match.group(1), "data": match.group(2)},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


_ANTHROPIC_BLOCKS = {
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
}


def _block(part: object, where: str) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        raise CouldNotJudge(f"{where}: must be an object, not {_kind(part)}")
    kind = part.get("type")
    if kind in ("text", "input_text", "output_text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise CouldNotJudge(f"{where}.text: must be a string, not {_kind(text)}")
        return {"type": "text", "text": text}
    if kind in ("image_url", "input_image"):
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if not isinstance(url, str):
            raise CouldNotJudge(f"{where}.image_url: must hold a url string")
        return _image_block(url)
    if kind in _ANTHROPIC_BLOCKS:
        return dict(part)
    raise CouldNotJudge(
        f"{where}.type: unknown content block {kind!r} "
        "(expected text, image, image_url, tool_use, tool_result, thinking)"
    )


def _tool_use(call: object, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise CouldNotJudge(f"{where}: must be an object, not {_kind(call)}")
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise CouldNotJudge(f"{where}.function: must be an object with a name")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments or "{}")
        except json.JSONDecodeError as error:
            raise CouldNotJudge(
                f"{where}.function.arguments: not valid JSON: {error.msg}"
            ) from None
    else:
        parsed = arguments
    return {
        "type": "tool_use",
        "id": str(call.get("id", "")),
        "name": function["name"],
        "input": parsed if isinstance(parsed, dict) else {"value": parsed},
    }


def normalize_messages(messages: object, where: str = "messages") -> Conversation:
    """Anthropic- or OpenAI-shaped messages as Anthropic messages; errors name the field."""
    if messages is None:
        messages = []
    if not isinstance(messages, list | tuple):
        raise CouldNotJudge(f"{where}: must be a list of messages, not {_kind(messages)}")
    system_texts: list[str] = []
    normalized: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        here = f"{where}[{index}]"
        if not isinstance(message, Mapping):
            raise CouldNotJudge(f"{here}: must be an object, not {_kind(message)}")
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            system_texts.append(_text_of(content, f"{here}.content"))
            continue
        blocks: list[dict[str, Any]]
        if role == "tool":
            result = content if isinstance(content, str) else _text_of(content, f"{here}.content")
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": str(message.get("tool_call_id", "")),
                    "content": result,
                }
            ]
            role = "user"
        elif role in ("user", "assistant"):
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}]
            elif content is None:
                blocks = []
            elif isinstance(content, list):
                blocks = [_block(part, f"{here}.content[{i}]") for i, part in enumerate(content)]
            else:
                raise CouldNotJudge(
                    f"{here}.content: must be a string or a list of blocks, not {_kind(content)}"
                )
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise CouldNotJudge(f"{here}.tool_calls: must be a list")
            blocks += [_tool_use(call, f"{here}.tool_calls[{i}]") for i, call in enumerate(calls)]
        else:
            raise CouldNotJudge(
                f"{here}.role: must be user, assistant, system, developer or tool, not {role!r}"
            )
        if normalized and normalized[-1]["role"] == role:
            # Anthropic wants roles to alternate: consecutive turns (several OpenAI tool
            # results in a row) are one message there.
            normalized[-1]["content"] = [*normalized[-1]["content"], *blocks]
        else:
            normalized.append({"role": role, "content": blocks})
    probe = not normalized
    if probe:
        normalized = [copy.deepcopy(PROBE_MESSAGE)]
    images = sum(_count_images(message["content"]) for message in normalized)
    return Conversation(tuple(normalized), tuple(system_texts), images, probe)


def _count_images(content: object) -> int:
    if not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if isinstance(block, Mapping):
            if block.get("type") in ("image", "document"):
                total += 1
            elif block.get("type") == "tool_result":
                total += _count_images(block.get("content"))
    return total


def _minified(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render_content(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        kind = block.get("type")
        if kind == "text":
            texts.append(block.get("text", ""))
        elif kind in ("tool_use", "server_tool_use"):
            texts.append(_minified({"name": block.get("name"), "input": block.get("input", {})}))
        elif kind == "tool_result" or kind == "web_search_tool_result":
            texts.extend(_render_content(block.get("content", "")))
        elif kind == "thinking":
            texts.append(block.get("thinking", ""))
        elif kind == "redacted_thinking":
            texts.append(block.get("data", ""))
        # image and document blocks have no text: they are counted per image, or reported.
    return texts


def render_message_texts(conversation: Conversation) -> list[str]:
    """Each message's text: its block texts joined by newlines, tool calls as JSON."""
    return ["\n".join(_render_content(message["content"])) for message in conversation.messages]


def render_messages(conversation: Conversation) -> str:
    """The text an estimate counts for the messages: the message texts, blank-line separated."""
    return SEPARATOR.join(render_message_texts(conversation))


# --- counting joined texts --------------------------------------------------------------

SEPARATOR = "\n\n"


def _safe_start(text: str) -> bool:
    """Whether o200k's pre-tokenizer must start a new piece at ``text[0]`` after ``\\n\\n``.

    A piece only crosses a ``\\n\\n`` into the next text when that text starts with
    whitespace (the whitespace patterns) or ``/`` (punctuation absorbs ``[\\r\\n/]*``).
    Separators, control and format characters are treated as unsafe too, conservatively.
    """
    import unicodedata

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
    from pytest_toll.core.tokens import O200K

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


# --- skills and tools -------------------------------------------------------------------


def skills_catalogue(skills: object) -> str:
    """The catalogue text a host lists at the start of a session: ``name: description`` lines.

    ``skills`` is catalogue text already, a path to a skill folder or a folder of skills,
    or a sequence of objects / mappings with ``name`` and ``description``.
    """
    if skills is None:
        return ""
    if isinstance(skills, str) and not Path(skills).is_dir():
        return skills
    if isinstance(skills, str | Path):
        from pytest_toll.skills.measure import measure_skills

        report = measure_skills(Path(skills))
        items: Iterable[Any] = report.skills
    elif isinstance(skills, Iterable):
        items = skills
    else:
        raise CouldNotJudge(f"skills: expected text, a folder or a list, not {_kind(skills)}")
    from pytest_toll.skills.measure import metadata_text

    lines = []
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else getattr(item, "name", None)
        description = (
            item.get("description")
            if isinstance(item, Mapping)
            else getattr(item, "description", None)
        )
        if not isinstance(name, str) or not isinstance(description, str):
            raise CouldNotJudge(f"skills[{index}]: needs a string name and description")
        lines.append(metadata_text(name, description))
    return "\n".join(lines)


def _tools(tools: object) -> list[Tool]:
    from pytest_toll.definitions.tools import Tool, normalize_tools

    if tools is None:
        return []
    if isinstance(tools, list | tuple) and tools and all(isinstance(t, Tool) for t in tools):
        return list(tools)
    normalized, _shape = normalize_tools(list(tools) if isinstance(tools, tuple) else tools)
    return normalized


def serialize_tools(tools: Sequence[Tool], provider: str) -> str:
    """The text a model sees for its tools: Claude's block, or the OpenAI array."""
    from pytest_toll.definitions.serialize import serialize_claude, serialize_openai

    if not tools:
        return ""
    return serialize_claude(tools) if provider == "anthropic" else serialize_openai(tools)


def anthropic_tool(tool: Tool) -> dict[str, Any]:
    """A tool as the Anthropic API takes it (``name``, ``description``, ``input_schema``)."""
    element: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        element["description"] = tool.description
    element["input_schema"] = dict(tool.parameters)
    return element


# --- compaction -------------------------------------------------------------------------

_SUBSCHEMA = (
    "items",
    "additionalProperties",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_DROPPED_KEYWORDS = ("title", "$schema")
_DEF_REF = re.compile(r"#/(\$defs|definitions)/([^/]+)")


def _strip(node: object) -> object:
    """Drop ``title``/``$schema`` and squeeze description whitespace, schema-aware."""
    if not isinstance(node, Mapping):
        return copy.deepcopy(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS and isinstance(value, str):
            continue
        if key == "description" and isinstance(value, str):
            out[key] = " ".join(value.split())
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            # Names under properties are data, not keywords: a property named "title" stays.
            out[key] = {name: _strip(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strip(sub) for sub in value]
        elif key in _SUBSCHEMA:
            out[key] = _strip(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _refs(node: object, found: list[str]) -> None:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            match = _DEF_REF.fullmatch(ref)
            if match:
                found.append(match.group(2))
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _reaches(name: str, target: str, defs: Mapping[str, Any], seen: set[str]) -> bool:
    found: list[str] = []
    _refs(defs.get(name), found)
    for ref in found:
        if ref == target:
            return True
        if ref not in seen and ref in defs:
            seen.add(ref)
            if _reaches(ref, target, defs, seen):
                return True
    return False


def _inline(node: object, name: str, key: str, definition: Mapping[str, Any]) -> object:
    if isinstance(node, Mapping):
        if node.get("$ref") == f"#/{key}/{name}":
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**copy.deepcopy(dict(definition)), **siblings}
        return {k: _inline(v, name, key, definition) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, name, key, definition) for v in node]
    return node


def compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A compacted copy of a JSON Schema (the original is never changed). Exactly:

    1. ``title`` and ``$schema`` keywords (string-valued) are dropped everywhere a schema
       can appear; a *property* named ``title`` is kept;
    2. every ``description`` inside the schema has its whitespace squeezed (runs of spaces,
       tabs and newlines become one space; leading and trailing whitespace removed);
    3. root ``$defs``/``definitions`` entries referenced exactly once (and not recursively)
       are inlined at their ``$ref`` (sibling keywords of the ``$ref`` win); entries never
       referenced are dropped; entries used twice or more, or recursive, stay; an empty
       ``$defs`` is removed. Repeated until nothing changes.

    Everything else (types, enums, required, defaults, examples) is kept as it is. The
    serialization is the tool's usual one, so the difference is the schema content alone.
    """
    result = _strip(schema)
    assert isinstance(result, dict)
    for key in ("$defs", "definitions"):
        while isinstance(result.get(key), Mapping):
            defs = dict(result[key])
            found: list[str] = []
            rest = {k: v for k, v in result.items() if k != key}
            _refs(rest, found)
            _refs(defs, found)
            changed = False
            for name in list(defs):
                uses = found.count(name)
                if uses == 0:
                    del defs[name]
                    changed = True
                elif uses == 1 and not _reaches(name, name, defs, set()):
                    definition = defs.pop(name)
                    rest = _inline(rest, name, key, definition)  # type: ignore[assignment]
                    defs = _inline(defs, name, key, definition)  # type: ignore[assignment]
                    changed = True
                    break
            result = {**rest, key: defs} if defs else rest
            if not changed:
                break
    return result


_COMPACTED_LIMIT = 4096
_compacted: dict[str, dict[str, Any]] = {}


def _compacted_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    # A test measures the same tools call after call: compact each distinct schema once.
    # The cached copies stay inside the measurement's serialization and are never mutated.
    key = json.dumps(schema, sort_keys=True, ensure_ascii=False, default=str)
    cached = _compacted.get(key)
    if cached is None:
        if len(_compacted) >= _COMPACTED_LIMIT:
            _compacted.clear()
        cached = _compacted[key] = compact_schema(schema)
    return cached


def compact_tools(tools: Sequence[Tool]) -> list[Tool]:
    """Copies of ``tools`` with compacted input schemas (``compact_schema``)."""
    return [
        replace(tool, input_schema=_compacted_schema(tool.input_schema))
        if tool.input_schema is not None
        else tool
        for tool in tools
    ]


# --- measuring --------------------------------------------------------------------------


def _join(*texts: str) -> str:
    return "\n\n".join(text for text in texts if text)


def _resolve_model(model: str | Model, catalogue: Catalogue | None) -> Model:
    from pytest_toll.core.models import Model, load_models

    if isinstance(model, Model):
        return model
    return (catalogue or load_models()).get(model)


@dataclass(frozen=True)
class _Call:
    """A call ready to count: the model's view of each part."""

    conversation: Conversation
    system: str
    skills: str
    tools: tuple[Tool, ...]


def _prepare(
    system: str | Sequence[Mapping[str, Any]] | None,
    messages: object,
    tools: object,
    skills: object,
    tool_schemas: str,
) -> _Call:
    if tool_schemas not in (FULL, COMPACT):
        raise UsageError(f"tool_schemas must be 'full' or 'compact', not {tool_schemas!r}")
    system = system_text(system)
    conversation = normalize_messages(messages)
    prepared_tools = _tools(tools)
    if tool_schemas == COMPACT:
        prepared_tools = compact_tools(prepared_tools)
    return _Call(
        conversation=conversation,
        system=_join(*conversation.system_texts, system or ""),
        skills=skills_catalogue(skills),
        tools=tuple(prepared_tools),
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
    system_with_skills = _join(call.skills, call.system)
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
) -> Measurement:
    """Measure one call before sending it; see the module docstring for exactly how.

    ``model`` is a catalogue name (or a ``Model``); ``catalogue`` carries toll.yaml
    overrides. ``tools`` is any tools array ``normalize_tools`` accepts, or ``Tool``s.
    ``exact=True`` asks Anthropic's count_tokens (``client``, or one built from the
    environment); for other providers the report stays an estimate and says why.
    """
    resolved = _resolve_model(model, catalogue)
    model_id = model if isinstance(model, str) else resolved.name
    tuning = tuning or Tuning()
    call = _prepare(system, messages, tools, skills, tool_schemas)
    if not exact:
        return _measure_estimate(call, resolved, model_id, tuning, tool_schemas)
    if resolved.provider != "anthropic":
        reason = (
            f"exact counts come from Anthropic's count_tokens; {resolved.provider} models "
            "have no counting endpoint here, so these are estimates"
        )
        return _measure_estimate(call, resolved, model_id, tuning, tool_schemas, reason)
    from pytest_toll.calls.anthropic import CountRefused

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
) -> Measurement:
    from pytest_toll.core.models import Scale

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
        from pytest_toll.core.tokens import O200K, TOKENIZER_NAME

        method, tokenizer = O200K, TOKENIZER_NAME
        scale = resolved.scale
    if fallback:
        notes.insert(0, fallback)
    notes.extend(_boundary_notes(parts))
    return Measurement(
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
    )


def _counter(tuning: Tuning) -> Counter:
    from pytest_toll.core.tokens import EstimateCounter, O200kCounter

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
) -> Measurement:
    from pytest_toll.calls.anthropic import CountTokensClient
    from pytest_toll.core.models import Scale

    owned = client is None
    counter = client or CountTokensClient.from_environment()
    try:
        stages: list[int] = []
        for body in _stage_bodies(call, model_id):
            stages.append(counter.count(body) if body is not None else stages[-1])
    finally:
        if owned:
            counter.close()
    parts, total = _parts_from_stages(stages, NATIVE, model, None)
    return Measurement(
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
        notes=tuple(_boundary_notes(parts)),
    )


# --- files and ledger entries -----------------------------------------------------------


def load_request_file(path: str | Path) -> tuple[object, Any, object]:
    """Messages from a JSON file: a messages array, or a request body whose ``messages``,
    ``system`` and ``tools`` are all used. Returns ``(messages, system, tools)``."""
    from pytest_toll.core.textio import read_text

    name = str(path)
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise CouldNotJudge(
            f"{name}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}"
        ) from None
    if isinstance(data, dict):
        if "messages" not in data:
            raise CouldNotJudge(f"{name}: an object without a 'messages' array")
        system = data.get("system")
        if system is not None and not isinstance(system, str | list):
            raise CouldNotJudge(f"{name}: 'system' must be a string or a list of text blocks")
        return data["messages"], system, data.get("tools")
    return data, None, None


ENTRY_KEYS = ("model", "system", "messages", "tools", "skills", "tool_schemas")


def measure_entry(
    entry: Mapping[str, Any],
    *,
    root: str | Path,
    where: str,
    default_model: str | None = None,
    catalogue: Catalogue | None = None,
) -> Measurement:
    """Measure a call described in toll.yaml (``calls: {name: {...}}``), files under ``root``.

    Keys (other keys, such as ``budget`` and ``pin``, belong to the ledger and are ignored)::

        model: claude-sonnet-5        # or the ledger's top-level model (default_model)
        system: prompts/system.md     # a text file
        messages: fixtures/chat.json  # a messages array or a whole request body
        tools: tools.json             # a tools array (MCP, OpenAI or Anthropic shape)
        skills: skills/               # a skill folder or a folder of skills
        tool_schemas: compact         # or full (the default)

    Always an o200k estimate (ledgers grade deterministic counts). A bad key is a
    ``UsageError`` naming ``where`` and the key; an unreadable file is ``CouldNotJudge``
    naming the file.
    """
    from pytest_toll.core.textio import read_text

    base = Path(root)

    def path(key: str) -> Path | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise UsageError(f"{where}.{key}: must be a path (a string), not {value!r}")
        return base / value

    model = entry.get("model", default_model)
    if not isinstance(model, str) or not model:
        raise UsageError(f"{where}.model: name the model (or set the ledger's top-level model)")
    tool_schemas = entry.get("tool_schemas", FULL)
    if tool_schemas not in (FULL, COMPACT):
        raise UsageError(f"{where}.tool_schemas: must be full or compact, not {tool_schemas!r}")
    messages: object = None
    system: Any = None
    tools: object = None
    messages_path = path("messages")
    if messages_path is not None:
        messages, system, tools = load_request_file(messages_path)
    system_path = path("system")
    if system_path is not None:
        system = read_text(system_path)
    tools_path = path("tools")
    if tools_path is not None:
        from pytest_toll.definitions.tools import load_tools_file

        tools = load_tools_file(tools_path)[0]
    skills_path = path("skills")
    try:
        return measure(
            model,
            system,
            messages,
            tools,
            skills=str(skills_path) if skills_path is not None else None,
            tool_schemas=tool_schemas,
            catalogue=catalogue,
        )
    except UsageError as error:
        raise UsageError(f"{where}.model: {error}") from None
    except CouldNotJudge as error:
        text = str(error)
        if messages_path is not None and text.startswith(("messages", "system", "tools")):
            raise CouldNotJudge(f"{messages_path}: {text}") from None
        raise


# --- diff -------------------------------------------------------------------------------


@dataclass(frozen=True)
class PartDelta:
    before: int
    after: int
    cost_usd: float | None = None

    @property
    def delta(self) -> int:
        return self.after - self.before

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"before": self.before, "after": self.after, "delta": self.delta}
        if self.cost_usd is not None:
            data["cost_usd"] = round(self.cost_usd, _USD_DIGITS)
        return data


@dataclass(frozen=True)
class CallDiff:
    """Signed per-part deltas between two call reports (USD only when both are priced)."""

    before_model: str
    after_model: str
    parts: Mapping[str, PartDelta]
    total: PartDelta
    notes: tuple[str, ...] = ()

    before_name: str = "before"
    after_name: str = "after"

    @property
    def increase_percent(self) -> float | None:
        """Signed percent change of the total tokens; None when the before total was zero."""
        if self.total.before == 0:
            return None if self.total.after else 0.0
        return 100.0 * self.total.delta / self.total.before

    def render(self) -> str:
        """A table of signed deltas, for ``toll diff``."""
        rows = [["part", self.before_name, self.after_name, "delta", "USD"]]
        for name, delta in [*self.parts.items(), ("total", self.total)]:
            usd = "" if delta.cost_usd is None else f"{delta.cost_usd:+.6f}"
            rows.append([name, f"{delta.before:,}", f"{delta.after:,}", f"{delta.delta:+,}", usd])
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        lines = [f"call {self.before_model} → {self.after_model}"]
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [
                cell.rjust(width) for cell, width in zip(row[1:], widths[1:])
            ]
            lines.append("  ".join(cells).rstrip())
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "call-diff",
            "before_model": self.before_model,
            "after_model": self.after_model,
            "parts": {name: delta.as_dict() for name, delta in self.parts.items()},
            "total": self.total.as_dict(),
            "notes": list(self.notes),
        }


def _report_field(report: Mapping[str, Any], where: str, *path: str) -> Any:
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            raise CouldNotJudge(f"{where}: not a call report (no {'.'.join(path)})")
        value = value[key]
    return value


def _delta(before: Mapping[str, Any], after: Mapping[str, Any], where: str) -> PartDelta:
    tokens = []
    for side, label in ((before, "before"), (after, "after")):
        value = side.get("tokens")
        if isinstance(value, bool) or not isinstance(value, int):
            raise CouldNotJudge(f"{where} ({label}): tokens must be a whole number")
        tokens.append(value)
    cost = None
    if isinstance(before.get("cost_usd"), int | float) and isinstance(
        after.get("cost_usd"), int | float
    ):
        cost = after["cost_usd"] - before["cost_usd"]
    return PartDelta(tokens[0], tokens[1], cost)


def diff(
    before: Measurement | Mapping[str, Any], after: Measurement | Mapping[str, Any]
) -> CallDiff:
    """Signed deltas per part and total, from measurements or their ``as_dict()`` reports."""
    reports = [r.as_dict() if isinstance(r, Measurement) else r for r in (before, after)]
    for report, label in zip(reports, ("before", "after")):
        if _report_field(report, label, "kind") != "call":
            raise CouldNotJudge(f"{label}: not a call report (kind {report.get('kind')!r})")
    old, new = reports
    parts = {
        name: _delta(
            _report_field(old, "before", "parts", name),
            _report_field(new, "after", "parts", name),
            f"parts.{name}",
        )
        for name in PARTS
    }
    total = _delta(
        _report_field(old, "before", "total"), _report_field(new, "after", "total"), "total"
    )
    notes = []
    if old.get("method") != new.get("method"):
        notes.append(
            f"counted differently ({old.get('method')} before, {new.get('method')} after): "
            "the deltas mix methods"
        )
    if old.get("tool_schemas") != new.get("tool_schemas"):
        notes.append(
            f"tool schemas measured {old.get('tool_schemas')} before, "
            f"{new.get('tool_schemas')} after"
        )
    if old.get("model") != new.get("model"):
        notes.append(f"different models: {old.get('model')} before, {new.get('model')} after")
    return CallDiff(str(old.get("model")), str(new.get("model")), parts, total, tuple(notes))


def diff_reports(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    before_name: str = "before",
    after_name: str = "after",
) -> CallDiff:
    """``diff`` for two JSON call reports, naming them (the ``toll diff`` entry point)."""
    return replace(diff(before, after), before_name=before_name, after_name=after_name)


# --- deferred tools ---------------------------------------------------------------------

DEFAULT_META_TOOLS: tuple[dict[str, Any], ...] = (
    {
        "name": "search_tools",
        "description": (
            "Find tools that are available but not loaded yet. Use it when no loaded tool "
            "fits the task; returns matching tool names with a one-line description each."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "What the task needs."}},
            "required": ["query"],
        },
    },
    {
        "name": "load_tools",
        "description": (
            "Load tools by name so they can be called. Use it after search_tools; returns "
            "the loaded tools' definitions."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "names": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Tool names returned by search_tools.",
                }
            },
            "required": ["names"],
        },
    },
)


@dataclass(frozen=True)
class DeferredReport:
    """The fixed per-request cost of advertising every tool vs. a core set + meta-tools.

    ``deferred`` counts the core tools, the meta-tools and (when listed) the line naming
    the deferred tools; ``saved`` is ``eager - deferred`` per request, before any tool is
    loaded. Loading a deferred tool later costs its definition again, in the messages.
    """

    model: str
    eager: Part
    deferred: Part
    core: tuple[str, ...]
    deferred_names: tuple[str, ...]
    meta: tuple[str, ...]
    method: str

    @property
    def saved(self) -> int:
        return self.eager.tokens - self.deferred.tokens

    @property
    def saved_usd(self) -> float | None:
        if self.eager.cost_usd is None or self.deferred.cost_usd is None:
            return None
        return self.eager.cost_usd - self.deferred.cost_usd

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "deferred-tools",
            "model": self.model,
            "method": self.method,
            "eager": self.eager.as_dict(),
            "deferred": self.deferred.as_dict(),
            "saved": {"tokens": self.saved},
            "core": list(self.core),
            "deferred_tools": list(self.deferred_names),
            "meta_tools": list(self.meta),
        }
        if self.eager.scaled is not None and self.deferred.scaled is not None:
            data["saved"]["scaled"] = self.eager.scaled - self.deferred.scaled
        if self.saved_usd is not None:
            data["saved"]["cost_usd"] = round(self.saved_usd, _USD_DIGITS)
        return data


def deferred_tools(
    model: str | Model,
    tools: object,
    core: Iterable[str],
    meta_tools: object = DEFAULT_META_TOOLS,
    *,
    list_deferred: bool = True,
    tool_schemas: str = FULL,
    catalogue: Catalogue | None = None,
) -> DeferredReport:
    """Compare advertising every tool (eager) with advertising ``core`` plus ``meta_tools``.

    With ``list_deferred`` the deferred side also pays for one line naming the deferred
    tools, as hosts that load tools lazily tell the model what it can search for.
    """
    from pytest_toll.core.tokens import O200K, O200kCounter, scaled_method

    resolved = _resolve_model(model, catalogue)
    everything = _tools(tools)
    if tool_schemas == COMPACT:
        everything = compact_tools(everything)
    wanted = list(dict.fromkeys(core))
    known = {tool.name for tool in everything}
    missing = [name for name in wanted if name not in known]
    if missing:
        raise CouldNotJudge(f"core tools not in the catalogue: {', '.join(missing)}")
    meta = _tools(meta_tools)
    kept = [tool for tool in everything if tool.name in wanted]
    deferred_names = tuple(tool.name for tool in everything if tool.name not in wanted)
    counter = O200kCounter()
    eager_text = serialize_tools(everything, resolved.provider)
    deferred_text = serialize_tools([*kept, *meta], resolved.provider)
    if list_deferred and deferred_names:
        deferred_text = _join(
            deferred_text, "Deferred tools (find with a tool search): " + ", ".join(deferred_names)
        )
    factor = resolved.scale.factor if resolved.scale.factor != 1.0 else None

    def part(text: str) -> Part:
        tokens = counter.count(text)
        scaled = math.ceil(tokens * factor) if factor else None
        billed = tokens if scaled is None else scaled
        return Part(tokens, ESTIMATE, resolved.cost_usd(billed), scaled)

    return DeferredReport(
        model=model if isinstance(model, str) else resolved.name,
        eager=part(eager_text),
        deferred=part(deferred_text),
        core=tuple(tool.name for tool in kept),
        deferred_names=deferred_names,
        meta=tuple(tool.name for tool in meta),
        method=scaled_method(factor) if factor else O200K,
    )
