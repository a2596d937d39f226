"""The rewrites in ``fix_tidy`` one by one: on shapes copied from real servers' lists (named
beside each), and on the corners where folding would change what a schema accepts, judged by
jsonschema on instances chosen to tell the two apart."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema.validators import validator_for

from pytest_toll.definitions.fix_tidy import (
    drop_no_ops,
    drop_restated_defaults,
    enum_as_const,
    union_as_type,
)
from pytest_toll.definitions.tools import SHAPE_MCP, Tool

#: Values of every JSON type, with the edges the corners below turn on.
INSTANCES: list[Any] = [
    None, True, False, 0, 1, 1.0, 0.5, 2, 5, -3, "", "a", "abc", "light", [], ["a"], [1, 2],
    [1, 1], {}, {"path": 1}, {"path": "a"}, {"other": 1},
]  # fmt: skip


def tool(schema: dict[str, Any]) -> Tool:
    return Tool(name="probe", description="Probe.", input_schema=schema, raw={})


def wrapped(node: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"v": node}}


def verdicts(schema: dict[str, Any]) -> list[bool]:
    validator = validator_for(schema)(schema)
    return [validator.is_valid({"v": value}) for value in INSTANCES]


def rewritten(rewrite: Any, node: dict[str, Any]) -> dict[str, Any] | None:
    result = rewrite(tool(wrapped(node)), SHAPE_MCP)
    if result is None:
        return None
    after = result.tool.parameters
    assert verdicts(after) == verdicts(wrapped(node)), after
    return dict(after["properties"]["v"])


# --- unions of plain types --------------------------------------------------------------------


def test_sentry_nullable_string_whose_branch_repeats_the_description() -> None:
    # @sentry/mcp-server: the branch says what the property says; it goes, the union folds.
    said = "The project's slug."
    node = {
        "anyOf": [{"type": "string", "description": said}, {"type": "null"}],
        "description": said,
        "default": None,
    }
    assert rewritten(union_as_type, node) == {
        "type": ["string", "null"],
        "description": said,
        "default": None,
    }


def test_environment_nested_any_of_is_flattened_then_folded() -> None:
    # @sentry/mcp-server's environment: a string or a list of them, or null.
    node = {
        "anyOf": [
            {
                "anyOf": [
                    {"type": "string", "minLength": 1},
                    {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
                ]
            },
            {"type": "null"},
        ],
        "description": "Environment filter.",
    }
    assert rewritten(union_as_type, node) == {
        "type": ["string", "array", "null"],
        "minLength": 1,
        "items": {"type": "string", "minLength": 1},
        "minItems": 1,
        "description": "Environment filter.",
    }


def test_playwright_enum_or_null_keeps_its_enum_with_null_added() -> None:
    node = {"description": "Scheme.", "anyOf": [{"type": "string", "enum": ["light", "dark"]}, {"type": "null"}]}  # fmt: skip
    assert rewritten(union_as_type, node) == {
        "description": "Scheme.",
        "type": ["string", "null"],
        "enum": ["light", "dark", None],
    }


def test_one_of_with_disjoint_types_means_any_of() -> None:
    node = {"oneOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}}]}
    assert rewritten(union_as_type, node) == {"type": ["string", "array"], "items": {"type": "string"}}  # fmt: skip


@pytest.mark.parametrize(
    "node",
    [
        # integer and number overlap: 5 is an integer above 3 and a number above 1.
        {"anyOf": [{"type": "integer", "maximum": 3}, {"type": "number", "minimum": 1}]},
        # two branches of one type: minLength of one would bind the other.
        {"anyOf": [{"type": "string", "minLength": 2}, {"type": "string", "pattern": "^a"}]},
        # an enum beside a branch that is not null: the enum would bind it.
        {"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "integer"}]},
        # a keyword that is not the branch type's own.
        {"anyOf": [{"type": "string", "minimum": 3}, {"type": "null"}]},
        # the same keyword on two branches.
        {"anyOf": [{"type": "array", "minItems": 2}, {"type": ["object", "array"]}]},
        # additionalProperties would start to read the properties beside the union.
        {
            "anyOf": [{"type": "object", "additionalProperties": False}, {"type": "null"}],
            "properties": {"path": {}},
        },
        # branches that disagree about the description: neither can speak for the node.
        {"anyOf": [{"type": "string", "description": "A"}, {"type": "null", "description": "B"}]},
        # a type beside the union already.
        {"type": "string", "anyOf": [{"type": "string"}, {"type": "null"}]},
        # a $ref is not a type.
        {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]},
    ],
)
def test_unions_that_would_change_meaning_stay(node: dict[str, Any]) -> None:
    assert rewritten(union_as_type, node) is None


def test_a_union_beside_unevaluated_keywords_stays() -> None:
    schema = {
        **wrapped({"anyOf": [{"type": "string"}, {"type": "null"}]}),
        "unevaluatedProperties": False,
    }
    assert union_as_type(tool(schema), SHAPE_MCP) is None


# --- no-ops, enums, defaults ----------------------------------------------------------------


def test_no_ops_from_zod_and_pydantic_lists_go() -> None:
    # circleci / firecrawl (zod): additionalProperties {} and propertyNames {type: string};
    # everything (zod): an object property with empty properties.
    node = {
        "type": "object",
        "properties": {},
        "required": [],
        "additionalProperties": {},
        "propertyNames": {"type": "string"},
        "minProperties": 0,
    }
    assert rewritten(drop_no_ops, node) == {"type": "object"}
    assert rewritten(drop_no_ops, {"type": "array", "items": {}, "minItems": 0, "uniqueItems": False}) == {"type": "array"}  # fmt: skip


def test_no_ops_that_are_not_stay() -> None:
    # false is not 0, items after prefixItems limits the rest, the root keeps its properties.
    assert rewritten(drop_no_ops, {"type": "array", "minItems": False}) is None
    assert rewritten(drop_no_ops, {"prefixItems": [{"type": "integer"}], "items": True}) is None
    root = {"type": "object", "properties": {}}
    assert drop_no_ops(tool(root), SHAPE_MCP) is None
    assert drop_no_ops(tool({**root, "unevaluatedProperties": False, "additionalProperties": True}), SHAPE_MCP) is None  # fmt: skip


def test_one_value_enum_is_const() -> None:
    # notion: {"type": "string", "enum": ["text"]}.
    assert rewritten(enum_as_const, {"type": "string", "enum": ["text"]}) == {"type": "string", "const": "text"}  # fmt: skip
    assert rewritten(enum_as_const, {"enum": ["a", "b"]}) is None
    # draft-04 has no const: there it would accept anything.
    draft4 = {**wrapped({"enum": ["text"]}), "$schema": "http://json-schema.org/draft-04/schema#"}
    assert enum_as_const(tool(draft4), SHAPE_MCP) is None


@pytest.mark.parametrize(
    ("default", "before", "after"),
    [
        (20, "Maximum number of users to return (default 20).", "Maximum number of users to return."),  # mcp-atlassian
        (400, "Set the height of chart, default is 400.", "Set the height of chart."),  # @antv/mcp-server-chart
        ("info", 'Level of the console messages. Defaults to "info".', "Level of the console messages."),  # @playwright/mcp
        (False, "Whether to include note content (default: false)", "Whether to include note content"),  # mcp-obsidian
        (0, "Starting index. Use 0 for the first page. Default: 0", "Starting index. Use 0 for the first page."),  # mcp-atlassian
        ("css", "Image scale. Default is css.", "Image scale."),  # @playwright/mcp
    ],
)  # fmt: skip
def test_a_description_that_restates_the_default_loses_that_clause(
    default: object, before: str, after: str
) -> None:
    node = {"type": "string", "default": default, "description": before}
    assert rewritten(drop_restated_defaults, node) == {**node, "description": after}


@pytest.mark.parametrize(
    ("default", "text"),
    [
        ("1", "Sub-indexes to create. If omitted, defaults to 1."),  # mongodb: says when
        (20, "Maximum results (default: 200)."),  # another value
        ("a", "Mode (default: A)."),  # another case
        (20, "Defaults to 20 items per page."),  # the sentence says more
        (20, "(default 20)"),  # nothing would be left
    ],
)
def test_a_description_that_says_more_than_the_default_stays(default: object, text: str) -> None:
    node = {"type": "string", "default": default, "description": text}
    assert rewritten(drop_restated_defaults, node) is None


def test_null_default_goes_only_when_the_property_is_optional() -> None:
    # mcp-atlassian (FastMCP): "default": null on optional properties.
    schema = {
        "type": "object",
        "properties": {"a": {"type": "string", "default": None}, "b": {"default": None}},
        "required": ["b"],
    }
    result = drop_restated_defaults(tool(schema), SHAPE_MCP)
    assert result is not None
    assert result.tool.parameters["properties"] == {"a": {"type": "string"}, "b": {"default": None}}


def test_a_title_that_repeats_the_description_goes() -> None:
    node = {"type": "string", "title": "Page ID", "description": "Page ID"}
    assert rewritten(drop_restated_defaults, node) == {"type": "string", "description": "Page ID"}
