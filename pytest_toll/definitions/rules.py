"""Quality rules for tool definitions (E112, E116, E121–E128, E130).

Each rule has a default severity and default thresholds, overridable through
``findings.RuleOverrides`` (``rules:`` and ``limits:`` in toll.yaml, CLI flags). Every finding
names the rule, the tool (None for a server-wide finding) and a one-line fix hint.

Thresholds, by the names ``RuleOverrides.threshold`` looks up:

=======================  =======  ==================================================
name                     default  rule
=======================  =======  ==================================================
description_min_chars    20       E121 a description shorter than this (warn)
description_good_min     40       E122 a good description is at least this long…
description_good_max     600      E122 …and at most this long
params_min               5        E124 only tools with more parameters than this…
undocumented_share       0.3      E124 …and more than this share undocumented
enum_max                 50       E124 an enum with more values than this
tool_count               30       E125 more tools than this (warn)
tool_count_error         60       E125 more tools than this (error)
name_max_chars           64       E126 a name longer than this (error)
tool_tokens              800      E127 one tool's bare claude line above this
total_tokens_warn        10000    E128 the claude total above this (warn)
total_tokens             25000    E128 the claude total above this (error)
=======================  =======  ==================================================
"""

from __future__ import annotations

import re
from collections import Counter as Tally
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from pytest_toll.core.findings import ERROR, INFO, WARN, Finding, RuleOverrides
from pytest_toll.core.injection import TOOL_PATTERNS, InjectionHit, find_injections
from pytest_toll.definitions.tools import Tool
from pytest_toll.definitions.weigh import ToolsReport

INSTRUCTIONS_SUBJECT = "(instructions)"

#: The rules this module can report (toll.yaml ``rules:`` accepts exactly these and the others).
RULE_IDS = ("E112", "E116", "E121", "E122", "E123", "E124", "E125", "E126", "E127", "E128", "E130")

DEFAULT_THRESHOLDS: dict[str, float] = {
    "description_min_chars": 20,
    "description_good_min": 40,
    "description_good_max": 600,
    "params_min": 5,
    "undocumented_share": 0.3,
    "enum_max": 50,
    "tool_count": 30,
    "tool_count_error": 60,
    "name_max_chars": 64,
    "tool_tokens": 800,
    "total_tokens_warn": 10_000,
    "total_tokens": 25_000,
}

# Descriptions that say nothing: what generators and hurried authors leave behind.
_PLACEHOLDERS = {
    "",
    "todo",
    "tbd",
    "fixme",
    "description",
    "tool description",
    "no description",
    "none",
    "n/a",
    "na",
    "-",
    "...",
    "…",
    "placeholder",
    "lorem ipsum",
}
_WHEN_TO_USE = re.compile(
    r"\b(use (this|it|when|to|for|after|before|if|only)|when (you|the user|a user|asked|needed)"
    r"|call (this|it|when)|useful (for|when)|prefer (this|it)|do not use|don't use|instead of)\b",
    re.IGNORECASE,
)
_MENTIONS_RESULT = re.compile(
    r"\b(returns?|returning|result|results|outputs?|responds? with|yields?|gives back|"
    r"produces?|lists?|reports?)\b",
    re.IGNORECASE,
)
_DESTRUCTIVE_WORDS = {
    "delete",
    "remove",
    "rm",
    "drop",
    "destroy",
    "purge",
    "erase",
    "truncate",
    "wipe",
    "kill",
    "terminate",
    "reset",
    "overwrite",
    "revoke",
    "uninstall",
    "unlink",
    "clear",
    "force",
    "shutdown",
    "deprovision",
}
_STYLES = {
    "snake_case": re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)+$"),
    "kebab-case": re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)+$"),
    "camelCase": re.compile(r"^[a-z][a-z0-9]*([A-Z][a-z0-9]*)+$"),
    "PascalCase": re.compile(r"^([A-Z][a-z0-9]+){2,}$"),
    "dot.case": re.compile(r"^[a-z][a-z0-9]*(\.[a-z0-9]+)+$"),
    "SCREAMING_CASE": re.compile(r"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)+$"),
}
_NAME_CHARACTERS = re.compile(r"^[A-Za-z0-9_-]+$")


def _threshold(settings: RuleOverrides, name: str) -> float:
    return settings.threshold(name, DEFAULT_THRESHOLDS[name])


def _words(name: str) -> list[str]:
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name)
    return [word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word]


def naming_style(name: str) -> str | None:
    """The naming style of a multi-word name, or None for a single word (fits any style)."""
    for style, pattern in _STYLES.items():
        if pattern.match(name):
            return style
    return None


def _properties(tool: Tool) -> Mapping[str, Any]:
    properties = tool.parameters.get("properties")
    return properties if isinstance(properties, dict) else {}


def _walk(value: object) -> Iterator[Mapping[str, Any]]:
    """Every object inside a JSON value, depth first."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, dict):
            yield current
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)


def _is_placeholder(tool: Tool) -> bool:
    text = (tool.description or "").strip().strip(".").strip().lower()
    return text in _PLACEHOLDERS or text == tool.name.lower()


def _documents_params(tool: Tool) -> bool:
    properties = _properties(tool)
    if not properties:
        return True
    description = (tool.description or "").lower()
    for name, schema in properties.items():
        has_own = isinstance(schema, dict) and isinstance(schema.get("description"), str)
        mentioned = re.search(rf"\b{re.escape(str(name).lower())}\b", description)
        if not has_own and not mentioned:
            return False
    return True


def check_tools(
    tools: Sequence[Tool],
    report: ToolsReport,
    *,
    instructions: str | None = None,
    settings: RuleOverrides | None = None,
) -> list[Finding]:
    """The per-tool and whole-list rules (everything but E112 and E116, which need a server)."""
    settings = settings or RuleOverrides()
    found: list[Finding | None] = []
    tokens = {row.name: row.tokens for row in report.tools}
    parts = {str(entry["tool"]): entry for entry in report.breakdown}
    for tool in tools:
        found.extend(_description_rules(tool, settings))
        found.extend(_annotation_rules(tool, settings))
        found.extend(_parameter_rules(tool, settings))
        found.extend(_name_rules(tool, settings))
        found.append(_size_rule(tool, tokens.get(tool.name, 0), parts.get(tool.name), settings))
        found.extend(_injection_rules(tool, settings))
    found.extend(_list_rules(tools, report, settings))
    steering = _first_injection(instructions) if instructions else None
    if steering is not None:
        found.append(
            settings.finding(
                "E130",
                INFO,
                INSTRUCTIONS_SUBJECT,
                f"the server instructions contain {steering.matched!r}",
                "instructions should describe the server, not steer the model",
            )
        )
    return [finding for finding in found if finding is not None]


def _description_rules(tool: Tool, settings: RuleOverrides) -> list[Finding | None]:
    if tool.description is None or _is_placeholder(tool):
        what = "no description" if tool.description is None else "a placeholder description"
        return [
            settings.finding(
                "E121",
                ERROR,
                tool.name,
                f"has {what}",
                "say what the tool does, when to use it and what it returns",
            )
        ]
    text = tool.description.strip()
    minimum = _threshold(settings, "description_min_chars")
    if len(text) < minimum:
        return [
            settings.finding(
                "E121",
                WARN,
                tool.name,
                f"description is {len(text)} chars (< {minimum:g})",
                "say when to use the tool and what it returns",
            )
        ]
    good_min = _threshold(settings, "description_good_min")
    good_max = _threshold(settings, "description_good_max")
    missing = []
    if not good_min <= len(text) <= good_max:
        missing.append(f"length {good_min:g}–{good_max:g} chars (is {len(text)})")
    if not _WHEN_TO_USE.search(text):
        missing.append("when to use it")
    if not _documents_params(tool):
        missing.append("what its parameters mean")
    if not (_MENTIONS_RESULT.search(text) or tool.output_schema is not None):
        missing.append("what it returns")
    if len(missing) >= 3:
        return [
            settings.finding(
                "E122",
                WARN,
                tool.name,
                f"description misses {len(missing)} of 4: {'; '.join(missing)}",
                "add one sentence on when to use it and one on what it returns",
            )
        ]
    return []


def _annotation_rules(tool: Tool, settings: RuleOverrides) -> list[Finding | None]:
    annotations = tool.annotations or {}
    destructive_words = _DESTRUCTIVE_WORDS.intersection(_words(tool.name))
    # A tool declared read-only has said what it does; so has one that sets destructiveHint.
    declared = "destructiveHint" in annotations or annotations.get("readOnlyHint") is True
    if destructive_words and not declared:
        word = sorted(destructive_words)[0]
        return [
            settings.finding(
                "E123",
                WARN,
                tool.name,
                f"looks destructive ({word!r}) but does not declare destructiveHint",
                'add annotations {"destructiveHint": true} (or false, if it is not)',
            )
        ]
    if not annotations:
        return [
            settings.finding(
                "E123",
                INFO,
                tool.name,
                "has no annotations",
                "declare readOnlyHint / destructiveHint so clients can ask before risky calls",
            )
        ]
    return []


def _parameter_rules(tool: Tool, settings: RuleOverrides) -> list[Finding | None]:
    found: list[Finding | None] = []
    properties = _properties(tool)
    undocumented = [
        str(name)
        for name, schema in properties.items()
        if not (isinstance(schema, dict) and str(schema.get("description") or "").strip())
    ]
    share_limit = _threshold(settings, "undocumented_share")
    if len(properties) > _threshold(settings, "params_min") and (
        len(undocumented) / len(properties) > share_limit
    ):
        found.append(
            settings.finding(
                "E124",
                WARN,
                tool.name,
                f"{len(undocumented)} of {len(properties)} parameters have no description "
                f"(> {share_limit:.0%}): {', '.join(undocumented[:5])}"
                + ("…" if len(undocumented) > 5 else ""),
                "give each parameter a short description, or fold rarely used ones",
            )
        )
    enum_max = _threshold(settings, "enum_max")
    largest = max(
        (
            len(node["enum"])
            for node in _walk(tool.parameters)
            if isinstance(node.get("enum"), list)
        ),
        default=0,
    )
    if largest > enum_max:
        found.append(
            settings.finding(
                "E124",
                WARN,
                tool.name,
                f"an enum has {largest} values (> {enum_max:g})",
                "take a free string and validate it server-side, or split the tool",
            )
        )
    return found


def _name_rules(tool: Tool, settings: RuleOverrides) -> list[Finding | None]:
    found: list[Finding | None] = []
    limit = _threshold(settings, "name_max_chars")
    if len(tool.name) > limit:
        found.append(
            settings.finding(
                "E126",
                ERROR,
                tool.name,
                f"name is {len(tool.name)} chars (> {limit:g}); some clients reject it",
                "shorten the name",
            )
        )
    if not _NAME_CHARACTERS.match(tool.name):
        found.append(
            settings.finding(
                "E126",
                WARN,
                tool.name,
                "name has characters outside A-Z a-z 0-9 _ -; some clients reject it",
                "use only letters, digits, _ and -",
            )
        )
    return found


# What to do about the largest part of a heavy tool (the breakdown's part names).
_CUTS = {
    "description": "shorten the description",
    "parameter_descriptions": "shorten the parameter descriptions",
    "enums": "take a free string validated server-side instead of a long enum",
    "titles": "drop the generated title fields",
    "defs": "inline or simplify the nested $defs types",
    "structure": "fewer or flatter parameters",
}


def _size_rule(
    tool: Tool, tokens: int, parts: Mapping[str, Any] | None, settings: RuleOverrides
) -> Finding | None:
    limit = _threshold(settings, "tool_tokens")
    if tokens <= limit:
        return None
    hint = "trim the description and schema"
    if parts is not None:
        largest = str(parts["largest"])
        cut = _CUTS.get(largest, "cut there")
        hint = f"most of it is {largest.replace('_', ' ')} ({parts['parts'][largest]} tok): {cut}"
    return settings.finding(
        "E127", WARN, tool.name, f"costs {tokens:,} tokens (> {limit:,.0f})", hint
    )


def _first_injection(text: str) -> InjectionHit | None:
    """The leftmost phrase of E130's patterns in ``text`` (None when there is none)."""
    hits = find_injections(text, TOOL_PATTERNS)
    return hits[0] if hits else None


def _injection_rules(tool: Tool, settings: RuleOverrides) -> list[Finding | None]:
    texts = [tool.description or ""]
    texts.extend(
        str(node["description"])
        for node in _walk(tool.parameters)
        if isinstance(node.get("description"), str)
    )
    for text in texts:
        steering = _first_injection(text)
        if steering is not None:
            return [
                settings.finding(
                    "E130",
                    INFO,
                    tool.name,
                    f"description contains {steering.matched!r}",
                    "describe the tool; do not instruct the model",
                )
            ]
    return []


def _list_rules(
    tools: Sequence[Tool], report: ToolsReport, settings: RuleOverrides
) -> list[Finding | None]:
    found: list[Finding | None] = []
    count = len(tools)
    warn_at = _threshold(settings, "tool_count")
    error_at = _threshold(settings, "tool_count_error")
    if count > error_at:
        found.append(
            settings.finding(
                "E125",
                ERROR,
                None,
                f"{count} tools (> {error_at:g}); models pick worse from long lists",
                "split the server by job, or merge tools that differ by one argument",
            )
        )
    elif count > warn_at:
        found.append(
            settings.finding(
                "E125",
                WARN,
                None,
                f"{count} tools (> {warn_at:g})",
                "split the server by job, or merge tools that differ by one argument",
            )
        )
    repeated = sorted(name for name, n in Tally(t.name for t in tools).items() if n > 1)
    for name in repeated:
        found.append(
            settings.finding(
                "E126",
                ERROR,
                name,
                "is listed more than once; clients keep one and drop the other",
                "give every tool a unique name",
            )
        )
    styles = Tally(style for style in map(naming_style, (t.name for t in tools)) if style)
    if len(styles) > 1:
        described = ", ".join(f"{style} ×{n}" for style, n in styles.most_common())
        found.append(
            settings.finding(
                "E126",
                WARN,
                None,
                f"mixed naming styles: {described}",
                f"name every tool in {styles.most_common(1)[0][0]}",
            )
        )
    warn_total = _threshold(settings, "total_tokens_warn")
    error_total = _threshold(settings, "total_tokens")
    if report.claude > error_total:
        found.append(
            settings.finding(
                "E128",
                ERROR,
                None,
                f"the tools cost {report.claude:,} tokens (> {error_total:,.0f})",
                "cut the heaviest tools first (see the breakdown)",
            )
        )
    elif report.claude > warn_total:
        found.append(
            settings.finding(
                "E128",
                WARN,
                None,
                f"the tools cost {report.claude:,} tokens (> {warn_total:,.0f})",
                "cut the heaviest tools first (see the breakdown)",
            )
        )
    return found


def order_finding(
    first: Sequence[str], second: Sequence[str], settings: RuleOverrides | None = None
) -> Finding | None:
    """E112: two fresh connections listed the tools in different orders (or sets)."""
    if list(first) == list(second):
        return None
    settings = settings or RuleOverrides()
    if sorted(first) != sorted(second):
        only_first = sorted(set(first) - set(second))
        only_second = sorted(set(second) - set(first))
        detail = f"different tools (only first: {only_first}, only second: {only_second})"
    else:
        position = next(i for i, (a, b) in enumerate(zip(first, second)) if a != b)
        detail = (
            f"the order differs from position {position + 1}: "
            f"{first[position]!r} then {second[position]!r}"
        )
    return settings.finding(
        "E112",
        WARN,
        None,
        f"two fresh connections listed {detail}",
        "return tools in a stable order (sort by name); a changing order defeats prompt caching",
    )


def noise_finding(
    count: int, samples: Sequence[str], settings: RuleOverrides | None = None
) -> Finding | None:
    """E116: a stdio server wrote lines that are not JSON-RPC to its stdout."""
    if count == 0:
        return None
    settings = settings or RuleOverrides()
    first = samples[0] if samples else ""
    plural = "line" if count == 1 else "lines"
    return settings.finding(
        "E116",
        ERROR,
        None,
        f"wrote {count} non-JSON-RPC {plural} to stdout, first: {first!r}",
        "send logs to stderr; stdout carries only JSON-RPC messages",
    )
