"""Schema compaction: exactly what is dropped and inlined, and the originals untouched."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.calls.compact import compact_schema, compact_tools
from pytest_toll.calls.measuring import measure
from pytest_toll.core.errors import UsageError
from pytest_toll.definitions.serialize import serialize_openai
from pytest_toll.definitions.tools import normalize_tools
from tests.calls.calls_data import TOOLS, count


def test_compact_schema_does_exactly_what_it_says() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title", "description": " a\n\n  b "},
            "once": {"$ref": "#/$defs/Once", "description": "kept sibling"},
            "twice_a": {"$ref": "#/$defs/Twice"},
            "twice_b": {"$ref": "#/$defs/Twice"},
            "tree": {"$ref": "#/$defs/Node"},
        },
        "$defs": {
            "Once": {"type": "integer", "title": "Once", "description": "from defs"},
            "Twice": {"type": "string", "enum": ["x", "y"]},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}},
            "Unused": {"type": "null"},
        },
    }
    original = copy.deepcopy(schema)
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "a b"},
            "once": {"type": "integer", "description": "kept sibling"},
            "twice_a": {"$ref": "#/$defs/Twice"},
            "twice_b": {"$ref": "#/$defs/Twice"},
            "tree": {"$ref": "#/$defs/Node"},
        },
        "$defs": {
            "Twice": {"type": "string", "enum": ["x", "y"]},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}},
        },
    }
    assert schema == original


def test_compact_defs_chain_collapses_fully() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
        "definitions": {
            "A": {"type": "array", "items": {"$ref": "#/definitions/B"}},
            "B": {"type": "string"},
        },
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "string"}}},
    }


def test_compact_measurement_leaves_the_originals_alone() -> None:
    before = copy.deepcopy(TOOLS)
    full = measure("gpt-6.2-sol", tools=TOOLS)
    compact = measure("gpt-6.2-sol", tools=TOOLS, tool_schemas="compact")
    assert before == TOOLS
    assert compact.tool_schemas == "compact"
    normalized, _ = normalize_tools(TOOLS)
    compact_text = serialize_openai(compact_tools(normalized))
    # The probe message is "." and the tools block sits before it.
    assert compact.parts["tools"].tokens == count(compact_text + "\n\n.") - count(".")
    assert compact.parts["tools"].tokens < full.parts["tools"].tokens
    with pytest.raises(UsageError, match="tool_schemas must be 'full' or 'compact'"):
        measure("gpt-6.2-sol", tools=TOOLS, tool_schemas="tiny")


SCHEMA_KEYS = st.sampled_from(
    [
        "type",
        "title",
        "$schema",
        "description",
        "properties",
        "items",
        "anyOf",
        "$defs",
        "definitions",
        "$ref",
        "enum",
        "required",
        "A",
        "B",
        "title ",
    ]
)
REFS = st.sampled_from(["#/$defs/A", "#/$defs/B", "#/definitions/A", "#/$defs/missing", "#/x"])
SCHEMAS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | REFS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(SCHEMA_KEYS, children, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(SCHEMA_KEYS, SCHEMAS, max_size=5))
def test_compaction_of_untrusted_schemas(schema: dict[str, Any]) -> None:
    original = copy.deepcopy(schema)
    compacted = compact_schema(schema)
    assert schema == original
    json.dumps(compacted)
    assert compact_schema(compacted) == compacted


def test_a_definition_that_is_not_an_object_is_kept_not_inlined() -> None:
    schema = {"properties": {"p": {"$ref": "#/$defs/a"}}, "$defs": {"a": "not a schema"}}
    assert compact_schema(schema) == schema
