"""Normalising tools arrays (MCP, OpenAI, Anthropic, tools/list results) and loading files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.serialize import claude_line, serialize_claude, serialize_raw
from pytest_toll.definitions.tools import load_tools_file, normalize_tools
from tests.definitions.tool_samples import MCP_TOOLS, PING, READ_FILE, json_values


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


@settings(max_examples=80, deadline=None)
@given(json_values)
def test_normalize_never_crashes_on_untrusted_input(data: object) -> None:
    try:
        tools, shape = normalize_tools(data)
    except CouldNotJudge:
        return
    assert shape in ("mcp", "openai", "anthropic", "mcp tools/list result")
    serialize_claude(tools)


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
