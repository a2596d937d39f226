"""Tool definitions the tests in this folder share: two sample MCP tools, and hypothesis
strategies for JSON values and hand-built ``Tool`` records."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from pytest_toll.definitions.tools import Tool

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

_json_leaf = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_values = st.recursive(
    _json_leaf,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3)
    ),
    max_leaves=8,
)
tool_records = st.builds(
    Tool,
    name=st.text(min_size=1, max_size=30),
    description=st.none() | st.text(max_size=80),
    input_schema=st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=4),
    output_schema=st.none() | st.dictionaries(st.text(max_size=8), json_values, max_size=2),
)
