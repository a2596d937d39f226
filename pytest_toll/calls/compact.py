"""Schema compaction: smaller copies of tool input schemas, measured with ``tool_schemas="compact"``.

The caller's tools and schemas are never changed; see ``compact_schema`` for exactly what is
removed or inlined.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_toll.definitions.tools import Tool


_SUBSCHEMA = (
    "items",
    "additionalProperties",
    "additionalItems",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contains",
    "propertyNames",
    "not",
    "if",
    "then",
    "else",
)
_SUBSCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems", "items")
_SUBSCHEMA_MAPS = ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas")
_DROPPED_KEYWORDS = ("title", "$schema")
_DEF_REF = re.compile(r"#/(\$defs|definitions)/([^/]+)")


def _strip(node: object) -> object:
    """Drop ``title``/``$schema`` and squeeze description whitespace, schema-aware."""
    if not isinstance(node, Mapping):
        return copy.deepcopy(node)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _DROPPED_KEYWORDS and isinstance(value, str):
            continue
        if key == "description" and isinstance(value, str):
            out[key] = " ".join(value.split())
        elif key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            # Names under properties are data, not keywords: a property named "title" stays.
            out[key] = {name: _strip(sub) for name, sub in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [_strip(sub) for sub in value]
        elif key in _SUBSCHEMA:
            out[key] = _strip(value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def _refs(node: object, found: list[str]) -> None:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str):
            match = _DEF_REF.fullmatch(ref)
            if match:
                found.append(match.group(2))
        for value in node.values():
            _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _reaches(name: str, target: str, defs: Mapping[str, Any], seen: set[str]) -> bool:
    found: list[str] = []
    _refs(defs.get(name), found)
    for ref in found:
        if ref == target:
            return True
        if ref not in seen and ref in defs:
            seen.add(ref)
            if _reaches(ref, target, defs, seen):
                return True
    return False


def _inline(node: object, name: str, key: str, definition: Mapping[str, Any]) -> object:
    if isinstance(node, Mapping):
        if node.get("$ref") == f"#/{key}/{name}":
            siblings = {k: v for k, v in node.items() if k != "$ref"}
            return {**copy.deepcopy(dict(definition)), **siblings}
        return {k: _inline(v, name, key, definition) for k, v in node.items()}
    if isinstance(node, list):
        return [_inline(v, name, key, definition) for v in node]
    return node


def compact_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A compacted copy of a JSON Schema (the original is never changed). Exactly:

    1. ``title`` and ``$schema`` keywords (string-valued) are dropped everywhere a schema
       can appear; a *property* named ``title`` is kept;
    2. every ``description`` inside the schema has its whitespace squeezed (runs of spaces,
       tabs and newlines become one space; leading and trailing whitespace removed);
    3. root ``$defs``/``definitions`` entries referenced exactly once (and not recursively)
       are inlined at their ``$ref`` (sibling keywords of the ``$ref`` win); entries never
       referenced are dropped; entries used twice or more, recursive, or not an object
       schema (``true``, a malformed entry) stay; an empty
       ``$defs`` is removed. Repeated until nothing changes.

    Everything else (types, enums, required, defaults, examples) is kept as it is. The
    serialization is the tool's usual one, so the difference is the schema content alone.
    """
    result = _strip(schema)
    assert isinstance(result, dict)
    for key in ("$defs", "definitions"):
        while isinstance(result.get(key), Mapping):
            defs = dict(result[key])
            found: list[str] = []
            rest = {k: v for k, v in result.items() if k != key}
            _refs(rest, found)
            _refs(defs, found)
            changed = False
            for name in list(defs):
                uses = found.count(name)
                if uses == 0:
                    del defs[name]
                    changed = True
                elif (
                    uses == 1
                    and isinstance(defs[name], Mapping)
                    and not _reaches(name, name, defs, set())
                ):
                    definition = defs.pop(name)
                    rest = _inline(rest, name, key, definition)  # type: ignore[assignment]
                    defs = _inline(defs, name, key, definition)  # type: ignore[assignment]
                    changed = True
                    break
            result = {**rest, key: defs} if defs else rest
            if not changed:
                break
    return result


_COMPACTED_LIMIT = 4096
_compacted: dict[str, dict[str, Any]] = {}


def _compacted_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    # A test measures the same tools call after call: compact each distinct schema once.
    # The cached copies stay inside the measurement's serialization and are never mutated.
    key = json.dumps(schema, sort_keys=True, ensure_ascii=False, default=str)
    cached = _compacted.get(key)
    if cached is None:
        if len(_compacted) >= _COMPACTED_LIMIT:
            _compacted.clear()
        cached = _compacted[key] = compact_schema(schema)
    return cached


def compact_tools(tools: Sequence[Tool]) -> list[Tool]:
    """Copies of ``tools`` with compacted input schemas (``compact_schema``)."""
    return [
        replace(tool, input_schema=_compacted_schema(tool.input_schema))
        if tool.input_schema is not None
        else tool
        for tool in tools
    ]
