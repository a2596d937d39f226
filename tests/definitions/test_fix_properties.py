"""Every safe ``toll fix`` rewrite accepts and rejects exactly what the original schema does.

Random schemas are built by a strategy that favours what the rewrites look for (generated
titles, ``anyOf`` with null, ``$comment``, ``$schema``, messy descriptions, repeated
sub-schemas and ``$defs`` entries), with property names that are also keywords (``title``,
``items``, ``properties``). Each schema is checked with jsonschema against random JSON values
and against values drawn to fit the schema.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pytest_toll.definitions.fix import apply_safe_rewrites
from pytest_toll.definitions.fix_edits import SAFE_REWRITES
from pytest_toll.definitions.tools import SHAPE_MCP, Tool

NAMES = ["path", "limit", "user_name", "title", "items", "properties", "from", "Tag List"]
DIALECTS = [
    "http://json-schema.org/draft-07/schema#",
    "https://json-schema.org/draft/2020-12/schema",
    "https://json-schema.org/draft/2019-09/schema",
]
WORDS = st.sampled_from(["a", "b", "Path", "  two  spaces ", "line\n\n\n  indented\t", "x "])
TEXT = st.lists(WORDS, max_size=4).map("".join)

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-5, 105)
    | st.floats(-10, 10, allow_nan=False)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(NAMES) | st.text(max_size=3), inner, max_size=4)
    ),
    max_leaves=8,
)


DEFAULTS: list[Any] = [None, 20, "info", False, 2.0]
#: Descriptions that restate a default (the rewrite may cut them when it is the schema's own).
RESTATING = [
    "Maximum results (default: 20).",
    'Level to return. Defaults to "info".',
    "Whether to include it. Default is false.",
    "If omitted, defaults to 20.",
    "Set the width, default is 2.",
    "(default 20)",
]


def _annotate(schema: dict[str, Any], name: str | None) -> st.SearchStrategy[dict[str, Any]]:
    """Add a title (often the generated one), a description, a $comment and a default
    (often one the description restates), sometimes; sometimes a title equal to the
    description."""
    generated = (name or "x").replace("_", " ").title()

    def echo(extra: dict[str, Any]) -> dict[str, Any]:
        if extra.pop("echo", False) and "description" in extra:
            extra["title"] = extra["description"]
        return {**schema, **extra}

    return st.fixed_dictionaries(
        {},
        optional={
            "title": st.sampled_from([generated, name or "x", "Something else"]),
            "description": TEXT | st.sampled_from(RESTATING),
            "$comment": st.just("for maintainers"),
            "default": st.sampled_from(DEFAULTS),
            "echo": st.booleans(),
        },
    ).map(echo)


leaves: st.SearchStrategy[dict[str, Any]] = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("string")},
        optional={
            "maxLength": st.integers(0, 4),
            "pattern": st.just("^a"),
            "format": st.just("email"),
        },
    ),
    st.fixed_dictionaries(
        {"type": st.sampled_from(["integer", "number"])},
        optional={"minimum": st.integers(0, 3), "maximum": st.integers(50, 100)},
    ),
    st.sampled_from(
        [{"type": "boolean"}, {"type": "null"}, {"enum": ["a", 1, None]}, {"const": 3}]
    ),
    # Keywords that constrain nothing, and one-value enums (1 also matches 1.0, never true).
    st.sampled_from(
        [
            {"type": "string", "minLength": 0},
            {"type": "array", "items": {}, "minItems": 0, "uniqueItems": False},
            {"items": True, "deprecated": False},
            {"type": "object", "properties": {}, "required": []},
            {"additionalProperties": {}, "propertyNames": {"type": "string"}, "minProperties": 0},
            {"patternProperties": {}, "additionalProperties": True, "readOnly": False},
            {"prefixItems": [{"type": "integer"}], "items": True},
            {"enum": ["only"]},
            {"enum": [None]},
            {"type": "integer", "enum": [1]},
            {"enum": [{"a": 1}]},
        ]
    ),
)


NULLABLE_NEIGHBOURS: list[dict[str, Any]] = [
    {},
    {"default": None},
    {"minLength": 1},
    {"type": "string"},
    # additionalProperties reads these: a branch's must not move beside them.
    {"patternProperties": {"^p": {"type": "integer"}}},
    {"properties": {"path": {"type": "integer"}}},
]


def nullables(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """``anyOf: [X, {type: null}]`` in either order, with neighbours that may block a rewrite."""

    def nullable(branch: dict[str, Any], null_first: bool, extra: dict[str, Any]) -> dict[str, Any]:
        branches = [{"type": "null"}, branch] if null_first else [branch, {"type": "null"}]
        return {"anyOf": branches, **extra}

    return st.builds(nullable, inner, st.booleans(), st.sampled_from(NULLABLE_NEIGHBOURS))


TYPED = [
    {"type": "string", "minLength": 2},
    {"type": "string", "pattern": "^a"},
    {"type": "string", "enum": ["a", "abc"]},
    {"type": "integer", "maximum": 3},
    {"type": "number", "minimum": 1},
    {"type": "boolean"},
    {"type": "null"},
    {"type": "array", "items": {"type": "string"}, "minItems": 1},
    {"type": "object", "properties": {"path": {"type": "integer"}}, "additionalProperties": False},
    {"type": ["string", "array"], "minLength": 1},
]


def unions(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    """anyOf/oneOf of typed branches (what ``type-union`` folds, and what it must not: shared
    types, integer with number, an enum beside other branches), sometimes nested in an anyOf,
    with descriptions on branches and around, and neighbours that may block a rewrite."""

    def union(
        key: str,
        branches: list[dict[str, Any]],
        nest: bool,
        said: dict[str, Any],
        extra: dict[str, Any],
    ) -> dict[str, Any]:
        if said.get("branch"):
            branches = [{**b, "description": said["branch"]} for b in branches]
        if nest and key == "anyOf" and len(branches) > 2:
            branches = [{"anyOf": branches[:2]}, *branches[2:]]
        node: dict[str, Any] = {key: branches, **extra}
        if said.get("outer"):
            node["description"] = said["outer"]
        return node

    return st.builds(
        union,
        st.sampled_from(["anyOf", "oneOf"]),
        st.lists(st.sampled_from(TYPED) | inner, min_size=2, max_size=4),
        st.booleans(),
        st.fixed_dictionaries(
            {}, optional={"branch": st.sampled_from(["Said.", "Other."]), "outer": st.just("Said.")}
        ),
        st.sampled_from(NULLABLE_NEIGHBOURS),
    )


def _compound(inner: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    def obj(
        props: dict[str, dict[str, Any]], required: list[str], closed: bool | None
    ) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = [name for name in required if name in props]
        if closed is not None:
            schema["additionalProperties"] = closed
        return schema

    shared = inner.flatmap(
        # One sub-schema used twice: what de-duplication looks for.
        lambda sub: st.lists(st.sampled_from(NAMES), min_size=2, max_size=3, unique=True).map(
            lambda names: obj({name: sub for name in names}, [], None)
        )
    )
    return st.one_of(
        nullables(inner),
        unions(inner),
        st.builds(
            obj,
            st.dictionaries(st.sampled_from(NAMES), inner, max_size=3),
            st.lists(st.sampled_from(NAMES), max_size=2, unique=True),
            st.none() | st.booleans(),
        ),
        st.builds(
            lambda items, least: {"type": "array", "items": items, **least},
            inner,
            st.sampled_from([{}, {"minItems": 1}]),
        ),
        shared,
    )


schemas: st.SearchStrategy[dict[str, Any]] = st.recursive(leaves, _compound, max_leaves=6)


@st.composite
def root_schemas(draw: st.DrawFn) -> dict[str, Any]:
    props = draw(st.dictionaries(st.sampled_from(NAMES), schemas, min_size=1, max_size=4))
    props = {name: draw(_annotate(sub, name)) for name, sub in props.items()}
    root: dict[str, Any] = {"type": "object", "properties": props}
    dialect = draw(st.none() | st.sampled_from(DIALECTS))
    if dialect is not None:
        root["$schema"] = dialect
    if draw(st.booleans()):
        defs_key = "definitions" if dialect == DIALECTS[0] else "$defs"
        entry = draw(schemas)
        names = draw(
            st.lists(st.sampled_from(["Address", "Billing", "Item"]), min_size=1, unique=True)
        )
        root[defs_key] = {name: {**entry, "title": name} for name in names}
        for name in names:
            root["properties"][f"ref_{name}"] = draw(
                st.sampled_from(
                    [
                        {"$ref": f"#/{defs_key}/{name}"},
                        {"anyOf": [{"$ref": f"#/{defs_key}/{name}"}, {"type": "null"}]},
                    ]
                )
            )
    required = draw(st.lists(st.sampled_from(list(root["properties"])), unique=True))
    if required:
        root["required"] = required
    return draw(_annotate(root, "probe tool"))


@st.composite
def nullable_roots(draw: st.DrawFn) -> dict[str, Any]:
    """Roots whose properties are "X or null", one beside each kind of neighbour, X often a
    closed object: the rewrite under test, where it must and must not happen."""
    objects = st.builds(
        lambda props: {"type": "object", "properties": props, "additionalProperties": False},
        st.dictionaries(st.sampled_from(NAMES), leaves, max_size=2),
    )
    branches = objects | leaves | schemas
    properties = {}
    for index, neighbours in enumerate(NULLABLE_NEIGHBOURS):
        branch = draw(branches)
        pair = [{"type": "null"}, branch] if draw(st.booleans()) else [branch, {"type": "null"}]
        properties[f"v{index}"] = {"anyOf": pair, **neighbours}
    return {"type": "object", "properties": properties}


@st.composite
def union_roots(draw: st.DrawFn) -> dict[str, Any]:
    """Roots whose properties are unions of typed branches, some nested, each annotated
    (defaults, restating descriptions): ``type-union`` and ``restated-default`` at work."""
    inner = leaves | unions(leaves)
    properties = {f"u{i}": draw(_annotate(draw(unions(inner)), f"u{i}")) for i in range(4)}
    return {"type": "object", "properties": properties, "required": ["u0"]}


@st.composite
def fitting(draw: st.DrawFn, schema: dict[str, Any], root: dict[str, Any], depth: int = 0) -> Any:
    """A value shaped by the schema (it may still break a constraint: both sides are judged)."""
    if depth > 6:
        return None
    if "$ref" in schema:
        key, name = schema["$ref"].split("/")[1:]
        return draw(fitting(root[key][name], root, depth + 1))
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return draw(fitting(draw(st.sampled_from(schema[key])), root, depth + 1))
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if "const" in schema:
        return schema["const"]
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = draw(st.sampled_from(kind))
    if kind == "object":
        names = draw(
            st.lists(
                st.sampled_from([*schema.get("properties", {}), "extra", "p1"]),
                min_size=1,
                unique=True,
            )
        )
        return {
            name: draw(fitting(schema["properties"][name], root, depth + 1))
            if name in schema.get("properties", {})
            else draw(st.integers(0, 3) | json_values)
            for name in names
        }
    if kind == "array":
        return draw(st.lists(fitting(schema.get("items", {}), root, depth + 1), max_size=3))
    if kind == "string":
        return draw(st.sampled_from(["", "a", "abc", "a@b.c", "zzzzz"]))
    if kind in ("integer", "number"):
        return draw(st.integers(-1, 120) | st.floats(0, 5, allow_nan=False))
    if kind == "boolean":
        return draw(st.booleans())
    return draw(json_values)


PROBES: list[Any] = [None, {}, {"p1": 1}, {"path": "a"}, [], ["a"], "", "abc", 0, 0.5, 2.5, 5, True]


def _verdicts(schema: dict[str, Any], instances: list[Any]) -> list[bool]:
    from jsonschema.validators import validator_for

    cls = validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    return [validator.is_valid(instance) for instance in instances]


@pytest.mark.parametrize(
    "roots",
    [
        root_schemas(),
        nullable_roots(),
        # Some 12 s: the unions' instances are many and deep.
        pytest.param(union_roots(), marks=pytest.mark.slow, id="unions"),
    ],
    ids=["any", "nullable", "unions"],
)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_safe_rewrite_keeps_what_the_schema_accepts(
    roots: st.SearchStrategy[dict[str, Any]], data: st.DataObject
) -> None:
    schema = data.draw(roots, label="schema")
    instances = data.draw(
        st.lists(fitting(schema, schema), min_size=8, max_size=8).flatmap(
            lambda fit: st.lists(json_values, max_size=4).map(lambda rand: fit + rand)
        ),
        label="instances",
    )
    # And, under every property, each kind of value once: cheap, and it reaches the corners
    # random draws reach rarely (a key only patternProperties knows, a null, a wrong type).
    instances += [{name: probe} for name in schema["properties"] for probe in PROBES]
    tool = Tool(name="probe_tool", description="Probe.  ", input_schema=schema, raw={})
    expected = _verdicts(schema, instances)
    edited = [(kind, rewrite(tool, SHAPE_MCP)) for kind, rewrite in SAFE_REWRITES]
    every = apply_safe_rewrites(tool, SHAPE_MCP)
    for kind, after in [*((k, r.tool) for k, r in edited if r is not None), ("all", every)]:
        new = dict(after.parameters)
        event(f"rewritten: {kind}")
        assert _verdicts(new, instances) == expected, (kind, new)
        assert after.name == tool.name
        assert list(new["properties"]) == list(schema["properties"]), kind
        # An empty required list names nothing: dropping it is the one change allowed.
        assert (new.get("required") or []) == (schema.get("required") or []), kind
