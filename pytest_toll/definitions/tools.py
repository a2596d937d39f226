"""Tool definitions: normalise any tools array, serialize it three ways, and weigh it.

A pure core: no I/O beyond reading a file in ``load_tools_file``, no pytest, no network.
The three serializations (see DESIGN.md, "Definitions"):

- ``raw``: the tools array exactly as the source sent it, minified JSON — a neutral lower
  bound that depends on nothing but the source;
- ``claude`` (the primary, graded metric): one line per tool,
  ``{"description": …, "name": …, "parameters": <inputSchema>}`` (", " and ": " spacing, as
  Claude's prompt shows tools) wrapped in ``<function>…</function>``, the lines joined by
  ``\\n`` inside ``<functions>\\n…\\n</functions>``;
- ``openai``: ``[{"type":"function","function":{"name","description","parameters"}}]``.

Per-tool rows count the bare claude line; ``framing`` is the claude total minus the rows, so
rows + framing == claude total exactly, whatever the tokenizer merges across a boundary.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import Finding, worst_first
from pytest_toll.core.limits import DEFAULT_WINDOW

if TYPE_CHECKING:
    from pytest_toll.core.tokens import Counter

#: What a tool without an input schema is sent as (an object that takes no arguments).
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}

SHAPE_MCP = "mcp"
SHAPE_OPENAI = "openai"
SHAPE_ANTHROPIC = "anthropic"
SHAPE_MCP_RESULT = "mcp tools/list result"


@dataclass(frozen=True)
class Tool:
    """One tool definition, normalised from whichever shape it came in.

    ``raw`` keeps the element exactly as the source sent it (for the ``raw`` serialization);
    ``description`` is None when the source had none (distinct from an empty string).
    """

    name: str
    description: str | None = None
    input_schema: Mapping[str, Any] | None = None
    output_schema: Mapping[str, Any] | None = None
    annotations: Mapping[str, Any] | None = None
    title: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)

    @property
    def parameters(self) -> Mapping[str, Any]:
        """The input schema as a model sees it: a missing one is an empty object schema."""
        return EMPTY_SCHEMA if self.input_schema is None else self.input_schema


# --- normalising ------------------------------------------------------------------------


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def _optional_object(element: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    value = element.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CouldNotJudge(f"{where}.{key}: must be an object, not {_kind(value)}")
    return value


def _optional_text(element: Mapping[str, Any], key: str, where: str) -> str | None:
    value = element.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise CouldNotJudge(f"{where}.{key}: must be a string, not {_kind(value)}")
    return value


def _name(element: Mapping[str, Any], where: str) -> str:
    if "name" not in element:
        raise CouldNotJudge(f"{where}: has no 'name'")
    name = element["name"]
    if not isinstance(name, str) or not name:
        raise CouldNotJudge(f"{where}.name: must be a non-empty string, not {name!r}")
    return name


def element_shape(element: Mapping[str, Any]) -> str:
    """Which shape one tools-array element is in: mcp, openai or anthropic."""
    if element.get("type") == "function" and ("function" in element or "parameters" in element):
        return SHAPE_OPENAI
    if "input_schema" in element:
        return SHAPE_ANTHROPIC
    # MCP is also the default for a tool that carries no schema at all: every field of such
    # a tool (name, description) means the same in all three shapes.
    return SHAPE_MCP


def _tool_from(element: Mapping[str, Any], shape: str, where: str) -> Tool:
    if shape == SHAPE_OPENAI:
        inner: Mapping[str, Any] = element
        inner_where = where
        if "function" in element:
            function = element["function"]
            if not isinstance(function, dict):
                raise CouldNotJudge(f"{where}.function: must be an object, not {_kind(function)}")
            inner, inner_where = function, f"{where}.function"
        return Tool(
            name=_name(inner, inner_where),
            description=_optional_text(inner, "description", inner_where),
            input_schema=_optional_object(inner, "parameters", inner_where),
            raw=element,
        )
    schema_key = "input_schema" if shape == SHAPE_ANTHROPIC else "inputSchema"
    annotations = _optional_object(element, "annotations", where)
    return Tool(
        name=_name(element, where),
        description=_optional_text(element, "description", where),
        input_schema=_optional_object(element, schema_key, where),
        output_schema=_optional_object(element, "outputSchema", where),
        annotations=annotations,
        title=_optional_text(element, "title", where),
        raw=element,
    )


def normalize_tools(data: object, source: str = "tools") -> tuple[list[Tool], str]:
    """Normalise a tools array (MCP, OpenAI or Anthropic shape) or a ``tools/list`` result.

    Returns the tools and the name of the shape found. Accepts a bare array, an object with a
    ``tools`` array (a ``tools/list`` result, or a request body), and a JSON-RPC response
    whose ``result`` is such an object. Errors name ``source`` and the offending index/field.
    """
    wrapped = False
    where = source
    if isinstance(data, dict) and "result" in data and "tools" not in data:
        data, where = data["result"], f"{source}.result"
    if isinstance(data, dict):
        if "tools" not in data:
            keys = ", ".join(sorted(map(str, data))) or "none"
            raise CouldNotJudge(f"{where}: an object without a 'tools' array (keys: {keys})")
        data, where, wrapped = data["tools"], f"{where}.tools", True
    if not isinstance(data, list):
        raise CouldNotJudge(f"{where}: must be an array of tools, not {_kind(data)}")
    tools: list[Tool] = []
    shape = ""
    for index, element in enumerate(data):
        here = f"{where}[{index}]"
        if not isinstance(element, dict):
            raise CouldNotJudge(f"{here}: must be an object, not {_kind(element)}")
        this_shape = element_shape(element)
        if shape and this_shape != shape:
            raise CouldNotJudge(
                f"{here}: is in {this_shape} shape but the tools before it are in {shape} shape"
            )
        shape = this_shape
        tools.append(_tool_from(element, this_shape, here))
    shape = shape or SHAPE_MCP
    if wrapped and shape == SHAPE_MCP:
        shape = SHAPE_MCP_RESULT
    return tools, shape


def load_tools_file(path: str | Path) -> tuple[list[Tool], str]:
    """Read a tools array from a JSON or YAML file (by suffix; JSON first for other names)."""
    from pytest_toll.core.textio import read_text

    name = str(path)
    text = read_text(path)
    suffix = Path(name).suffix.lower()
    if suffix in (".yaml", ".yml"):
        data = _parse_yaml(text, name)
    else:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            if suffix == ".json":
                raise CouldNotJudge(
                    f"{name}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}"
                ) from None
            data = _parse_yaml(text, name)
    return normalize_tools(data, name)


def _parse_yaml(text: str, name: str) -> object:
    import yaml

    try:
        return _json_compatible(yaml.safe_load(text), name)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f"{name}:{mark.line + 1}:{mark.column + 1}" if mark is not None else name
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise CouldNotJudge(f"{where}: not valid YAML: {problem}") from None


def _json_compatible(value: object, where: str) -> object:
    """YAML values as JSON would carry them: keys as strings, dates as ISO text.

    YAML reads ``2025-06-18`` as a date and ``1:`` as an integer key; JSON has neither.
    Anything else JSON cannot hold is named by its path.
    """
    import datetime

    if isinstance(value, dict):
        return {str(key): _json_compatible(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_json_compatible(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, datetime.date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise CouldNotJudge(f"{where}: a {type(value).__name__} value, which JSON cannot hold")


# --- serializing ------------------------------------------------------------------------


# Encoders built once: json.dumps builds a new one per call when given any option.
_minified = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# The claude line is spaced the way Claude's own prompt shows tools: ", " and ": ". Keys keep
# the order the source sent. (Claude's prompt appears to sort them at every level; switching
# to sort_keys=True moves counts by a few tokens per tool, so it waits for the pinned
# ledgers — examples/demo among them — to be re-pinned in the same change.)
_claude_json = json.JSONEncoder(ensure_ascii=False).encode
# A string as JSON text, straight to the C routine both encoders above use for strings.
_string: Callable[[str], str] = json.encoder.encode_basestring


def serialize_raw(tools: Sequence[Tool]) -> str:
    """The tools array as the source sent it, minified, key order kept."""
    return _minified([dict(tool.raw) if tool.raw else _mcp_element(tool) for tool in tools])


def _mcp_element(tool: Tool) -> dict[str, Any]:
    # A Tool built by hand (no raw element) is sent as the MCP element it stands for.
    element: dict[str, Any] = {"name": tool.name}
    if tool.title is not None:
        element["title"] = tool.title
    if tool.description is not None:
        element["description"] = tool.description
    element["inputSchema"] = tool.parameters
    if tool.output_schema is not None:
        element["outputSchema"] = tool.output_schema
    if tool.annotations is not None:
        element["annotations"] = tool.annotations
    return element


def claude_line(tool: Tool) -> str:
    """The bare claude line of one tool (no ``<function>`` wrapper).

    A tool without a description has no ``description`` key, as the model would see it.
    """
    return _claude_line(tool, _claude_json(tool.parameters))


def _claude_line(tool: Tool, schema_text: str) -> str:
    # Assembled around an already serialized schema (weigh counts that text on its own too);
    # byte for byte what _claude_json({"description", "name", "parameters"}) gives.
    description = (
        "" if tool.description is None else f'"description": {_string(tool.description)}, '
    )
    return f'{{{description}"name": {_string(tool.name)}, "parameters": {schema_text}}}'


def _wrap_claude(lines: Sequence[str]) -> str:
    body = "\n".join(f"<function>{line}</function>" for line in lines)
    return f"<functions>\n{body}\n</functions>"


def serialize_claude(tools: Sequence[Tool]) -> str:
    """All tools as Claude's ``<functions>`` block."""
    return _wrap_claude([claude_line(tool) for tool in tools])


def openai_element(tool: Tool) -> dict[str, Any]:
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.parameters
    return {"type": "function", "function": function}


def serialize_openai(tools: Sequence[Tool]) -> str:
    """All tools as OpenAI's ``tools`` request field, minified."""
    return _minified([openai_element(tool) for tool in tools])


# --- weighing ---------------------------------------------------------------------------

#: How many of the heaviest tools get a breakdown of what inside them costs most.
BREAKDOWN_TOP = 3
_DEFS_KEYS = ("$defs", "definitions")
_SCHEMA_KEYS = ("inputSchema", "input_schema")


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
            counter.count_many([_claude_json(text) for text in _strings_under(rest, "description")])
        ),
        "enums": sum(counter.count_many([_claude_json(enum) for enum in _enums_under(rest)])),
        "titles": sum(
            counter.count_many(
                [f'"title": {_claude_json(t)}, ' for t in _strings_under(rest, "title")]
            )
        ),
        "defs": counter.count(_claude_json(defs)) if defs else 0,
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
        from dataclasses import replace

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


def _raw_and_openai(tools: Sequence[Tool]) -> tuple[str, str]:
    """``serialize_raw`` and ``serialize_openai`` at once, serializing each schema once.

    Both embed the same minified schema and description; assembling the elements around
    them saves a third of weigh's JSON work. tests/test_tools.py proves the texts equal.
    """
    raw_parts: list[str] = []
    openai_parts: list[str] = []
    for tool in tools:
        schema = _minified(tool.parameters)
        description = None if tool.description is None else _string(tool.description)
        described = "" if description is None else f',"description":{description}'
        openai_parts.append(
            f'{{"type":"function","function":{{"name":{_string(tool.name)}{described},'
            f'"parameters":{schema}}}}}'
        )
        raw = tool.raw
        if not raw or not all(isinstance(key, str) for key in raw):
            raw_parts.append(_minified(dict(raw) if raw else _mcp_element(tool)))
            continue
        pieces = []
        for key, value in raw.items():
            if key in _SCHEMA_KEYS and tool.input_schema is not None and value is tool.input_schema:
                text = schema
            elif key == "description" and description is not None and value is tool.description:
                text = description
            elif type(value) is str:
                text = _string(value)
            else:
                text = _minified(value)
            pieces.append(f"{_string(key)}:{text}")
        raw_parts.append("{" + ",".join(pieces) + "}")
    return "[" + ",".join(raw_parts) + "]", "[" + ",".join(openai_parts) + "]"


def _uncached(counter: Counter) -> Callable[[Sequence[str]], list[int]]:
    """``count_many`` without the shared count cache, for o200k.

    weigh counts each of its strings once, so hashing every long one for the cache costs
    more than it saves (about 7% of a weigh, bench/weigh.py); the counts are the same.
    """
    from pytest_toll.core.tokens import O200kCounter, encoding

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
    from pytest_toll.core.tokens import O200K, TOKENIZER_NAME, O200kCounter

    if window <= 0:
        raise CouldNotJudge(f"window must be a positive number of tokens, not {window}")
    counter = counter or O200kCounter()
    try:
        schemas = [_claude_json(tool.parameters) for tool in tools]
        lines = [_claude_line(tool, schema) for tool, schema in zip(tools, schemas)]
        outputs = [
            "" if tool.output_schema is None else _claude_json(tool.output_schema) for tool in tools
        ]
        raw_text, openai_text = _raw_and_openai(tools)
    except (TypeError, ValueError) as error:
        # Tools built in Python may hold what JSON cannot (a set, a date, mixed key types).
        raise CouldNotJudge(f"{target or 'tools'}: not serializable as JSON: {error}") from None
    descriptions = [tool.description or "" for tool in tools]
    count_many = _uncached(counter)
    line_tokens = count_many(lines)
    description_tokens = count_many(descriptions)
    schema_tokens = count_many(schemas)
    output_tokens = count_many(outputs)
    claude_total, raw_total, openai_total = count_many([_wrap_claude(lines), raw_text, openai_text])
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
    )
