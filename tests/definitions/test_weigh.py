"""Weighing a tools list: exact counts per serialization and per tool, and the report."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.serialize import (
    claude_line,
    serialize_claude,
    serialize_openai,
    serialize_raw,
)
from pytest_toll.definitions.tools import Tool, normalize_tools
from pytest_toll.definitions.weigh import weigh
from tests.definitions.tool_samples import MCP_TOOLS, tool_records


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
                "tokens": 50,
                "description_tokens": 4,
                "schema_tokens": 32,
                "output_schema_tokens": 0,
            },
            {
                "name": "ping",
                "tokens": 19,
                "description_tokens": 0,
                "schema_tokens": 10,
                "output_schema_tokens": 0,
            },
        ],
        "framing": 16,
        "instructions": 6,
        "totals": {"raw": 53, "claude": 85, "openai": 67},
        "window": {"size": 1_000_000, "share": 9.1e-05},
        "findings": [],
        "breakdown": [
            {
                "tool": "read_file",
                "tokens": 50,
                "parts": {
                    "description": 4,
                    "parameter_descriptions": 4,
                    "enums": 0,
                    "titles": 0,
                    "defs": 0,
                    "structure": 42,
                },
                "largest": "structure",
            },
            {
                "tool": "ping",
                "tokens": 19,
                "parts": {
                    "description": 0,
                    "parameter_descriptions": 0,
                    "enums": 0,
                    "titles": 0,
                    "defs": 0,
                    "structure": 19,
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
    assert (row.tokens, row.schema_tokens, row.output_schema_tokens) == (25, 10, 6)
    empty = weigh([])
    assert empty.tools == ()
    assert empty.framing == empty.claude > 0
    assert empty.instructions is None


def test_weigh_rejects_a_zero_window() -> None:
    with pytest.raises(CouldNotJudge, match="window must be a positive number"):
        weigh([], window=0)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(tool_records, max_size=6), st.none() | st.text(max_size=40))
def test_rows_plus_framing_equal_the_claude_total(
    tools: list[Tool], instructions: str | None
) -> None:
    report = weigh(tools, instructions=instructions)
    assert sum(row.tokens for row in report.tools) + report.framing == report.claude
    assert [row.name for row in report.tools] == [tool.name for tool in tools]
    assert report.claude == weigh(tools).claude


def test_python_values_json_cannot_hold() -> None:
    with pytest.raises(CouldNotJudge, match=r"^demo: not serializable as JSON: .*set"):
        weigh([Tool("a", "d", {"enum": {1, 2}})], target="demo")
