from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.tools import (
    Tool,
    claude_line,
    load_tools_file,
    normalize_tools,
    serialize_claude,
    serialize_openai,
    serialize_raw,
    weigh,
)

READ_FILE: dict[str, Any] = {
    "name": "read_file",
    "description": "Read a file.",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "File path"}},
        "required": ["path"],
    },
    "annotations": {"readOnlyHint": True},
}
PING: dict[str, Any] = {"name": "ping"}
MCP_TOOLS = [READ_FILE, PING]


def test_the_three_serializations_golden() -> None:
    tools, shape = normalize_tools(MCP_TOOLS)
    assert shape == "mcp"
    assert serialize_raw(tools) == (
        '[{"name":"read_file","description":"Read a file.","inputSchema":{"type":"object",'
        '"properties":{"path":{"type":"string","description":"File path"}},"required":["path"]},'
        '"annotations":{"readOnlyHint":true}},{"name":"ping"}]'
    )
    assert claude_line(tools[0]) == (
        '{"description": "Read a file.", "name": "read_file", "parameters": {"type": "object", '
        '"properties": {"path": {"type": "string", "description": "File path"}}, '
        '"required": ["path"]}}'
    )
    # No description: no key. No schema: the empty object schema.
    assert claude_line(tools[1]) == (
        '{"name": "ping", "parameters": {"type": "object", "properties": {}}}'
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


def test_weigh_exact_counts(reference_o200k: Any) -> None:
    tools, shape = normalize_tools({"tools": MCP_TOOLS})
    assert shape == "mcp tools/list result"
    report = weigh(
        tools, instructions="Use read_file for files.", target="demo", source_shape=shape
    )
    reference = reference_o200k.encode_ordinary
    assert report.claude == len(reference(serialize_claude(tools)))
    assert report.raw == len(reference(serialize_raw(tools)))
    assert report.openai == len(reference(serialize_openai(tools)))
    assert [row.tokens for row in report.tools] == [len(reference(claude_line(t))) for t in tools]
    assert report.instructions == len(reference("Use read_file for files."))
    data = report.as_dict()
    assert data == {
        "kind": "tools",
        "target": "demo",
        "source_shape": "mcp tools/list result",
        "tokenizer": "o200k_base",
        "method": "o200k",
        "tools": [
            {
                "name": "read_file",
                "tokens": 51,
                "description_tokens": 4,
                "schema_tokens": 33,
                "output_schema_tokens": 0,
            },
            {
                "name": "ping",
                "tokens": 21,
                "description_tokens": 0,
                "schema_tokens": 11,
                "output_schema_tokens": 0,
            },
        ],
        "framing": 14,
        "instructions": 6,
        "totals": {"raw": 53, "claude": 86, "openai": 67},
        "window": {"size": 1_000_000, "share": 9.2e-05},
        "findings": [],
        "breakdown": [
            {
                "tool": "read_file",
                "tokens": 51,
                "parts": {
                    "description": 4,
                    "parameter_descriptions": 4,
                    "enums": 0,
                    "titles": 0,
                    "defs": 0,
                    "structure": 43,
                },
                "largest": "structure",
            },
            {
                "tool": "ping",
                "tokens": 21,
                "parts": {
                    "description": 0,
                    "parameter_descriptions": 0,
                    "enums": 0,
                    "titles": 0,
                    "defs": 0,
                    "structure": 21,
                },
                "largest": "structure",
            },
        ],
        "server": None,
    }
    assert sum(row["tokens"] for row in data["tools"]) + data["framing"] == data["totals"]["claude"]
    assert [row.name for row in report.by_cost()] == ["read_file", "ping"]


def test_weigh_counts_output_schema_and_empty_list() -> None:
    tools, _ = normalize_tools(
        [{"name": "t", "description": "d", "outputSchema": {"type": "object"}}]
    )
    row = weigh(tools).tools[0]
    assert (row.tokens, row.schema_tokens, row.output_schema_tokens) == (27, 11, 6)
    empty = weigh([])
    assert empty.tools == ()
    assert empty.framing == empty.claude > 0
    assert empty.instructions is None


def test_weigh_rejects_a_zero_window() -> None:
    with pytest.raises(CouldNotJudge, match="window must be a positive number"):
        weigh([], window=0)


def test_openai_and_anthropic_shapes_normalise_to_the_same_lines() -> None:
    schema = READ_FILE["inputSchema"]
    openai = [
        {
            "type": "function",
            "function": {"name": "read_file", "description": "Read a file.", "parameters": schema},
        }
    ]
    responses = [
        {
            "type": "function",
            "name": "read_file",
            "description": "Read a file.",
            "parameters": schema,
        }
    ]
    anthropic = [{"name": "read_file", "description": "Read a file.", "input_schema": schema}]
    mcp, _ = normalize_tools([READ_FILE])
    for data, expected in [(openai, "openai"), (responses, "openai"), (anthropic, "anthropic")]:
        tools, shape = normalize_tools(data)
        assert shape == expected
        assert claude_line(tools[0]) == claude_line(mcp[0])
        # raw keeps what the source sent.
        assert json.loads(serialize_raw(tools)) == data


def test_json_rpc_response_is_unwrapped() -> None:
    tools, shape = normalize_tools({"jsonrpc": "2.0", "id": 1, "result": {"tools": [PING]}})
    assert shape == "mcp tools/list result"
    assert [tool.name for tool in tools] == ["ping"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ("nope", r"^tools: must be an array of tools, not string$"),
        ({"items": []}, r"^tools: an object without a 'tools' array \(keys: items\)$"),
        ([1], r"^tools\[0\]: must be an object, not number$"),
        ([{"description": "x"}], r"^tools\[0\]: has no 'name'$"),
        ([{"name": ""}], r"^tools\[0\]\.name: must be a non-empty string, not ''$"),
        ([PING, {"name": "x", "inputSchema": []}], r"^tools\[1\]\.inputSchema: must be an object"),
        ([{"name": "x", "description": 3}], r"^tools\[0\]\.description: must be a string"),
        (
            [PING, {"name": "x", "input_schema": {}}],
            r"^tools\[1\]: is in anthropic shape but the tools before it are in mcp shape$",
        ),
        (
            [{"type": "function", "function": []}],
            r"^tools\[0\]\.function: must be an object, not array$",
        ),
        ({"result": {"tools": {}}}, r"^tools\.result\.tools: must be an array"),
    ],
)
def test_bad_tools_name_the_index_and_field(data: object, message: str) -> None:
    with pytest.raises(CouldNotJudge, match=message):
        normalize_tools(data)


def test_load_json_and_yaml_files(tmp_path: Path) -> None:
    json_file = tmp_path / "tools.json"
    json_file.write_text(json.dumps({"tools": MCP_TOOLS}))
    tools, shape = load_tools_file(json_file)
    assert (len(tools), shape) == (2, "mcp tools/list result")
    yaml_file = tmp_path / "tools.yaml"
    yaml_file.write_text(
        "- name: read_file\n  description: Read a file.\n  input_schema:\n    type: object\n"
    )
    tools, shape = load_tools_file(yaml_file)
    assert (tools[0].name, shape, tools[0].parameters) == (
        "read_file",
        "anthropic",
        {"type": "object"},
    )


def test_load_errors_name_file_line_and_index(tmp_path: Path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[\n  {"name": "a",}\n]')
    with pytest.raises(CouldNotJudge, match=r"broken\.json:2:\d+: not valid JSON"):
        load_tools_file(broken)
    bad_yaml = tmp_path / "bad.yml"
    bad_yaml.write_text("- name: a\n  description: [unclosed\n")
    with pytest.raises(CouldNotJudge, match=r"bad\.yml:\d+:\d+: not valid YAML"):
        load_tools_file(bad_yaml)
    wrong = tmp_path / "wrong.yaml"
    wrong.write_text("- name: a\n- name: 7\n")
    with pytest.raises(CouldNotJudge, match=r"wrong\.yaml\[1\]\.name: must be a non-empty string"):
        load_tools_file(wrong)
    with pytest.raises(CouldNotJudge, match="no such file"):
        load_tools_file(tmp_path / "missing.json")


_json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
_schema = st.recursive(
    _json_leaf,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
_tool = st.builds(
    Tool,
    name=st.text(min_size=1, max_size=30),
    description=st.none() | st.text(max_size=80),
    input_schema=st.none() | st.dictionaries(st.text(max_size=8), _schema, max_size=4),
    output_schema=st.none() | st.dictionaries(st.text(max_size=8), _schema, max_size=2),
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_tool, max_size=6), st.none() | st.text(max_size=40))
def test_rows_plus_framing_equal_the_claude_total(
    tools: list[Tool], instructions: str | None
) -> None:
    report = weigh(tools, instructions=instructions)
    assert sum(row.tokens for row in report.tools) + report.framing == report.claude
    assert [row.name for row in report.tools] == [tool.name for tool in tools]
    assert report.claude == weigh(tools).claude


@settings(max_examples=80, deadline=None)
@given(_schema)
def test_normalize_never_crashes_on_untrusted_input(data: object) -> None:
    try:
        tools, shape = normalize_tools(data)
    except CouldNotJudge:
        return
    assert shape in ("mcp", "openai", "anthropic", "mcp tools/list result")
    serialize_claude(tools)


@settings(max_examples=100, deadline=None)
@given(_tool)
def test_claude_line_is_the_json_of_its_three_keys(tool: Tool) -> None:
    expected: dict[str, Any] = {}
    if tool.description is not None:
        expected["description"] = tool.description
    expected["name"] = tool.name
    expected["parameters"] = tool.parameters
    assert claude_line(tool) == json.dumps(expected, ensure_ascii=False)


_element = st.fixed_dictionaries(
    {"name": st.text(min_size=1, max_size=10)},
    optional={
        "description": st.text(max_size=30),
        "inputSchema": st.dictionaries(st.text(max_size=5), _schema, max_size=3),
        "annotations": st.dictionaries(st.text(max_size=5), st.booleans(), max_size=2),
        "title": st.text(max_size=5),
    },
)


@settings(max_examples=100, deadline=None)
@given(st.lists(_element, max_size=4) | st.lists(_tool, max_size=4))
def test_weigh_assembles_raw_and_openai_exactly(items: list[Any]) -> None:
    from pytest_toll.definitions.tools import _raw_and_openai

    tools = normalize_tools(items)[0] if items and isinstance(items[0], dict) else items
    assert _raw_and_openai(tools) == (serialize_raw(tools), serialize_openai(tools))


def test_schemas_keep_the_key_order_the_source_sent() -> None:
    one, _ = normalize_tools([{"name": "a", "inputSchema": {"type": "object", "required": []}}])
    two, _ = normalize_tools([{"inputSchema": {"required": [], "type": "object"}, "name": "a"}])
    assert claude_line(one[0]) == '{"name": "a", "parameters": {"type": "object", "required": []}}'
    assert claude_line(two[0]) == '{"name": "a", "parameters": {"required": [], "type": "object"}}'
    assert serialize_raw(two) == '[{"inputSchema":{"required":[],"type":"object"},"name":"a"}]'


def test_yaml_values_json_cannot_hold(tmp_path: Path) -> None:
    dated = tmp_path / "dated.yaml"
    dated.write_text("- name: a\n  description: 2025-06-18\n  inputSchema: {properties: {1: {}}}\n")
    tools, _ = load_tools_file(dated)
    assert tools[0].description == "2025-06-18"
    assert tools[0].parameters == {"properties": {"1": {}}}
    binary = tmp_path / "binary.yaml"
    binary.write_text("- name: a\n  inputSchema: {default: !!binary aGVsbG8=}\n")
    with pytest.raises(
        CouldNotJudge, match=r"binary\.yaml\[0\]\.inputSchema\.default: a bytes value, which JSON"
    ):
        load_tools_file(binary)


def test_python_values_json_cannot_hold() -> None:
    with pytest.raises(CouldNotJudge, match=r"^demo: not serializable as JSON: .*set"):
        weigh([Tool("a", "d", {"enum": {1, 2}})], target="demo")
