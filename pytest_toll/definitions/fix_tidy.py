"""More safe ``toll fix`` rewrites, found by measuring real servers' lists
(bench/fix_servers.py): keywords that constrain nothing, unions of plain types, and text
that says again what the schema already says.

Each keeps the schema's validation of every instance (tests/definitions/
test_fix_properties.py checks it with jsonschema) and never touches a tool or property name,
a ``required`` list that names something, or a word of a description that says anything the
schema does not:

- *No-ops*: ``required: []``, ``properties: {}`` and ``patternProperties: {}`` below the
  root, ``additionalProperties``/``items``/``propertyNames`` that accept everything
  (``true``, ``{}``; a property name is always a string, so ``{type: string}`` too),
  ``minLength``/``minItems``/``minProperties`` of 0, ``uniqueItems``/``deprecated``/
  ``readOnly``/``writeOnly`` of false. Not when the schema uses ``unevaluated*`` (an
  always-true ``additionalProperties`` or ``items`` marks what it saw as evaluated there).
  The root keeps ``properties`` (hosts and strict modes look for it).
- *Unions of plain types*: ``anyOf``/``oneOf`` whose branches each hold a ``type`` and only
  keywords that constrain that type (every type in one branch only; never both ``integer``
  and ``number``, whose values overlap) become one ``type`` list with those keywords beside
  it. Branches' types are disjoint, so ``oneOf`` means ``anyOf`` here. A nested ``anyOf``
  with nothing beside it is flattened into its parent's. A branch's ``description`` or
  ``title`` that the node around says too goes; "X with an enum, or null" keeps its enum
  with null added.
- *A one-value enum* is written as ``const``: the same equality, fewer brackets (not under
  a draft-04 ``$schema``, which has no ``const``).
- *Restated defaults*: ``default: null`` on a property that is not required (leaving it out
  already means "none"); a description's clause or sentence that only states the schema's
  own ``default`` ("(default: 20)", "Defaults to \\"info\\".") — the ``default`` stays.
- *A title that equals the description* beside it: the description stays.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from pytest_toll.definitions.fix_walk import (
    ONLY_FOR,
    READ_TOGETHER,
    Path,
    Rewrite,
    Schema,
    dotted,
    edited,
    listed,
    nullable_parts,
    rebuild,
    walk,
)
from pytest_toll.definitions.tools import Tool


def _uses_unevaluated(schema: Mapping[str, Any]) -> bool:
    return any("unevaluatedProperties" in n or "unevaluatedItems" in n for _, n in walk(schema))


def _rewrite(tool: Tool, shape: str, change: Any, done: list[str], what: str) -> Rewrite | None:
    schema = rebuild(tool.parameters, change)
    if not done:
        return None
    return Rewrite(edited(tool, shape, schema=schema), f"{what} ({len(done)}): {listed(done)}")


# --- no-op keywords -----------------------------------------------------------------------------

_ANYTHING: tuple[object, ...] = (True, {})
_NO_OPS: dict[str, tuple[object, ...]] = {
    "required": ([],),
    "patternProperties": ({},),
    "additionalProperties": _ANYTHING,
    "items": _ANYTHING,
    "propertyNames": (*_ANYTHING, {"type": "string"}),
    "minLength": (0,),
    "minItems": (0,),
    "minProperties": (0,),
    "uniqueItems": (False,),
    "deprecated": (False,),
    "readOnly": (False,),
    "writeOnly": (False,),
}


def _is(value: object, choices: tuple[object, ...]) -> bool:
    # ``0 == False`` in Python: a JSON false is not a JSON 0, so types must match too.
    return any(type(value) is type(choice) and value == choice for choice in choices)


def drop_no_ops(tool: Tool, shape: str) -> Rewrite | None:
    if _uses_unevaluated(tool.parameters):
        return None
    dropped: list[str] = []

    def change(node: Schema, path: Path) -> Schema:
        gone = {key for key, choices in _NO_OPS.items() if key in node and _is(node[key], choices)}
        # ``items`` beside a list form or prefixItems limits the items after them: keep it.
        if "prefixItems" in node or "additionalItems" in node:
            gone.discard("items")
        if path and node.get("properties") == {}:
            gone.add("properties")
        if not gone:
            return node
        dropped.extend(f"{dotted(path)}.{key}" if path else key for key in sorted(gone))
        return {key: value for key, value in node.items() if key not in gone}

    return _rewrite(tool, shape, change, dropped, "drop keywords that constrain nothing")


# --- unions of plain types ----------------------------------------------------------------------

_LIFTED = ("description", "title")


def _types(branch: Mapping[str, Any]) -> list[str] | None:
    kind = branch.get("type")
    kinds = [kind] if isinstance(kind, str) else kind
    if not isinstance(kinds, list) or not kinds or not all(isinstance(k, str) for k in kinds):
        return None
    return kinds if len(set(kinds)) == len(kinds) else None


def _flattened(node: Schema) -> list[Any] | None:
    """``node``'s anyOf with every branch that is a bare anyOf spliced in (anyOf of anyOf is
    one anyOf); None when there is nothing to flatten."""
    branches = node.get("anyOf")
    if not isinstance(branches, list):
        return None
    if not any(isinstance(b, dict) and b.keys() == {"anyOf"} for b in branches):
        return None
    flat: list[Any] = []
    for branch in branches:
        inner = (
            branch.get("anyOf") if isinstance(branch, dict) and branch.keys() == {"anyOf"} else None
        )
        if isinstance(inner, list) and inner:
            flat.extend(inner)
        else:
            flat.append(branch)
    return flat


def _union(node: Schema, key: str) -> Schema | None:
    """``node`` with its ``key`` (anyOf or oneOf) written as one type list, or None."""
    branches = node.get(key)
    other = "oneOf" if key == "anyOf" else "anyOf"
    if not isinstance(branches, list) or len(branches) < 2 or "type" in node or other in node:
        return None
    if not all(isinstance(b, dict) for b in branches):
        return None
    lifted: dict[str, object] = {}
    kinds: list[str] = []
    extras: Schema = {}
    enum_branch: Schema | None = None
    for branch in branches:
        rest = dict(branch)
        for word in _LIFTED:
            if word in rest:
                said = node.get(word, lifted.get(word, rest[word]))
                if said != rest[word]:
                    return None
                lifted[word] = rest.pop(word)
        types = _types(rest)
        if types is None or set(types) & set(kinds):
            return None
        rest.pop("type")
        if "enum" in rest:
            enum_branch = rest
            rest = {k: v for k, v in rest.items() if k != "enum"}
        allowed = set().union(*(ONLY_FOR.get(t, set()) for t in types))
        reads = set().union(*(READ_TOGETHER.get(t, set()) for t in types))
        if (
            not rest.keys() <= allowed
            or rest.keys() & extras.keys()
            or (rest and reads & node.keys())
        ):
            return None
        kinds.extend(types)
        extras.update(rest)
    if {"integer", "number"} <= set(kinds):
        return None
    if enum_branch is not None:
        # Only "X with an enum, or null": null joins the enum, every other value is X's.
        values = enum_branch["enum"]
        if len(branches) != 2 or "null" not in kinds or not isinstance(values, list):
            return None
        if None in values:
            return None
        extras["enum"] = [*values, None]
    copy: Schema = {}
    for name, value in node.items():
        if name == key:
            copy["type"] = kinds[0] if len(kinds) == 1 else kinds
            copy.update(extras)
        else:
            copy[name] = value
    for word, value in lifted.items():
        copy.setdefault(word, value)
    return copy


def union_as_type(tool: Tool, shape: str) -> Rewrite | None:
    if _uses_unevaluated(tool.parameters):
        return None  # evaluation annotations travel differently through anyOf
    rewritten: list[str] = []

    def change(node: Schema, path: Path) -> Schema:
        flat = _flattened(node)
        if flat is not None:
            node = {name: flat if name == "anyOf" else value for name, value in node.items()}
        for key in ("anyOf", "oneOf"):
            if flat is None and nullable_parts(node) is not None:
                break  # nullable-type's own case: suggested once, under its name
            union = _union(node, key)
            if union is not None:
                rewritten.append(dotted(path))
                return union
        if flat is not None:
            rewritten.append(dotted(path))
        return node

    return _rewrite(
        tool, shape, change, rewritten, "write anyOf/oneOf of plain types as a type list"
    )


# --- one-value enum -----------------------------------------------------------------------------


#: Dialects without ``const`` (draft-06 brought it): there it would be ignored.
_NO_CONST = re.compile(r"json-schema\.org/draft-0[34]/")


def enum_as_const(tool: Tool, shape: str) -> Rewrite | None:
    dialect = tool.parameters.get("$schema")
    if isinstance(dialect, str) and _NO_CONST.search(dialect):
        return None
    rewritten: list[str] = []

    def change(node: Schema, path: Path) -> Schema:
        values = node.get("enum")
        if not isinstance(values, list) or len(values) != 1 or "const" in node:
            return node
        rewritten.append(dotted(path))
        return {
            ("const" if k == "enum" else k): (values[0] if k == "enum" else v)
            for k, v in node.items()
        }

    return _rewrite(tool, shape, change, rewritten, "write a one-value enum as const")


# --- restated defaults and titles ------------------------------------------------------------


def _spellings(value: object) -> list[str] | None:
    """How a description may write ``value``, each as a regex."""
    if isinstance(value, bool):
        word = "true" if value else "false"
        return [word, word.capitalize()]
    if isinstance(value, int | float):
        text = repr(value)
        return [re.escape(text)] + ([re.escape(text[:-2])] if text.endswith(".0") else [])
    if isinstance(value, str) and value and "\n" not in value and len(value) <= 60:
        return [re.escape(value)]
    return None


def _restating(value: object) -> re.Pattern[str] | None:
    spellings = _spellings(value)
    if spellings is None:
        return None
    # The value is matched case-sensitively: "default: A" does not restate "a".
    quoted = "|".join(rf"[\"'`]?(?-i:{spelling})[\"'`]?" for spelling in spellings)
    said = rf"(?:default(?:s)?(?:\s+(?:is|to|value(?:\s+is)?))?\s*[:=]?\s*(?:{quoted}))"
    return re.compile(
        # "(default: 20)" anywhere; ", default is 'x'" or "Defaults to 20." closing a sentence.
        rf"\s*\(\s*{said}\s*\)(?=$|[\s.,;:])|,\s*{said}(?=\s*[.;]?\s*$)|(?:(?<=^)|(?<=[.!?]\s)){said}\.?\s*$",
        re.IGNORECASE,
    )


#: A clause opening like this says when the default applies: the sentence is kept whole.
_CONDITION = re.compile(r"(if|when|unless|otherwise|where|while)\b", re.IGNORECASE)


def _without_default(text: str, value: object) -> str | None:
    pattern = _restating(value)
    if pattern is None:
        return None
    lines = text.split("\n")
    for index, line in enumerate(lines):
        found = pattern.search(line)
        if found is None:
            continue
        sentence = re.split(r"[.!?]\s", line[: found.start()])[-1].strip()
        if found.group().lstrip().startswith(",") and _CONDITION.match(sentence):
            return None  # "If omitted, defaults to 1." says when, not only what
        shorter = (line[: found.start()] + line[found.end() :]).rstrip()
        if line.rstrip().endswith(".") and shorter and shorter[-1] not in ".!?:":
            shorter += "."
        lines[index] = shorter
        cut = "\n".join(lines).strip()
        # A description that was only the default is left whole: an empty one reads oddly.
        return cut if cut else None
    return None


def drop_restated_defaults(tool: Tool, shape: str) -> Rewrite | None:
    dropped: list[str] = []

    def change(node: Schema, path: Path) -> Schema:
        copy = node
        properties = node.get("properties")
        listed_required = node.get("required")
        required = listed_required if isinstance(listed_required, list) else []
        if isinstance(properties, dict):
            trimmed = {}
            for name, sub in properties.items():
                if (
                    isinstance(sub, dict)
                    and "default" in sub
                    and sub["default"] is None
                    and name not in required
                ):
                    dropped.append(f"{dotted((*path, 'properties', name))}.default")
                    sub = {k: v for k, v in sub.items() if k != "default"}
                trimmed[name] = sub
            if trimmed != properties:
                copy = {**copy, "properties": trimmed}
        text = copy.get("description")
        if "default" in copy and isinstance(text, str):
            shorter = _without_default(text, copy["default"])
            if shorter is not None and shorter != text:
                dropped.append(f"{dotted(path)}.description")
                copy = {**copy, "description": shorter}
        title = copy.get("title")
        if (
            isinstance(title, str)
            and title.strip()
            and title.strip() == str(copy.get("description", "")).strip()
        ):
            dropped.append(f"{dotted(path)}.title")
            copy = {k: v for k, v in copy.items() if k != "title"}
        return copy

    return _rewrite(
        tool, shape, change, dropped, "drop what repeats the schema's default or description"
    )
