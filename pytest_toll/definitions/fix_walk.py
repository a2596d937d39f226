"""What every ``toll fix`` rewrite is built from: a walk over a schema's sub-schemas, a
rebuild that changes them children first, and the tool edited in its source's shape.

Kept apart from the catalogues (``fix_edits``, ``fix_tidy``) so both can use them without
importing each other.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_toll.definitions.tools import SHAPE_ANTHROPIC, SHAPE_OPENAI, Tool

Schema = dict[str, Any]
Path = tuple[str | int, ...]

# Keywords whose value is one sub-schema, a map of them, or a list of them.
ONE_KEYS = (
    "additionalProperties",
    "additionalItems",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
)
MAP_KEYS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
LIST_KEYS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
DEFS_KEYS = ("$defs", "definitions")

#: A $defs name pointer: everything else a $ref may say blocks de-duplication.
PLAIN_REF = re.compile(r"^#/(\$defs|definitions)/([^/]+)$")


def walk(schema: Mapping[str, Any], path: Path = ()) -> Iterator[tuple[Path, Mapping[str, Any]]]:
    """Every sub-schema in schema position (never a property *name*, enum or default)."""
    yield path, schema
    for key, value in schema.items():
        if key in ONE_KEYS and isinstance(value, dict):
            yield from walk(value, (*path, key))
        elif key in MAP_KEYS and isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict):
                    yield from walk(sub, (*path, key, name))
        elif key in LIST_KEYS and isinstance(value, list):
            for index, sub in enumerate(value):
                if isinstance(sub, dict):
                    yield from walk(sub, (*path, key, index))
        elif key == "dependencies" and isinstance(value, dict):
            for name, sub in value.items():
                if isinstance(sub, dict):
                    yield from walk(sub, (*path, key, name))


def rebuild(
    schema: Mapping[str, Any],
    change: Callable[[Schema, Path], Schema],
    path: Path = (),
) -> Schema:
    """A copy of ``schema`` with ``change(node, path)`` applied to every sub-schema, children
    first. Key order is kept; values that are not sub-schemas are shared, never mutated."""
    copy: Schema = {}
    for key, value in schema.items():
        if key in ONE_KEYS and isinstance(value, dict):
            value = rebuild(value, change, (*path, key))
        elif (key in MAP_KEYS or key == "dependencies") and isinstance(value, dict):
            value = {
                name: rebuild(sub, change, (*path, key, name)) if isinstance(sub, dict) else sub
                for name, sub in value.items()
            }
        elif key in LIST_KEYS and isinstance(value, list):
            value = [
                rebuild(sub, change, (*path, key, index)) if isinstance(sub, dict) else sub
                for index, sub in enumerate(value)
            ]
        copy[key] = value
    return change(copy, path)


def dotted(path: Path) -> str:
    return ".".join(str(part) for part in path) or "(root)"


def listed(paths: list[str], most: int = 3) -> str:
    shown = ", ".join(paths[:most])
    return shown + (f", … (+{len(paths) - most})" if len(paths) > most else "")


# --- the tool, edited ---------------------------------------------------------------------


def edited(
    tool: Tool, shape: str, *, description: str | None = None, schema: Schema | None = None
) -> Tool:
    """``tool`` with a new description and/or input schema, its ``raw`` element (what
    ``--write`` writes, in the source's shape) changed to match."""
    raw: dict[str, Any] = dict(tool.raw)
    inner = raw if raw else {}  # a tool built by hand has no element to keep in step
    if shape == SHAPE_OPENAI and isinstance(raw.get("function"), dict):
        inner = raw["function"] = dict(raw["function"])
    if description is not None:
        inner["description"] = description
    if schema is not None:
        key = {SHAPE_OPENAI: "parameters", SHAPE_ANTHROPIC: "input_schema"}.get(
            shape, "inputSchema"
        )
        inner[key] = schema
    return replace(
        tool,
        description=tool.description if description is None else description,
        input_schema=tool.input_schema if schema is None else schema,
        raw=raw,
    )


@dataclass(frozen=True)
class Rewrite:
    """What one rewrite did to one tool: the edited tool and a line saying what changed."""

    tool: Tool
    what: str


# Keywords that constrain one JSON type only (any other type passes them).
ONLY_FOR = {
    "string": {
        "minLength",
        "maxLength",
        "pattern",
        "format",
        "contentEncoding",
        "contentMediaType",
    },
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
    "array": {"items", "minItems", "maxItems", "uniqueItems", "contains"},
    "object": {
        "properties",
        "required",
        "additionalProperties",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "propertyNames",
    },
}
ONLY_FOR["integer"] = ONLY_FOR["number"]
# Keywords that read their siblings (additionalProperties reads properties and
# patternProperties, items reads prefixItems…): moved beside any of these, one of X's
# keywords could change meaning, so the schema around may hold none of them.
READ_TOGETHER = {
    "string": ONLY_FOR["string"],
    "number": ONLY_FOR["number"],
    "integer": ONLY_FOR["number"],
    "array": ONLY_FOR["array"]
    | {"prefixItems", "additionalItems", "minContains", "maxContains", "unevaluatedItems"},
    "object": ONLY_FOR["object"]
    | {"dependentRequired", "dependentSchemas", "dependencies", "unevaluatedProperties"},
}


def nullable_parts(node: Mapping[str, Any]) -> tuple[str, Schema] | None:
    """(X, the keywords beside ``type`` in X's branch) when ``node`` says "X or null"."""
    branches = node.get("anyOf")
    if not isinstance(branches, list) or len(branches) != 2 or "type" in node:
        return None
    if not all(isinstance(branch, dict) for branch in branches):
        return None
    nulls = [branch for branch in branches if branch == {"type": "null"}]
    others = [branch for branch in branches if branch != {"type": "null"}]
    if len(nulls) != 1 or len(others) != 1:
        return None
    other = others[0]
    json_type = other.get("type")
    if not isinstance(json_type, str) or json_type == "null":
        return None
    rest = {key: value for key, value in other.items() if key != "type"}
    if not rest.keys() <= ONLY_FOR.get(json_type, set()) or (
        rest and READ_TOGETHER[json_type] & node.keys()
    ):
        return None
    return json_type, rest
