"""``toll fix``: each rewrite on its own, golden plans for SDK-shaped tool lists, ``--write``
measured by ``toll weigh``, and a real MCP SDK server through ``-- COMMAND``."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.cli import main
from pytest_toll.definitions.fix import candidates, plan_fixes
from pytest_toll.definitions.fix_edits import (
    dedupe_subschemas,
    drop_generated_titles,
    drop_unused_annotations,
    nullable_as_type,
    squash_description_whitespace,
    squash_whitespace,
)
from pytest_toll.definitions.tools import SHAPE_MCP, SHAPE_OPENAI, Tool, load_tools_file
from pytest_toll.definitions.weigh import weigh

TOOLS = Path(__file__).parents[1] / "fixtures" / "tools"
GOLDEN = TOOLS / "golden"
SERVERS = Path(__file__).parents[1] / "servers"
FIXTURES = ["pydantic_server", "zod_server", "openapi_tools"]


def tool(schema: dict[str, Any], name: str = "probe", description: str | None = "Probe.") -> Tool:
    element: dict[str, Any] = {"name": name, "inputSchema": schema}
    if description is not None:
        element["description"] = description
    return Tool(name=name, description=description, input_schema=schema, raw=element)


# --- the rewrites, one by one -----------------------------------------------------------------


def test_generated_titles_go_and_other_titles_stay() -> None:
    schema: dict[str, Any] = {
        "title": "probeArguments",
        "type": "object",
        "properties": {
            "user_name": {"title": "User Name", "type": "string"},
            "title": {"title": "Title", "type": "string"},  # a property called title
            "mode": {"title": "How to run", "type": "string"},
        },
        "$defs": {"Point": {"title": "Point", "type": "object"}},
    }
    result = drop_generated_titles(tool(schema), SHAPE_MCP)
    assert result is not None
    assert result.tool.input_schema == {
        "type": "object",
        "properties": {
            "user_name": {"type": "string"},
            "title": {"type": "string"},
            "mode": {"title": "How to run", "type": "string"},
        },
        "$defs": {"Point": {"type": "object"}},
    }
    assert result.tool.raw["inputSchema"] is result.tool.input_schema
    assert result.what == (
        "drop 4 generated title(s) that repeat a name: properties.user_name, "
        "properties.title, $defs.Point, … (+1)"
    )
    assert schema["properties"]["title"] == {"title": "Title", "type": "string"}  # not mutated


def test_schema_goes_only_where_2020_12_reads_it_the_same() -> None:
    draft7 = "http://json-schema.org/draft-07/schema#"
    plain = {"$schema": draft7, "type": "object", "$comment": "x", "properties": {}}
    result = drop_unused_annotations(tool(plain), SHAPE_MCP)
    assert result is not None
    assert result.tool.input_schema == {"type": "object", "properties": {}}
    assert result.what == "drop $comment, $schema"
    # Under draft-07 a $ref hides its siblings; under 2020-12 they apply.
    hiding = {"$schema": draft7, "properties": {"a": {"$ref": "#/definitions/A", "type": "string"}}}
    assert drop_unused_annotations(tool(hiding), SHAPE_MCP) is None
    tuple_items = {"$schema": draft7, "items": [{"type": "string"}]}
    assert drop_unused_annotations(tool(tuple_items), SHAPE_MCP) is None
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object"}
    assert drop_unused_annotations(tool(draft4), SHAPE_MCP) is None
    examples = {"type": "string", "examples": ["a"], "default": "a"}
    assert drop_unused_annotations(tool(examples), SHAPE_MCP) is None


def test_nullable_any_of_becomes_a_type_list() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "b": {"anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "string"}}]},
            "c": {"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "null"}]},
            "d": {"anyOf": [{"$ref": "#/$defs/D"}, {"type": "null"}]},
            "e": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "minimum": 0},
            "f": {
                "anyOf": [{"type": "object", "additionalProperties": False}, {"type": "null"}],
                "patternProperties": {"^x": {}},
            },
        },
    }
    result = nullable_as_type(tool(schema), SHAPE_MCP)
    assert result is not None
    properties = result.tool.parameters["properties"]
    assert properties["a"] == {"type": ["string", "null"], "default": None}
    assert properties["b"] == {"type": ["array", "null"], "items": {"type": "string"}}
    # enum would refuse null; a $ref is not a type; a keyword on both sides cannot merge;
    # additionalProperties would start to read the patternProperties beside it.
    for kept in "cdef":
        assert properties[kept] == schema["properties"][kept]


def test_whitespace_in_descriptions() -> None:
    assert squash_whitespace("Read  a file.   \n\n\n    Args:\n        path: where  \n") == (
        "Read a file.\n\nArgs:\n    path: where"
    )
    assert squash_whitespace("- one\n  - nested\n\ttab") == "- one\n  - nested\n\ttab"
    schema = {"type": "object", "properties": {"p": {"type": "string", "description": "x  y "}}}
    result = squash_description_whitespace(tool(schema, description="Go.  "), SHAPE_OPENAI)
    assert result is not None
    assert result.tool.description == "Go."
    assert result.tool.raw["description"] == "Go."
    assert result.tool.parameters["properties"]["p"]["description"] == "x y"


def test_repeated_sub_schemas_are_written_once() -> None:
    address = {
        "type": "object",
        "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        "required": ["street", "city"],
    }
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {"billing_address": address, "shipping_address": dict(address)},
        "required": ["billing_address"],
    }
    result = dedupe_subschemas(tool(schema), SHAPE_MCP)
    assert result is not None
    assert result.tool.input_schema == {
        "type": "object",
        "properties": {
            "billing_address": {"$ref": "#/$defs/Address"},
            "shipping_address": {"$ref": "#/$defs/Address"},
        },
        "required": ["billing_address"],
        "$defs": {"Address": address},
    }
    twins = {
        "$defs": {"A": address, "B": dict(address)},
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/B"}},
    }
    merged = dedupe_subschemas(tool(twins), SHAPE_MCP)
    assert merged is not None
    assert merged.tool.input_schema == {
        "$defs": {"A": address},
        "properties": {"a": {"$ref": "#/$defs/A"}, "b": {"$ref": "#/$defs/A"}},
    }
    # A pointer into properties (zod-to-json-schema's default) could break: left alone.
    relative = {**schema, "properties": {**schema["properties"], "x": {"$ref": "#/properties/a"}}}
    assert dedupe_subschemas(tool(relative), SHAPE_MCP) is None


# --- plans on SDK-shaped tool lists -------------------------------------------------------------


@pytest.mark.parametrize("name", FIXTURES)
def test_golden_plan(name: str) -> None:
    tools, shape = load_tools_file(TOOLS / f"{name}.json")
    report = plan_fixes(tools, shape=shape, target=name).as_dict()
    golden = json.loads((GOLDEN / f"{name}.fix.json").read_text())
    assert {key: report[key] for key in golden} == golden
    savings = [suggestion["saving"] for suggestion in report["suggestions"]]
    assert savings == sorted(savings, reverse=True) and all(saving > 0 for saving in savings)


@pytest.mark.parametrize("name", FIXTURES)
def test_written_tools_weigh_exactly_after(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = TOOLS / f"{name}.json"
    out = tmp_path / "fixed.json"
    assert main(["fix", "--tools", str(source), "--json", "--write", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert main(["weigh", "--tools", str(out), "--json"]) in (0, 1)
    weighed = json.loads(capsys.readouterr().out)
    assert report["after"] == weighed["totals"]["claude"]
    assert report["before"] == weigh(load_tools_file(source)[0]).claude
    original, original_shape = load_tools_file(source)
    fixed, fixed_shape = load_tools_file(out)
    assert fixed_shape == original_shape
    assert [t.name for t in fixed] == [t.name for t in original]
    for before, after in zip(original, fixed):
        assert list(after.parameters.get("properties", {})) == list(
            before.parameters.get("properties", {})
        )
        assert after.parameters.get("required") == before.parameters.get("required")
        assert after.annotations == before.annotations


@pytest.mark.parametrize("name", FIXTURES)
def test_each_saving_is_the_weighed_difference(name: str) -> None:
    tools, shape = load_tools_file(TOOLS / f"{name}.json")
    before = weigh(tools).claude
    savings = {s.id: s.saving for s in plan_fixes(tools, shape=shape).suggestions}
    edits = candidates(tools, shape)
    assert {edit.id for edit in edits} >= set(savings)
    for edit in edits:
        measured = before - weigh(edit.applied(tools)).claude
        assert savings.get(edit.id, 0) == max(measured, 0), edit.id


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="ab_<>/\n\u2028 é", min_size=1, max_size=8),
            st.none() | st.text(max_size=30),
            st.dictionaries(st.text(max_size=5), st.text(max_size=10), max_size=3),
        ),
        min_size=2,
        max_size=5,
    ),
    st.data(),
)
def test_one_tool_changes_the_total_by_its_own_segment(
    elements: list[tuple[str, str | None, dict[str, str]]], data: st.DataObject
) -> None:
    """The claim plan_fixes' measurement rests on, for any text: replacing one tool changes
    the weighed claude total by exactly the change of that tool's own segment."""
    from pytest_toll.definitions.fix import _segment_tokens

    tools = [Tool(name=n, description=d, input_schema={"properties": p}) for n, d, p in elements]
    index = data.draw(st.integers(0, len(tools) - 1))
    other = data.draw(st.text(max_size=40))
    changed = Tool(name=tools[index].name, description=other, input_schema={})
    copy = [*tools[:index], changed, *tools[index + 1 :]]
    removed = [*tools[:index], *tools[index + 1 :]]
    before = weigh(tools).claude
    assert before - weigh(copy).claude == _segment_tokens(tools[index]) - _segment_tokens(changed)
    assert before - weigh(removed).claude == _segment_tokens(tools[index])


def test_a_real_sdk_server_through_a_command(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "fixed.json"
    server = [sys.executable, str(SERVERS / "sdk_server.py")]
    assert main(["fix", "--json", "--write", str(out), "--", *server]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["kind"] == "fix"
    ids = {s["id"]: s for s in report["suggestions"]}
    assert {"drop-titles:read_file", "drop-titles:write_file", "drop-titles:search"} <= set(ids)
    assert all(s["safe"] for k, s in ids.items() if k.startswith("drop-titles:"))
    assert json.loads(out.read_text()).keys() == {"tools"}  # a tools/list result, as listed
    assert main(["weigh", "--tools", str(out), "--json"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["totals"]["claude"] == report["after"]
    assert report["after"] < report["before"]


def test_the_human_report(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fix", "--tools", str(TOOLS / "zod_server.json")]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:5] == [
        f"toll fix: {TOOLS / 'zod_server.json'}",
        "  claude total (o200k): 737 → 673 with every safe edit (-64 tok, -8.7%)",
        "",
        "saves  kind    edit  (o200k tokens, each on its own)",
        "   16  safe    drop-annotations:create_issue",
    ]
    assert out.rstrip().endswith(
        "safe edits keep each schema's meaning; --write OUT writes them all"
    )


def test_could_not_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["fix", "--tools", str(tmp_path / "missing.json")]) == 2
    assert "missing.json" in capsys.readouterr().err
    empty = tmp_path / "empty.json"
    empty.write_text("[]")
    assert main(["fix", "--tools", str(empty)]) == 2
    assert "lists no tools" in capsys.readouterr().err
    assert main(["fix", "--", sys.executable, "-c", "import sys; sys.exit(3)"]) == 2
    assert capsys.readouterr().err.startswith("toll: error:")
    assert main(["fix"]) == 2
    assert "exactly one source" in capsys.readouterr().err
    assert main(["fix", "--tools", str(empty), "--header", "A=b"]) == 2
    assert "--header applies to --url" in capsys.readouterr().err


def test_the_demo_readme_shows_what_toll_fix_says() -> None:
    demo = Path(__file__).parents[2] / "examples" / "demo"
    done = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "fix", "--", sys.executable, "notes_server.py"],
        cwd=demo,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    readme = " ".join((demo / "README.md").read_text().split())
    assert f"`{lines[1].strip()}`" in readme
    assert f"`{lines[3]}`".startswith("`nothing to fix") and "`nothing to fix`" in readme


def test_a_real_sdk_server_over_http_with_a_header(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = [sys.executable, str(SERVERS / "sdk_server.py")]
    process = subprocess.Popen(
        [*server, "--http", "--expect-header", "Authorization=Bearer s3cret"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        url = f"http://127.0.0.1:{process.stdout.readline().strip()}/mcp"
        monkeypatch.setenv("TOLL_TEST_TOKEN", "s3cret")
        header = "Authorization=Bearer ${TOLL_TEST_TOKEN}"
        assert main(["fix", "--url", url, "--header", header, "--json"]) == 0
        over_http = json.loads(capsys.readouterr().out)
        assert main(["fix", "--json", "--", *server]) == 0
        over_stdio = json.loads(capsys.readouterr().out)
        # The same tools, whichever transport listed them.
        assert over_http["suggestions"] == over_stdio["suggestions"]
        assert (over_http["before"], over_http["after"]) == (
            over_stdio["before"],
            over_stdio["after"],
        )
        assert main(["fix", "--url", url]) == 2  # no header: the server answers 401
        assert "401" in capsys.readouterr().err
    finally:
        process.terminate()
        process.communicate(timeout=10)


def test_a_tool_that_writes_is_never_merged_with_one_that_reads() -> None:
    # Issue #25: toll fix suggested merging a writing tool into a reading one.
    described = "Work with a file in the project folder: its path is relative to the root."
    schema = {"type": "object", "properties": {"path": {"type": "string"}}}
    pairs = [
        (tool(schema, "read_file", described), tool(schema, "write_file", described)),
        (tool(schema, "get_notes", described), tool(schema, "set_notes", described)),
    ]
    for first, second in pairs:
        found = [c for c in candidates([first, second], SHAPE_MCP) if c.id.startswith("near")]
        assert found == [], (first.name, second.name)
    # Annotations decide over the name: both declared read-only, they may be merged.
    read_only = {"readOnlyHint": True}
    alike = [
        Tool("read_file", described, schema, annotations=read_only),
        Tool("read_files", described, schema, annotations=read_only),
    ]
    assert [c.id for c in candidates(alike, SHAPE_MCP) if c.id.startswith("near")] == [
        "near-duplicate:read_file+read_files"
    ]
    written = Tool("read_file", described, schema, annotations={"readOnlyHint": False})
    reading = Tool("read_files", described, schema, annotations=read_only)
    assert [c for c in candidates([written, reading], SHAPE_MCP) if c.id.startswith("near")] == []
