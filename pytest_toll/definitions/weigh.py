"""Weighing a tools list: each serialization counted, per tool and in total, and what inside
the heaviest tools costs most.

Per-tool rows count the bare claude line; ``framing`` is the claude total minus the rows, so
rows + framing == claude total exactly, whatever the tokenizer merges across a boundary.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import Finding, worst_first
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.core.tokens import O200K, TOKENIZER_NAME, Counter, O200kCounter, encoding
from pytest_toll.definitions.serialize import (
    claude_json,
    claude_line_around,
    raw_and_openai,
    wrap_claude_lines,
)
from pytest_toll.definitions.tools import Tool

#: How many of the heaviest tools get a breakdown of what inside them costs most.
BREAKDOWN_TOP = 3
_DEFS_KEYS = ("$defs", "definitions")


def _strings_under(value: object, key: str) -> list[str]:
    """Every string value of ``key`` in the objects inside ``value`` (property names named
    ``key`` hold objects, so they are not mistaken for it)."""
    found: list[str] = []
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            text = current.get(key)
            if isinstance(text, str):
                found.append(text)
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return found


def _enums_under(value: object) -> list[list[Any]]:
    found: list[list[Any]] = []
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            enum = current.get("enum")
            if isinstance(enum, list):
                found.append(enum)
            stack.extend(v for k, v in current.items() if k != "enum")
        elif isinstance(current, list):
            stack.extend(current)
    return found


def cost_breakdown(tool: Tool, tokens: int, counter: Counter) -> dict[str, Any]:
    """What inside one tool's claude line costs most, so a maintainer knows where to cut.

    Parts: the description; parameter descriptions; enum value lists; ``title`` fields (often
    generated, e.g. by pydantic, and pure overhead); ``$defs``/``definitions`` (nested types,
    counted whole); and ``structure`` — the rest of the line (names, types, JSON syntax).
    Each part is the o200k count of its own text, so the parts approximate the line's total.
    """
    schema = tool.parameters
    defs = {key: schema[key] for key in _DEFS_KEYS if key in schema}
    rest = {key: value for key, value in schema.items() if key not in defs}
    parts = {
        "description": counter.count(tool.description or ""),
        "parameter_descriptions": sum(
            counter.count_many([claude_json(text) for text in _strings_under(rest, "description")])
        ),
        "enums": sum(counter.count_many([claude_json(enum) for enum in _enums_under(rest)])),
        "titles": sum(
            counter.count_many(
                [f'"title": {claude_json(t)}, ' for t in _strings_under(rest, "title")]
            )
        ),
        "defs": counter.count(claude_json(defs)) if defs else 0,
    }
    parts["structure"] = max(tokens - sum(parts.values()), 0)
    largest = max(parts, key=lambda name: parts[name])
    return {"tool": tool.name, "tokens": tokens, "parts": parts, "largest": largest}


@dataclass(frozen=True)
class ToolRow:
    """One tool's cost: its bare claude line, and the parts inside it."""

    name: str
    tokens: int
    description_tokens: int
    schema_tokens: int
    output_schema_tokens: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "tokens": self.tokens,
            "description_tokens": self.description_tokens,
            "schema_tokens": self.schema_tokens,
            "output_schema_tokens": self.output_schema_tokens,
        }


@dataclass(frozen=True)
class ToolsReport:
    """A weighed tools list. ``tools`` keeps the source order; ``by_cost()`` sorts."""

    target: str
    source_shape: str
    tokenizer: str
    method: str
    tools: tuple[ToolRow, ...]
    framing: int
    instructions: int | None
    raw: int
    claude: int
    openai: int
    window: int
    findings: tuple[Finding, ...] = ()
    breakdown: tuple[Mapping[str, Any], ...] = ()
    #: How a server was read (transport, protocol version, pages); None for a file.
    server: Mapping[str, Any] | None = None
    #: The tools weighed (not in the JSON report): what ``toll weigh --exact`` sends.
    records: tuple[Tool, ...] = field(default=(), repr=False, compare=False)

    @property
    def total(self) -> int:
        """The primary metric: the claude serialization's tokens."""
        return self.claude

    @property
    def window_share(self) -> float:
        """The tools block plus the instructions, as a fraction of the window."""
        return (self.claude + (self.instructions or 0)) / self.window

    def by_cost(self) -> list[ToolRow]:
        return sorted(self.tools, key=lambda row: (-row.tokens, row.name))

    def with_findings(
        self, extra: Sequence[Finding], server: Mapping[str, Any] | None = None
    ) -> ToolsReport:
        return replace(
            self,
            findings=tuple(worst_first([*self.findings, *extra])),
            server=self.server if server is None else server,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "tools",
            "target": self.target,
            "source_shape": self.source_shape,
            "tokenizer": self.tokenizer,
            "method": self.method,
            "tools": [row.as_dict() for row in self.tools],
            "framing": self.framing,
            "instructions": self.instructions,
            "totals": {"raw": self.raw, "claude": self.claude, "openai": self.openai},
            "window": {"size": self.window, "share": round(self.window_share, 6)},
            "findings": [finding.as_dict("tool") for finding in self.findings],
            "breakdown": [dict(entry) for entry in self.breakdown],
            "server": None if self.server is None else dict(self.server),
        }


def _uncached(counter: Counter) -> Callable[[Sequence[str]], list[int]]:
    """``count_many`` without the shared count cache, for o200k.

    weigh counts each of its strings once, so hashing every long one for the cache costs
    more than it saves (about 7% of a weigh, bench/weigh.py); the counts are the same.
    """
    if not isinstance(counter, O200kCounter):
        return counter.count_many
    encode = encoding().encode_ordinary
    return lambda texts: [len(encode(text)) for text in texts]


def weigh(
    tools: Sequence[Tool],
    *,
    instructions: str | None = None,
    target: str = "",
    source_shape: str = "",
    window: int = DEFAULT_WINDOW,
    counter: Counter | None = None,
    findings: Sequence[Finding] = (),
    breakdown_top: int = BREAKDOWN_TOP,
) -> ToolsReport:
    """Count ``tools`` in the three serializations, per tool, and the instructions.

    ``findings`` are added as given (the quality rules are applied by
    ``pytest_toll.definitions.source``, which knows the transport's faults too). The
    ``breakdown_top`` heaviest tools get a ``cost_breakdown``.
    """
    if window <= 0:
        raise CouldNotJudge(f"window must be a positive number of tokens, not {window}")
    counter = counter or O200kCounter()
    try:
        schemas = [claude_json(tool.parameters) for tool in tools]
        lines = [claude_line_around(tool, schema) for tool, schema in zip(tools, schemas)]
        outputs = [
            "" if tool.output_schema is None else claude_json(tool.output_schema) for tool in tools
        ]
        raw_text, openai_text = raw_and_openai(tools)
    except (TypeError, ValueError) as error:
        # Tools built in Python may hold what JSON cannot (a set, a date, mixed key types).
        raise CouldNotJudge(f"{target or 'tools'}: not serializable as JSON: {error}") from None
    descriptions = [tool.description or "" for tool in tools]
    count_many = _uncached(counter)
    line_tokens = count_many(lines)
    description_tokens = count_many(descriptions)
    schema_tokens = count_many(schemas)
    output_tokens = count_many(outputs)
    claude_total, raw_total, openai_total = count_many(
        [wrap_claude_lines(lines), raw_text, openai_text]
    )
    rows = tuple(
        ToolRow(tool.name, line, description, schema, output)
        for tool, line, description, schema, output in zip(
            tools, line_tokens, description_tokens, schema_tokens, output_tokens
        )
    )
    method = counter.method
    heaviest = sorted(range(len(tools)), key=lambda i: (-line_tokens[i], tools[i].name))
    breakdown = tuple(
        cost_breakdown(tools[i], line_tokens[i], counter) for i in heaviest[:breakdown_top]
    )
    return ToolsReport(
        target=target,
        source_shape=source_shape,
        tokenizer=TOKENIZER_NAME if method == O200K else method,
        method=method,
        tools=rows,
        framing=claude_total - sum(line_tokens),
        instructions=None if instructions is None else counter.count(instructions),
        raw=raw_total,
        claude=claude_total,
        openai=openai_total,
        window=window,
        findings=tuple(worst_first(findings)),
        breakdown=breakdown,
        records=tuple(tools),
    )
