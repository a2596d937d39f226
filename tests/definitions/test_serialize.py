"""The three serializations: golden texts, and properties that hold for any tool."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.definitions.serialize import (
    claude_line,
    raw_and_openai,
    serialize_claude,
    serialize_openai,
    serialize_raw,
)
from pytest_toll.definitions.tools import Tool, normalize_tools
from tests.definitions.tool_samples import MCP_TOOLS, json_values, tool_records


def test_the_three_serializations_golden() -> None:
    tools, shape = normalize_tools(MCP_TOOLS)
    assert shape == "mcp"
    assert serialize_raw(tools) == (
        '[{"name":"read_file","description":"Read a file.","inputSchema":{"type":"object",'
        '"properties":{"path":{"type":"string","description":"File path"}},"required":["path"]},'
        '"annotations":{"readOnlyHint":true}},{"name":"ping"}]'
    )
    # Keys sorted at every level, ", " / ": " spacing (checked by hand against the <functions>
    # block a Claude-family prompt shows): "properties" < "required" < "type", and inside a
    # property "description" < "type".
    assert claude_line(tools[0]) == (
        '{"description": "Read a file.", "name": "read_file", "parameters": {"properties": '
        '{"path": {"description": "File path", "type": "string"}}, "required": ["path"], '
        '"type": "object"}}'
    )
    # No description: no key. No schema: the empty object schema.
    assert claude_line(tools[1]) == (
        '{"name": "ping", "parameters": {"properties": {}, "type": "object"}}'
    )
    assert serialize_claude(tools) == (
        "<functions>\n<function>"
        + claude_line(tools[0])
        + "</function>\n<function>"
        + claude_line(tools[1])
        + "</function>\n</functions>"
    )
    assert serialize_openai(tools) == (
        '[{"type":"function","function":{"name":"read_file","description":"Read a file.",'
        '"parameters":{"type":"object","properties":{"path":{"type":"string",'
        '"description":"File path"}},"required":["path"]}}},'
        '{"type":"function","function":{"name":"ping","parameters":{"type":"object",'
        '"properties":{}}}}]'
    )


def test_non_ascii_is_kept_as_text() -> None:
    tools, _ = normalize_tools([{"name": "météo", "description": "Température à Paris"}])
    assert '"Température à Paris"' in claude_line(tools[0])
    assert "météo" in serialize_raw(tools)
    assert "météo" in serialize_openai(tools)


@settings(max_examples=100, deadline=None)
@given(tool_records)
def test_claude_line_is_the_json_of_its_three_keys(tool: Tool) -> None:
    expected: dict[str, Any] = {}
    if tool.description is not None:
        expected["description"] = tool.description
    expected["name"] = tool.name
    expected["parameters"] = tool.parameters
    assert claude_line(tool) == json.dumps(expected, ensure_ascii=False, sort_keys=True)


_element = st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=10)},
    optional={
        "description": st.text(max_size=30),
        "inputSchema": st.dictionaries(st.text(max_size=5), json_values, max_size=3),
        "annotations": st.dictionaries(st.text(max_size=5), st.booleans(), max_size=2),
        "title": st.text(max_size=5),
    },
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_element, max_size=4) | st.lists(tool_records, max_size=4))
def test_weigh_assembles_raw_and_openai_exactly(items: list[Any]) -> None:
    tools = normalize_tools(items)[0] if items and isinstance(items[0], dict) else items
    assert raw_and_openai(tools) == (serialize_raw(tools), serialize_openai(tools))


def test_the_claude_line_sorts_keys_whatever_order_the_source_sent() -> None:
    one, _ = normalize_tools([{"name": "a", "inputSchema": {"type": "object", "required": []}}])
    two, _ = normalize_tools([{"inputSchema": {"required": [], "type": "object"}, "name": "a"}])
    assert claude_line(one[0]) == '{"name": "a", "parameters": {"required": [], "type": "object"}}'
    assert claude_line(two[0]) == claude_line(one[0])
    # raw keeps the source's order: it is the neutral "as sent" text.
    assert serialize_raw(two) == '[{"inputSchema":{"required":[],"type":"object"},"name":"a"}]'
    assert serialize_raw(one) == '[{"name":"a","inputSchema":{"type":"object","required":[]}}]'


def test_the_claude_line_golden_nested() -> None:
    """A nested schema, written out by hand: every level sorted, arrays keep their order."""
    tools, _ = normalize_tools(
        [
            {
                "name": "create_note",
                "description": "Create a note.",
                "inputSchema": {
                    "type": "object",
                    "required": ["title", "tags"],
                    "properties": {
                        "title": {"type": "string", "maxLength": 80},
                        "tags": {
                            "type": "array",
                            "items": {"type": "string", "enum": ["work", "home"]},
                        },
                    },
                    "additionalProperties": False,
                },
            }
        ]
    )
    assert claude_line(tools[0]) == (
        '{"description": "Create a note.", "name": "create_note", "parameters": '
        '{"additionalProperties": false, "properties": {"tags": {"items": {"enum": ["work", '
        '"home"], "type": "string"}, "type": "array"}, "title": {"maxLength": 80, "type": '
        '"string"}}, "required": ["title", "tags"], "type": "object"}}'
    )
