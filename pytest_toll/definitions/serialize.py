"""The three serializations of a tools list (docs/definitions.md, "Weighing a server"):

- ``raw``: the tools array exactly as the source sent it, minified JSON — a neutral lower
  bound that depends on nothing but the source;
- ``claude`` (the primary, graded metric): one line per tool,
  ``{"description": …, "name": …, "parameters": <inputSchema>}`` with ", " and ": " spacing
  and keys sorted at every level (as a Claude-family prompt shows tools: ``"properties"``
  before ``"required"`` before ``"type"``), wrapped in ``<function>…</function>``, the lines
  joined by ``\\n`` inside ``<functions>\\n…\\n</functions>``;
- ``openai``: ``[{"type":"function","function":{"name","description","parameters"}}]``.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pytest_toll.definitions.tools import Tool

# Encoders built once: json.dumps builds a new one per call when given any option.
_minified = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode
# The claude line is rendered the way a Claude-family prompt shows tools: ", " and ": "
# spacing, keys sorted at every level (the source's key order does not survive).
claude_json = json.JSONEncoder(ensure_ascii=False, sort_keys=True).encode
# A string as JSON text, straight to the C routine both encoders above use for strings.
_json_string: Callable[[str], str] = json.encoder.encode_basestring
# Where each shape keeps a tool's input schema.
_SCHEMA_KEYS = ("inputSchema", "input_schema")


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
    return claude_line_around(tool, claude_json(tool.parameters))


def claude_line_around(tool: Tool, schema_text: str) -> str:
    """The claude line assembled around an already serialized schema (``weigh`` counts that
    text on its own too); byte for byte what ``claude_json`` of the three keys gives."""
    description = (
        "" if tool.description is None else f'"description": {_json_string(tool.description)}, '
    )
    return f'{{{description}"name": {_json_string(tool.name)}, "parameters": {schema_text}}}'


def wrap_claude_lines(lines: Sequence[str]) -> str:
    """Bare claude lines as the ``<functions>`` block (each inside ``<function>…</function>``)."""
    body = "\n".join(f"<function>{line}</function>" for line in lines)
    return f"<functions>\n{body}\n</functions>"


def serialize_claude(tools: Sequence[Tool]) -> str:
    """All tools as Claude's ``<functions>`` block."""
    return wrap_claude_lines([claude_line(tool) for tool in tools])


def openai_element(tool: Tool) -> dict[str, Any]:
    """One tool as an element of OpenAI's ``tools`` request field."""
    function: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        function["description"] = tool.description
    function["parameters"] = tool.parameters
    return {"type": "function", "function": function}


def serialize_openai(tools: Sequence[Tool]) -> str:
    """All tools as OpenAI's ``tools`` request field, minified."""
    return _minified([openai_element(tool) for tool in tools])


def raw_and_openai(tools: Sequence[Tool]) -> tuple[str, str]:
    """``serialize_raw`` and ``serialize_openai`` at once, serializing each schema once.

    Both embed the same minified schema and description; assembling the elements around
    them saves a third of weigh's JSON work. tests/definitions/test_serialize.py proves the
    texts equal.
    """
    raw_parts: list[str] = []
    openai_parts: list[str] = []
    for tool in tools:
        schema = _minified(tool.parameters)
        description = None if tool.description is None else _json_string(tool.description)
        described = "" if description is None else f',"description":{description}'
        openai_parts.append(
            f'{{"type":"function","function":{{"name":{_json_string(tool.name)}{described},'
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
                text = _json_string(value)
            else:
                text = _minified(value)
            pieces.append(f"{_json_string(key)}:{text}")
        raw_parts.append("{" + ",".join(pieces) + "}")
    return "[" + ",".join(raw_parts) + "]", "[" + ",".join(openai_parts) + "]"
