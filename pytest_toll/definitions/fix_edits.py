"""The catalogue of ``toll fix`` rewrites: pure functions from one tool to an edited copy.

A *safe* rewrite keeps the input schema's JSON Schema meaning — the edited schema accepts
exactly the instances the original accepts (tests/definitions/test_fix_properties.py checks
this with jsonschema on random schemas) — and never changes a tool name, a property name or a
``required`` list. Which keywords are touched, and why:

- ``title`` is an annotation. Only *generated* titles go: a property's title that repeats its
  name (case, space, hyphen and underscore ignored), a ``$defs`` entry's that repeats the
  entry's name, the root's that repeats the tool name (optionally + Arguments/Input/Params/…,
  as pydantic/FastMCP write it). A title that says something else stays.
- ``$comment`` is written for schema authors; no model is meant to read it. It goes.
- ``$schema`` picks the dialect. MCP (and jsonschema's ``validator_for``) read a schema
  without one as 2020-12, so it goes only when the schema means the same under 2020-12: it
  names draft-07, 2019-09 or 2020-12, and (for the older two) uses no keyword whose meaning
  changed (array ``items``, ``additionalItems``, ``dependencies``, ``$ref`` beside assertions,
  ``$id``, and the 2019+ keywords draft-07 ignores).
- ``examples``, ``default``, ``description``, ``format``, ``deprecated``, ``readOnly`` and
  ``writeOnly`` are read by models: kept. ``additionalProperties`` and every assertion: kept.
- ``anyOf: [{type: X, …}, {type: "null"}]`` (either order) becomes ``type: [X, "null"]``
  when the non-null branch holds only ``type`` and keywords that apply to X alone (so a null
  passes them either way), and the schema around it has no ``type`` or those keywords.
- Descriptions: trailing spaces go, runs of spaces/tabs inside a line become one, the common
  indentation of a docstring's later lines goes, more than one blank line becomes one. Line
  breaks and the relative indentation of lists and code stay.
- Sub-schemas that are identical (compared with keys sorted) are written once: repeated
  ``$defs`` entries become one (references rewritten), a repeated inline object becomes a
  ``$defs`` entry and ``$ref``s to it. Only when every ``$ref`` in the schema is a plain
  ``#/$defs/NAME`` (or ``#/definitions/NAME``), and no ``$id``/anchor changes a base URI.

More safe rewrites (no-op keywords, unions of plain types, one-value enums, restated
defaults) are in ``fix_tidy``; ``SAFE_REWRITES`` below orders them all.

*Advice* edits (``advice_*``) change meaning or wording; they are measured the same way but
need a human, and are never written.
"""

from __future__ import annotations

import json
import re
import textwrap
from collections.abc import Callable, Mapping
from typing import Any

from pytest_toll.definitions import fix_tidy
from pytest_toll.definitions.fix_walk import DEFS_KEYS as DEFS_KEYS
from pytest_toll.definitions.fix_walk import MAP_KEYS, PLAIN_REF, nullable_parts
from pytest_toll.definitions.fix_walk import Path as Path
from pytest_toll.definitions.fix_walk import Rewrite as Rewrite
from pytest_toll.definitions.fix_walk import Schema as Schema
from pytest_toll.definitions.fix_walk import dotted as dotted
from pytest_toll.definitions.fix_walk import edited as edited
from pytest_toll.definitions.fix_walk import listed as listed
from pytest_toll.definitions.fix_walk import rebuild as rebuild
from pytest_toll.definitions.fix_walk import walk as walk
from pytest_toll.definitions.tools import Tool

# --- safe: generated titles -----------------------------------------------------------------


def _plain(text: str) -> str:
    return re.sub(r"[\s_\-]+", "", text).lower()


_ROOT_TITLE_SUFFIXES = ("", "arguments", "args", "input", "params", "parameters", "request")


def _generated_title(title: str, path: Path, tool_name: str) -> bool:
    plain = _plain(title)
    if not path:
        return any(plain == _plain(tool_name) + suffix for suffix in _ROOT_TITLE_SUFFIXES)
    if len(path) >= 2 and path[-2] in ("properties", *DEFS_KEYS):
        return plain == _plain(str(path[-1]))
    return False


def drop_generated_titles(tool: Tool, shape: str) -> Rewrite | None:
    dropped: list[str] = []

    def change(node: Schema, path: Path) -> Schema:
        title = node.get("title")
        if isinstance(title, str) and _generated_title(title, path, tool.name):
            dropped.append(dotted(path))
            return {key: value for key, value in node.items() if key != "title"}
        return node

    schema = rebuild(tool.parameters, change)
    if not dropped:
        return None
    what = f"drop {len(dropped)} generated title(s) that repeat a name: {listed(dropped)}"
    return Rewrite(edited(tool, shape, schema=schema), what)


# --- safe: $schema and $comment ------------------------------------------------------------

_DIALECTS_SAFE_TO_DROP = {
    "json-schema.org/draft-07/schema": "draft-07",
    "json-schema.org/draft/2019-09/schema": "2019-09",
    "json-schema.org/draft/2020-12/schema": "2020-12",
}
# Keywords that mean something else (or nothing) before 2020-12.
_CHANGED_SINCE_DRAFT7 = {
    "additionalItems",
    "dependencies",
    "$id",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$recursiveRef",
    "$recursiveAnchor",
    "prefixItems",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedItems",
    "unevaluatedProperties",
    "minContains",
    "maxContains",
}
ANNOTATIONS = {"title", "description", "$comment", "examples", "default", "deprecated"}


def _dialect(value: object) -> str | None:
    if not isinstance(value, str):
        return None
    key = re.sub(r"^https?://", "", value).rstrip("#")
    return _DIALECTS_SAFE_TO_DROP.get(key)


def _means_the_same_in_2020(schema: Mapping[str, Any]) -> bool:
    for _, node in walk(schema):
        if _CHANGED_SINCE_DRAFT7 & node.keys() or isinstance(node.get("items"), list):
            return False
        # Before 2019-09 a $ref hides its siblings; since, they apply too.
        if "$ref" in node and not node.keys() <= {"$ref", *ANNOTATIONS}:
            return False
    return True


def drop_unused_annotations(tool: Tool, shape: str) -> Rewrite | None:
    dropped: list[str] = []
    dialect = _dialect(tool.parameters.get("$schema"))
    drop_schema = dialect == "2020-12" or (
        dialect is not None and _means_the_same_in_2020(tool.parameters)
    )

    def change(node: Schema, path: Path) -> Schema:
        gone = {"$comment"} if isinstance(node.get("$comment"), str) else set()
        if not path and drop_schema:
            gone.add("$schema")
        if not gone:
            return node
        dropped.extend(f"{dotted(path)}.{key}" if path else key for key in sorted(gone))
        return {key: value for key, value in node.items() if key not in gone}

    schema = rebuild(tool.parameters, change)
    if not dropped:
        return None
    return Rewrite(edited(tool, shape, schema=schema), f"drop {listed(dropped)}")


# --- safe: anyOf with null --------------------------------------------------------------------


def nullable_as_type(tool: Tool, shape: str) -> Rewrite | None:
    if any(
        "unevaluatedProperties" in n or "unevaluatedItems" in n for _, n in walk(tool.parameters)
    ):
        return None  # evaluation annotations travel differently through anyOf
    rewritten: list[str] = []

    def change(node: Schema, path: Path) -> Schema:
        found = nullable_parts(node)
        if found is None:
            return node
        json_type, rest = found
        rewritten.append(dotted(path))
        copy: Schema = {}
        for key, value in node.items():
            if key == "anyOf":
                copy["type"] = [json_type, "null"]
                copy.update(rest)
            else:
                copy[key] = value
        return copy

    schema = rebuild(tool.parameters, change)
    if not rewritten:
        return None
    what = f'rewrite {len(rewritten)} anyOf [X, null] as type [X, "null"]: {listed(rewritten)}'
    return Rewrite(edited(tool, shape, schema=schema), what)


# --- safe: whitespace in descriptions -----------------------------------------------------------


def squash_whitespace(text: str) -> str:
    """Trailing spaces, inner runs, a docstring's common indentation and extra blank lines
    removed; line breaks and relative indentation kept."""
    first, _, rest = text.strip().partition("\n")
    lines = [first.strip(), *textwrap.dedent(rest).split("\n")] if rest else [first.strip()]
    lines = [re.sub(r"(?<=\S)[ \t]{2,}", " ", line.rstrip()) for line in lines]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def squash_description_whitespace(tool: Tool, shape: str) -> Rewrite | None:
    squashed: list[str] = []
    description = None
    if tool.description is not None and squash_whitespace(tool.description) != tool.description:
        description = squash_whitespace(tool.description)
        squashed.append("description")

    def change(node: Schema, path: Path) -> Schema:
        text = node.get("description")
        if not isinstance(text, str) or squash_whitespace(text) == text:
            return node
        squashed.append(f"{dotted(path)}.description" if path else "parameters.description")
        return {**node, "description": squash_whitespace(text)}

    schema = rebuild(tool.parameters, change)
    if not squashed:
        return None
    new_schema = schema if len(squashed) > (description is not None) else None
    what = f"collapse whitespace in {len(squashed)} description(s): {listed(squashed)}"
    return Rewrite(edited(tool, shape, description=description, schema=new_schema), what)


# --- safe: identical sub-schemas written once ---------------------------------------------------


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _pointer_name(name: str) -> str:
    return name.replace("~", "~0").replace("/", "~1")


def _dedupe_blocked(schema: Mapping[str, Any]) -> bool:
    for _, node in walk(schema):
        ref = node.get("$ref")
        if ref is not None and not (isinstance(ref, str) and PLAIN_REF.match(ref)):
            return True
        if {"$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$dynamicRef"} & node.keys():
            return True
    return "$ref" in schema


def _at(schema: Mapping[str, Any], path: Path) -> Any:
    node: Any = schema
    for part in path:
        node = node[part]
    return node


def _replace_at(node: Any, path: Path, value: object) -> Any:
    """A copy of ``node`` with the value at ``path`` replaced (containers on the way copied)."""
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy: Any = list(node) if isinstance(node, list) else dict(node)
    copy[head] = _replace_at(node[head], rest, value)
    return copy


def _rename_refs(schema: Schema, renames: Mapping[str, str]) -> Schema:
    def change(node: Schema, path: Path) -> Schema:
        ref = node.get("$ref")
        if isinstance(ref, str) and ref in renames:
            return {**node, "$ref": renames[ref]}
        return node

    return rebuild(schema, change)


def _defs_key(schema: Mapping[str, Any]) -> str:
    for key in DEFS_KEYS:
        if isinstance(schema.get(key), dict):
            return key
    dialect = schema.get("$schema")
    return (
        "$defs" if dialect is None or _dialect(dialect) in ("2019-09", "2020-12") else "definitions"
    )


def _words(name: str) -> list[str]:
    return [word.capitalize() for word in re.findall(r"[A-Za-z][a-z0-9]*|[0-9]+", name)]


def _new_name(paths: list[Path], taken: set[str], subschema: Mapping[str, Any]) -> str:
    """A name for a new ``$defs`` entry: its title when that is a plain word, else the words
    the places it is used at end with alike (``billing_address``, ``shipping_address`` →
    ``Address``), else the first place's name."""
    title = subschema.get("title")
    base = title if isinstance(title, str) and re.fullmatch(r"[A-Za-z0-9_]+", title) else ""
    if not base:
        names = [[p for p in path if isinstance(p, str) and p not in MAP_KEYS] for path in paths]
        words = [_words(named[-1]) if named else [] for named in names]
        common: list[str] = []
        while (
            all(len(w) > len(common) for w in words)
            and len({tuple(w[len(w) - len(common) - 1 :]) for w in words}) == 1
        ):
            common = words[0][len(words[0]) - len(common) - 1 :]
        base = "".join(common or words[0])
    base = base or "Shared"
    name, suffix = base, 2
    while name in taken:
        name, suffix = f"{base}{suffix}", suffix + 1
    return name


def _one_dedupe(schema: Schema) -> tuple[Schema, str] | None:
    """Write the largest repeated sub-schema once, or None when nothing repeats."""
    seen: dict[str, list[Path]] = {}
    for path, node in walk(schema):
        # A bare reference is already as short as a repeat gets.
        if path and not (node.keys() <= {"$ref"}):
            seen.setdefault(_canonical(node), []).append(path)
    repeats = [(text, paths) for text, paths in seen.items() if len(paths) > 1]
    # Nested copies of a repeat repeat too; the outermost (longest) goes first.
    repeats.sort(key=lambda item: (-len(item[0]), item[0]))
    key = _defs_key(schema)
    for text, paths in repeats:
        entries = [p for p in paths if len(p) == 2 and p[0] == key]
        inline = [p for p in paths if p not in entries]
        if entries:
            target = str(entries[0][1])
            extra_entries, new_entry = entries[1:], None
        else:
            taken = set(schema.get(key) or {})
            target = _new_name(paths, taken, _at(schema, paths[0]))
            extra_entries, new_entry = [], _at(schema, paths[0])
        reference = f"#/{key}/{_pointer_name(target)}"
        # Long enough that a reference is shorter than a copy (tokens are measured later).
        ref_text = len(_canonical({"$ref": reference}))
        cost_now = len(text) * len(inline)
        cost_after = ref_text * len(inline) + (len(text) + len(target) + 4 if new_entry else 0)
        if not extra_entries and (not inline or cost_after >= cost_now):
            continue
        edited_schema = schema
        for path in sorted(inline, key=len, reverse=True):
            edited_schema = _replace_at(edited_schema, path, {"$ref": reference})
        assert isinstance(edited_schema, dict)
        defs = dict(edited_schema.get(key) or {})
        renames = {}
        for path in extra_entries:
            name = str(path[1])
            defs.pop(name)
            renames[f"#/{key}/{_pointer_name(name)}"] = reference
        if new_entry is not None:
            defs[target] = new_entry
        edited_schema = {**edited_schema, key: defs}
        edited_schema = _rename_refs(edited_schema, renames)
        where = [dotted(p) for p in [*inline, *extra_entries]]
        return edited_schema, f"{listed(where, 2)} → {key}.{target}"
    return None


def dedupe_subschemas(tool: Tool, shape: str) -> Rewrite | None:
    schema: Schema = dict(tool.parameters)
    if _dedupe_blocked(schema):
        return None
    done: list[str] = []
    for _ in range(50):  # each round removes at least one copy; a bound all the same
        step = _one_dedupe(schema)
        if step is None:
            break
        schema, what = step
        done.append(what)
    if not done:
        return None
    what = f"write {len(done)} repeated sub-schema(s) once: " + "; ".join(done[:2])
    return Rewrite(edited(tool, shape, schema=schema), what + ("; …" if len(done) > 2 else ""))


#: The safe rewrites, in the order ``--write`` applies them (the later ones see the
#: earlier ones' output: titles gone, two ``$defs`` entries may become identical).
SAFE_REWRITES: tuple[tuple[str, Callable[[Tool, str], Rewrite | None]], ...] = (
    ("drop-titles", drop_generated_titles),
    ("drop-annotations", drop_unused_annotations),
    ("nullable-type", nullable_as_type),
    ("squash-whitespace", squash_description_whitespace),
    ("drop-no-ops", fix_tidy.drop_no_ops),
    ("type-union", fix_tidy.union_as_type),
    ("enum-const", fix_tidy.enum_as_const),
    ("restated-default", fix_tidy.drop_restated_defaults),
    ("dedupe-subschemas", dedupe_subschemas),
)
