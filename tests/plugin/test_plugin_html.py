"""``--toll-html`` / ``toll_html``: the controller writes the page once, from the report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"
SCHEMA = ROOT / "pytest_toll" / "data" / "report.schema.json"

LEDGER = """\
version: 1
servers:
  files:
    tools_file: tools.json
    budget: 900
    pin: 10
"""
TOOLS = (
    '[{"name": "read_file", "description": "Read a file & return <its> text.", '
    '"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]'
)


@pytest.mark.parametrize("workers", [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)])
def test_the_ini_setting_writes_one_page_with_the_regression_first(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    pytester.makefile(".yaml", toll=LEDGER)
    pytester.makefile(".json", tools=TOOLS)
    pytester.makeini("[pytest]\ntoll_html = out/page.html\n")
    result = pytester.runpytest_subprocess("--toll", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(failed=1)
    page = (pytester.path / "out" / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.index("REGRESSED") < page.index("Servers: tools by claude tokens")
    assert ">read_file</tspan>" in page
    # Not a git repository: the page simply has no trend section.
    assert "Pin trends" not in page
    assert "could not write" not in result.stdout.str()


DETAIL_LEDGER = """\
version: 1
servers:
  files:
    tools_file: tools.json
transcripts:
  roots: [transcripts]
  decide_above_tokens: 500
  decisions:
    Read: {status: keep, reason: reading files is the job}
"""


@pytest.mark.parametrize("workers", [[], pytest.param(["-n", "2"], marks=pytest.mark.slow)])
def test_the_json_report_carries_the_tool_split_and_the_transcript_shapes(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    jsonschema = pytest.importorskip("jsonschema")
    shutil.copytree(DEMO / "transcripts", pytester.path / "transcripts")
    pytester.makefile(".yaml", toll=DETAIL_LEDGER)
    pytester.makefile(".json", tools=TOOLS)
    result = pytester.runpytest_subprocess(
        "--toll", "-p", "no:cacheprovider", "--toll-json", "toll.json",
        "--toll-html", "page.html", *workers,
    )  # fmt: skip
    result.assert_outcomes(passed=2)
    report = json.loads((pytester.path / "toll.json").read_text(encoding="utf-8"))
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator(schema).validate(report)
    by_kind = {entry["kind"]: entry for entry in report["entries"]}

    servers = by_kind["servers"]
    split = servers["detail"]["tools"]["read_file"]
    assert set(split) == {"description", "schema", "output_schema"}
    assert split["description"] > 0 and split["schema"] > 0 and split["output_schema"] == 0
    # The split is shown, never pinned: the part stays the tool's whole claude total.
    assert [part["name"] for part in servers["parts"]] == ["read_file"]
    assert split["description"] + split["schema"] < servers["parts"][0]["measured"]

    shapes = by_kind["transcripts"]["detail"]["shapes"]
    assert 0 < len(shapes) <= 20
    ok_tokens = [shape["ok_tokens"] for shape in shapes]
    assert ok_tokens == sorted(ok_tokens, reverse=True)
    assert sum(ok_tokens) <= by_kind["transcripts"]["measured"]
    assert all(shape["calls"] >= sum(shape["by_outcome"].values()) > 0 for shape in shapes)
    assert shapes[0]["shape"].startswith("Read")

    page = (pytester.path / "page.html").read_text(encoding="utf-8")
    assert (
        f"description {split['description']:,}, schema {split['schema']:,}, output schema 0" in page
    )
    assert "<h2>Transcript shapes</h2>" in page
    assert f">{shapes[0]['shape']}</text>" in page
