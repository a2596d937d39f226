"""Deferred tools: the per-request cost of advertising every tool vs. a core set + meta-tools."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pytest_toll.calls.catalogues import as_tools, serialize_tools
from pytest_toll.calls.compact import compact_tools
from pytest_toll.calls.measuring import COMPACT, FULL, USD_DIGITS, Part, join_texts, resolve_model
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.models import Catalogue, Model
from pytest_toll.core.tokens import ESTIMATE, O200K, O200kCounter, scaled_method

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
            data["saved"]["cost_usd"] = round(self.saved_usd, USD_DIGITS)
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
    resolved = resolve_model(model, catalogue)
    everything = as_tools(tools)
    if tool_schemas == COMPACT:
        everything = compact_tools(everything)
    wanted = list(dict.fromkeys(core))
    known = {tool.name for tool in everything}
    missing = [name for name in wanted if name not in known]
    if missing:
        raise CouldNotJudge(f"core tools not in the catalogue: {', '.join(missing)}")
    meta = as_tools(meta_tools)
    kept = [tool for tool in everything if tool.name in wanted]
    deferred_names = tuple(tool.name for tool in everything if tool.name not in wanted)
    counter = O200kCounter()
    eager_text = serialize_tools(everything, resolved.provider)
    deferred_text = serialize_tools([*kept, *meta], resolved.provider)
    if list_deferred and deferred_names:
        deferred_text = join_texts(
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
