"""``toll fix``: concrete edits to a tool list, each with its *measured* saving.

Every suggestion is an edited copy of the tool list: its saving is the claude-serialization
o200k total of the original minus that of the copy (the serializer and counter ``weigh``
uses), never an estimate. ``safe`` edits keep each input schema's JSON Schema meaning (the
catalogue and its reasons are in ``fix_edits``); ``advice`` edits change meaning or wording
and need a human.

``after`` is the weighed total of the list with every safe rewrite applied in catalogue order
(each kept only when it shortens its tool's claude line), because edits interact: dropping
titles can make two ``$defs`` entries identical. So ``after`` is exactly what ``toll weigh``
measures on the file ``--write`` writes, and is not ``before`` minus the sum of the savings.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from difflib import SequenceMatcher
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_TIMEOUT
from pytest_toll.core.textio import write_atomically
from pytest_toll.core.tokens import O200K, TOKENIZER_NAME, encoding
from pytest_toll.definitions.fix_edits import (
    SAFE_REWRITES,
    Schema,
    dotted,
    edited,
    listed,
    rebuild,
    walk,
)
from pytest_toll.definitions.serialize import claude_line
from pytest_toll.definitions.source import list_server, require_one_source
from pytest_toll.definitions.tools import (
    EMPTY_SCHEMA,
    SHAPE_MCP_RESULT,
    Tool,
    load_tools_file,
    normalize_tools,
)
from pytest_toll.definitions.weigh import weigh

#: An enum longer than this is worth a human's look (E124 fires at 50).
LARGE_ENUM = 20
#: A description shorter than this many tokens is not worth cutting down.
LONG_DESCRIPTION_TOKENS = 40
#: Two tools whose names and descriptions are both at least this similar look like one.
NEAR_DUPLICATE_RATIO = 0.8


@dataclass(frozen=True)
class Suggestion:
    """One edit: ``saving`` is measured claude o200k tokens (positive: the list shrinks)."""

    id: str
    tool: str
    what: str
    saving: int
    safe: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "what": self.what,
            "saving": self.saving,
            "safe": self.safe,
        }


@dataclass(frozen=True)
class FixReport:
    target: str
    source_shape: str
    tokenizer: str
    method: str
    before: int
    after: int
    suggestions: tuple[Suggestion, ...]
    #: The tools with every safe edit applied, each ``raw`` element in the source's shape.
    fixed: tuple[Tool, ...]

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "fix",
            "target": self.target,
            "tokenizer": self.tokenizer,
            "method": self.method,
            "before": self.before,
            "after": self.after,
            "suggestions": [suggestion.as_dict() for suggestion in self.suggestions],
        }


# --- measuring ------------------------------------------------------------------------------


def _count(text: str) -> int:

    return len(encoding().encode_ordinary(text))


def _with(tools: Sequence[Tool], index: int, tool: Tool | None) -> list[Tool]:
    copy = list(tools)
    if tool is None:
        del copy[index]
    else:
        copy[index] = tool
    return copy


# --- advice ----------------------------------------------------------------------------------

_PARAM_SECTION = re.compile(r"^\s*(args|arguments|parameters|params|inputs?)\s*:\s*$", re.I)
_NEXT_SECTION = re.compile(r"^[A-Za-z][\w ]*:\s*$")
_TYPE_WORDS = re.compile(
    r"\b(string|str|integer|int|number|float|boolean|bool|array|list|object|dict|"
    r"required|optional|defaults? to)\b",
    re.I,
)


def _without_parameter_text(description: str, names: Sequence[str]) -> str | None:
    """The description without what restates the parameters: an ``Args:`` block, else the
    sentences that name a parameter and its type. None when it restates nothing."""
    lines = description.split("\n")
    kept: list[str] = []
    skipping = False
    for line in lines:
        if _PARAM_SECTION.match(line):
            skipping = True
            continue
        # The block runs on through blank, indented, bulleted and ``name: …`` lines, up to
        # the next section (``Returns:``) or paragraph.
        param_line = not line.strip() or line[:1] in " \t-*" or re.match(r"^\w+\s*[(:]", line)
        if skipping and param_line and not _NEXT_SECTION.match(line):
            continue
        skipping = False
        kept.append(line)
    if len(kept) < len(lines):
        return "\n".join(kept).strip()
    pattern = re.compile(r"\b(" + "|".join(re.escape(name) for name in names) + r")\b")
    sentences = re.split(r"(?<=[.!?])\s+", description)
    restating = [s for s in sentences if pattern.search(s) and _TYPE_WORDS.search(s)]
    if not names or not restating:
        return None
    return " ".join(s for s in sentences if s not in restating).strip()


def _long_description(tool: Tool, shape: str) -> tuple[str, Tool] | None:
    names = [str(name) for name in (tool.parameters.get("properties") or {})]
    if tool.description is None or not names or _count(tool.description) < LONG_DESCRIPTION_TOKENS:
        return None
    shorter = _without_parameter_text(tool.description, names)
    if shorter is None:
        return None
    description = tool.description
    named = [name for name in names if re.search(rf"\b{re.escape(name)}\b", description)] or names
    what = (
        "the description restates parameters the schema already carries "
        f"({listed(named)}): cut that text; move anything missing into the parameter descriptions"
    )
    return what, edited(tool, shape, description=shorter)


def _large_enums(tool: Tool, shape: str) -> tuple[str, Tool] | None:
    large = [
        (path, len(node["enum"]))
        for path, node in walk(tool.parameters)
        if isinstance(node.get("enum"), list) and len(node["enum"]) > LARGE_ENUM
    ]
    if not large:
        return None
    paths = {path for path, _ in large}

    def change(node: Schema, path: tuple[str | int, ...]) -> Schema:
        return {k: v for k, v in node.items() if k != "enum"} if path in paths else node

    schema = rebuild(tool.parameters, change)
    shown = listed([f"{dotted(path)} ({size} values)" for path, size in large])
    what = (
        f"enum(s) past {LARGE_ENUM} values: {shown}; accept free text checked by the server, "
        "or offer a lookup tool"
    )
    return what, edited(tool, shape, schema=schema)


# Name words that say a tool only reads, or that it changes something.
_READ_WORDS = frozenset(
    "get read list search find fetch query show view describe lookup look count check "
    "inspect stat peek browse download export".split()
)
_WRITE_WORDS = frozenset(
    "write create update delete remove set put post add insert edit modify patch upload send "
    "move rename save append replace drop destroy purge erase truncate reset overwrite revoke "
    "kill terminate publish deploy apply commit push merge run execute".split()
)


def access(tool: Tool) -> str | None:
    """``"reads"``, ``"writes"`` or None (cannot tell): from the tool's annotations first
    (``readOnlyHint``, ``destructiveHint``), else from the verbs in its name."""
    annotations = tool.annotations or {}
    if annotations.get("readOnlyHint") is True:
        return "reads"
    if annotations.get("readOnlyHint") is False or annotations.get("destructiveHint") is True:
        return "writes"
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", tool.name)
    words = {word.lower() for word in re.split(r"[^A-Za-z0-9]+", spaced) if word}
    writes, reads = bool(words & _WRITE_WORDS), bool(words & _READ_WORDS)
    if writes != reads:
        return "writes" if writes else "reads"
    return None


def _near_duplicates(tools: Sequence[Tool]) -> list[tuple[int, int, float, float]]:
    """(i, j, name likeness, description likeness): for each tool j, the earlier tool i it is
    most like, when both likenesses reach ``NEAR_DUPLICATE_RATIO``.

    A tool that writes and one that only reads are never a pair, however alike their text
    (``read_file`` / ``write_file``): merging them would give a read-only caller a tool that
    can change things, and lose the hint a client asks before a risky call by.
    """
    pairs = []
    accesses = [access(tool) for tool in tools]
    for j, second in enumerate(tools):
        best: tuple[float, int, float, float] | None = None
        for i in range(j):
            first = tools[i]
            if None not in (accesses[i], accesses[j]) and accesses[i] != accesses[j]:
                continue
            names = SequenceMatcher(None, first.name, second.name).ratio()
            if names < NEAR_DUPLICATE_RATIO:
                continue
            text = SequenceMatcher(None, first.description or "", second.description or "")
            if text.real_quick_ratio() < NEAR_DUPLICATE_RATIO:
                continue
            if text.quick_ratio() < NEAR_DUPLICATE_RATIO:
                continue
            described = text.ratio()
            if described >= NEAR_DUPLICATE_RATIO and (best is None or names + described > best[0]):
                best = (names + described, i, names, described)
        if best is not None:
            pairs.append((best[1], j, best[2], best[3]))
    return pairs


Advise = Callable[[Tool, str], "tuple[str, Tool] | None"]
ADVICE: tuple[tuple[str, Advise], ...] = (
    ("long-description", _long_description),
    ("large-enum", _large_enums),
)

# --- planning ---------------------------------------------------------------------------------


def apply_safe_rewrites(tool: Tool, shape: str) -> Tool:
    """``tool`` with every safe rewrite applied in catalogue order, each kept only when it
    shortens the tool's claude line."""
    tokens = _count(claude_line(tool))
    for _, rewrite in SAFE_REWRITES:
        result = rewrite(tool, shape)
        if result is None:
            continue
        shorter = _count(claude_line(result.tool))
        if shorter < tokens:
            tool, tokens = result.tool, shorter
    return tool


@dataclass(frozen=True)
class Candidate:
    """One edit before it is measured: the tool at ``index`` replaced (or, when
    ``replacement`` is None, removed)."""

    id: str
    tool: str
    what: str
    safe: bool
    index: int
    replacement: Tool | None

    def applied(self, tools: Sequence[Tool]) -> list[Tool]:
        return _with(tools, self.index, self.replacement)


def candidates(tools: Sequence[Tool], shape: str) -> list[Candidate]:
    """Every edit the catalogue finds, safe rewrites and advice, unmeasured."""
    found: list[Candidate] = []
    for index, tool in enumerate(tools):
        for edit, rewrite in SAFE_REWRITES:
            result = rewrite(tool, shape)
            if result is not None:
                found.append(
                    Candidate(
                        f"{edit}:{tool.name}", tool.name, result.what, True, index, result.tool
                    )
                )
        for edit, advise in ADVICE:
            advice = advise(tool, shape)
            if advice is not None:
                what, changed = advice
                found.append(
                    Candidate(f"{edit}:{tool.name}", tool.name, what, False, index, changed)
                )
    for i, j, names, described in _near_duplicates(tools):
        first, second = tools[i].name, tools[j].name
        what = (
            f"{second} looks like {first} (names {names:.0%}, descriptions {described:.0%} "
            "alike): merge them into one tool"
        )
        found.append(Candidate(f"near-duplicate:{first}+{second}", second, what, False, j, None))
    return found


def _segment_tokens(tool: Tool) -> int:
    r"""The tokens one tool adds to the claude total: its ``<function>…</function>`` and the
    line break after it.

    The claude text is ``<functions>\n`` + these segments + ``</functions>`` (the last
    segment's break is the one before ``</functions>``). o200k splits text into pieces by a
    pattern before merging bytes, and ``>\n`` followed by ``<`` always ends a piece there, so
    no piece crosses a segment's edge and the total is the sum over pieces: replacing or
    removing one tool changes the total by exactly its segment's difference. (tests check this
    against whole weighs.) It keeps a plan linear in the list's size instead of quadratic.
    """
    return _count(f"<function>{claude_line(tool)}</function>\n")


def plan_fixes(tools: Sequence[Tool], *, shape: str, target: str = "") -> FixReport:
    """Every edit worth making to ``tools``, each measured on its own, sorted by saving."""

    before = weigh(tools, target=target, source_shape=shape, breakdown_top=0).claude
    segments = [_segment_tokens(tool) for tool in tools]
    suggestions: list[Suggestion] = []
    for edit in candidates(tools, shape):
        left = 0 if edit.replacement is None else _segment_tokens(edit.replacement)
        saving = segments[edit.index] - left
        if saving > 0:
            suggestions.append(Suggestion(edit.id, edit.tool, edit.what, saving, edit.safe))
    suggestions.sort(key=lambda s: (-s.saving, s.id))
    fixed = tuple(apply_safe_rewrites(tool, shape) for tool in tools)
    after = weigh(fixed, target=target, source_shape=shape, breakdown_top=0).claude
    return FixReport(
        target=target,
        source_shape=shape,
        tokenizer=TOKENIZER_NAME,
        method=O200K,
        before=before,
        after=after,
        suggestions=tuple(suggestions),
        fixed=fixed,
    )


# --- source and output ----------------------------------------------------------------------


def read_source(
    *,
    command: list[str] | None = None,
    url: str | None = None,
    tools_file: Path | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> tuple[list[Tool], str, str]:
    """The tools of exactly one source, their shape and a name for it (as ``weigh_source``
    reads them, without weighing)."""
    require_one_source(command, url, tools_file)
    if tools_file is not None:
        tools, shape = load_tools_file(tools_file)
        return tools, shape, str(tools_file)
    listing = list_server(command, url, env=env, cwd=cwd, headers=headers, timeout=timeout)
    tools, _ = normalize_tools(list(listing.tools), source=f"{listing.target}: tools/list")
    return tools, SHAPE_MCP_RESULT, listing.target


def fix_source(**source: Any) -> FixReport:
    """Read one source (``read_source``'s keywords) and plan its fixes."""
    tools, shape, target = read_source(**source)
    if not tools:
        raise CouldNotJudge(f"{target}: lists no tools, so there is nothing to fix")
    return plan_fixes(tools, shape=shape, target=target)


def write_fixed(report: FixReport, path: Path) -> None:
    """The tools with every safe edit, as JSON in the source's shape (a ``tools/list``
    result keeps its ``{"tools": […]}`` wrapper)."""
    elements = [dict(tool.raw) if tool.raw else _bare(tool) for tool in report.fixed]
    data: object = {"tools": elements} if report.source_shape == SHAPE_MCP_RESULT else elements
    try:
        # Whole or not at all: ``--write`` may name its own input, and a full disk must
        # leave that input as it was, never cut.
        write_atomically(path, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    except OSError as error:
        raise CouldNotJudge(f"{path}: cannot write: {error.strerror or error}") from None


def _bare(tool: Tool) -> dict[str, Any]:
    element: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        element["description"] = tool.description
    element["inputSchema"] = dict(tool.input_schema or EMPTY_SCHEMA)
    return element
