"""What a tool's result costs, gated at the source: sample calls in, tokens and R1xx findings out.

A server entry's ``results:`` names tools and the arguments to call them with (one mapping,
or a list of them: several samples). Each sample is one ``tools/call``
(:mod:`pytest_toll.definitions.mcp.calling`); its cost is the o200k tokens of what a host
puts in the context for it: the text of each content block, and any other block (an image,
a resource) as its JSON; a result with no content but ``structuredContent`` as that JSON.
Several samples give the largest (the pinned number) and the 90th percentile (nearest rank).

Rules:

- R101 (warn) a result over ``result_window_share`` of the window (default 0.05);
- R102 (warn) a list result of at least ``result_list_items`` items (default 20) from a tool
  with no way to page (no cursor, page, offset or similar parameter, no next cursor in it);
- R103 (warn) a result that repeats an argument back (a string argument of 24 characters
  or more found verbatim in it): the model already has it, and pays for it again.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import WARN, Finding, RuleOverrides
from pytest_toll.core.parse import load_json
from pytest_toll.core.tokens import O200K, O200kCounter
from pytest_toll.definitions.mcp.calling import Called

#: The rules this module can report (toll.yaml ``rules:`` accepts these and the others).
RULE_IDS = ("R101", "R102", "R103")
#: Every threshold the R rules read, with its default (named as in ``limits:``).
DEFAULT_THRESHOLDS: dict[str, float] = {
    "result_window_share": 0.05,
    "result_list_items": 20,
}
#: An argument shorter than this is too common to call its repetition an echo.
ECHO_MIN_CHARS = 24
#: Parameter names that let a caller ask for the next part of a list.
PAGING_PARAMETERS = frozenset(
    {"cursor", "page", "offset", "after", "before", "skip", "start", "page_token", "pagetoken",
     "next_token", "nexttoken", "continuation", "continuation_token", "starting_after", "marker"}
)  # fmt: skip
#: Keys of a result that hand back a way to the next page.
NEXT_PAGE_KEYS = frozenset({"nextcursor", "next_cursor", "next", "nextpagetoken", "has_more"})


@dataclass(frozen=True)
class ResultSpec:
    """One ``results:`` row: which tool, with which samples of arguments."""

    name: str
    tool: str
    samples: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class ResultCost:
    """One result spec measured: each sample's tokens, the largest, the p90, the findings."""

    name: str
    tool: str
    tokens: tuple[int, ...]
    findings: tuple[Finding, ...] = field(default_factory=tuple)
    method: str = O200K

    @property
    def max(self) -> int:
        return max(self.tokens)

    @property
    def p90(self) -> int:
        ordered = sorted(self.tokens)
        return ordered[max(0, math.ceil(0.9 * len(ordered)) - 1)]

    def as_dict(self) -> dict[str, Any]:
        return {
            "tool": self.tool,
            "samples": list(self.tokens),
            "max": self.max,
            "p90": self.p90,
            "method": self.method,
        }


def parse_specs(section: Any, where: str) -> list[ResultSpec]:
    """The ``results:`` of a server entry; a malformed row is a usage error naming its key."""
    if section is None:
        return []
    if not isinstance(section, Mapping):
        raise UsageError(f"{where}: must be a mapping of names to {{tool, arguments}}")
    specs: list[ResultSpec] = []
    for name, row in section.items():
        here = f"{where}.{name}"
        if not isinstance(row, Mapping):
            raise UsageError(f"{here}: must be a mapping with tool and arguments")
        tool = row.get("tool", name)
        if not isinstance(tool, str) or not tool:
            raise UsageError(f"{here}.tool: must be the name of one tool")
        arguments = row.get("arguments", {})
        samples = arguments if isinstance(arguments, list) else [arguments]
        if not samples or not all(isinstance(sample, Mapping) for sample in samples):
            raise UsageError(
                f"{here}.arguments: must be a mapping of arguments, or a list of them (samples)"
            )
        specs.append(ResultSpec(str(name), tool, tuple(dict(sample) for sample in samples)))
    return specs


def result_text(result: Mapping[str, Any]) -> str:
    """What a host puts in the context for one ``tools/call`` result."""
    content = result.get("content")
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, Mapping) and block.get("type") == "text":
                parts.append(str(block.get("text", "")))
            else:
                parts.append(json.dumps(block, ensure_ascii=False, sort_keys=True))
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return "\n".join(parts)


def _list_items(result: Mapping[str, Any]) -> int:
    """How many items the result lists: a JSON array (structured, or as the text), or the
    longest list value of a structured object; a result handing back a next cursor is 0."""
    values: list[Any] = []
    if result.get("structuredContent") is not None:
        values.append(result["structuredContent"])
    content = result.get("content")
    if isinstance(content, list):
        texts = [b.get("text") for b in content if isinstance(b, Mapping) and "text" in b]
        if len(texts) > 1:
            values.append(texts)
        for text in texts:
            try:
                values.append(load_json(str(text), "a result's text"))
            except CouldNotJudge:
                continue  # text that is not JSON: nothing to page through
    longest = 0
    for value in values:
        if isinstance(value, Mapping):
            if any(str(key).lower() in NEXT_PAGE_KEYS and value[key] for key in value):
                return 0
            lists = [len(inner) for inner in value.values() if isinstance(inner, list)]
            longest = max([longest, *lists])
        elif isinstance(value, list):
            longest = max(longest, len(value))
    return longest


def _pages(tool: Mapping[str, Any]) -> bool:
    schema = tool.get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, Mapping) else None
    if not isinstance(properties, Mapping):
        return False
    return any(str(name).lower() in PAGING_PARAMETERS for name in properties)


def _echoes(arguments: Mapping[str, Any], text: str) -> list[str]:
    return [
        str(name)
        for name, value in arguments.items()
        if isinstance(value, str) and len(value) >= ECHO_MIN_CHARS and value in text
    ]


def measure_result(
    spec: ResultSpec,
    called: Called,
    *,
    window: int,
    settings: RuleOverrides | None = None,
    counter: O200kCounter | None = None,
) -> ResultCost:
    """Each sample's tokens, and the R1xx findings about them (subject: the spec's name)."""
    settings = settings or RuleOverrides()
    counter = counter or O200kCounter()
    share = settings.threshold("result_window_share", DEFAULT_THRESHOLDS["result_window_share"])
    items_limit = settings.threshold("result_list_items", DEFAULT_THRESHOLDS["result_list_items"])
    tokens: list[int] = []
    found: list[Finding | None] = []
    pages = _pages(called.tool)
    for index, sample in enumerate(called.samples, 1):
        text = result_text(sample.result)
        count = counter.count(text)
        tokens.append(count)
        which = f"sample {index}" if len(called.samples) > 1 else "its result"
        if count > share * window:
            found.append(
                settings.finding(
                    "R101", WARN, spec.name,
                    f"{which} is {count:,} tokens, {count / window:.1%} of the {window:,} window "
                    f"(over {share:.0%}: result_window_share)",
                    "return less by default: a summary, the first items, a detail tool",
                )
            )  # fmt: skip
        items = _list_items(sample.result)
        if not pages and items >= items_limit:
            found.append(
                settings.finding(
                    "R102", WARN, spec.name,
                    f"{which} lists {items:,} items and {spec.tool} has no way to page "
                    "(no cursor, page or offset parameter, no next cursor in the result)",
                    "add a cursor or limit/offset parameters and return one page at a time",
                )
            )  # fmt: skip
        echoed = _echoes(sample.arguments, text)
        if echoed:
            again = sum(counter.count(str(sample.arguments[name])) for name in echoed)
            found.append(
                settings.finding(
                    "R103", WARN, spec.name,
                    f"{which} repeats the argument{'s' if len(echoed) > 1 else ''} "
                    f"{', '.join(echoed)} back ({again:,} tok the model already has)",
                    "return what changed (an id, a count), not what was sent",
                )
            )  # fmt: skip
    return ResultCost(
        spec.name,
        spec.tool,
        tuple(tokens),
        tuple(finding for finding in found if finding is not None),
    )


def summary(cost: ResultCost) -> str:
    """One line for a terminal: ``search (search_notes): 812 tok max, 790 p90 over 3
    samples (812, 790, 12)``."""
    if len(cost.tokens) == 1:
        return f"{cost.name} ({cost.tool}): {cost.max:,} tok"
    each = ", ".join(f"{tokens:,}" for tokens in cost.tokens)
    return (
        f"{cost.name} ({cost.tool}): {cost.max:,} tok max, {cost.p90:,} p90 "
        f"over {len(cost.tokens)} samples ({each})"
    )


def samples_of(specs: Sequence[ResultSpec]) -> int:
    return sum(len(spec.samples) for spec in specs)
