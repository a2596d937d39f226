"""Tool definitions as records: normalise any tools array (MCP, OpenAI or Anthropic shape) and
load one from a file.

A pure core: no I/O beyond reading a file in ``load_tools_file``, no pytest, no network.
How a tool is serialized for a model is in ``serialize``; how it is counted, in ``weigh``
(docs/definitions.md, "Weighing a server", and ARCHITECTURE.md describe them).
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, describe_type
from pytest_toll.core.parse import load_yaml
from pytest_toll.core.textio import TooDeep, json_within_depth, read_text

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


def _optional_object(element: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any] | None:
    value = element.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise CouldNotJudge(f"{where}.{key}: must be an object, not {describe_type(value, 'json')}")
    return value


def _optional_text(element: Mapping[str, Any], key: str, where: str) -> str | None:
    value = element.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise CouldNotJudge(f"{where}.{key}: must be a string, not {describe_type(value, 'json')}")
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
                raise CouldNotJudge(
                    f"{where}.function: must be an object, not {describe_type(function, 'json')}"
                )
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
        raise CouldNotJudge(
            f"{where}: must be an array of tools, not {describe_type(data, 'json')}"
        )
    tools: list[Tool] = []
    shape = ""
    for index, element in enumerate(data):
        here = f"{where}[{index}]"
        if not isinstance(element, dict):
            raise CouldNotJudge(f"{here}: must be an object, not {describe_type(element, 'json')}")
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
    name = str(path)
    text = read_text(path)
    suffix = Path(name).suffix.lower()
    if suffix in (".yaml", ".yml"):
        data = _parse_yaml(text, name)
    else:
        try:
            data = json_within_depth(text)
        except TooDeep as error:
            raise CouldNotJudge(f"{name}: {error}") from None
        except json.JSONDecodeError as error:
            if suffix == ".json":
                raise CouldNotJudge(
                    f"{name}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}"
                ) from None
            data = _parse_yaml(text, name)
    return normalize_tools(data, name)


def _parse_yaml(text: str, name: str) -> object:
    """A YAML tools file through the Parsing door (depth, alias and number bounds)."""
    return _json_compatible(load_yaml(text, name), name)


def _json_compatible(value: object, where: str) -> object:
    """YAML values as JSON would carry them: keys as strings, dates as ISO text.

    YAML reads ``2025-06-18`` as a date and ``1:`` as an integer key; JSON has neither.
    Anything else JSON cannot hold is named by its path.
    """
    if isinstance(value, dict):
        return {str(key): _json_compatible(item, f"{where}.{key}") for key, item in value.items()}
    if isinstance(value, list):
        return [_json_compatible(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, datetime.date):
        return value.isoformat()
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise CouldNotJudge(f"{where}: a {type(value).__name__} value, which JSON cannot hold")
