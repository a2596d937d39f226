"""An output format is one renderer and one row of ``report.outputs.OUTPUTS``: the plugin's
option and ini twin, the resolved settings, ``toll merge`` and ``toll github outputs`` all
come from the table. Proved by adding a row in the test and using it through every door."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pytest_toll.cli import github as github_verb
from pytest_toll.cli import merge as merge_verb
from pytest_toll.report.data import ReportDict
from pytest_toll.report.outputs import OUTPUTS, Output, RenderContext, Rendered
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

LEDGER = """\
version: 1
servers:
  files:
    tools_file: tools.json
"""
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file from disk and return its text. Use when you need its text.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]


def render_node_ids(report: ReportDict, path: Path, context: RenderContext) -> list[Rendered]:
    """A new format: every judged node id and its outcome, one a line, and the ledger."""
    lines = [f"{entry['nodeid']} {entry['outcome']}" for entry in report.get("entries", [])]
    text = "\n".join([f"ledger {context.ledger_file}", *lines]) + "\n"
    return [Rendered("the node id list", path, text)]


@pytest.fixture
def one_more_row(monkeypatch: pytest.MonkeyPatch) -> Output:
    row = Output("nodeids", "write the judged node ids", render_node_ids, on_merge=True)
    monkeypatch.setitem(OUTPUTS, row.name, row)
    return row


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (pytester.path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    return pytester


def test_every_row_is_a_plugin_option_with_an_ini_twin(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*QUIET, "--help")
    help_text = result.stdout.str()
    for output in OUTPUTS.values():
        assert f"{output.flag}=PATH" in help_text, output.name
        assert f"{output.ini_name} (string):" in help_text, output.name


def test_a_new_row_is_an_option_an_ini_twin_and_a_written_file(
    project: pytest.Pytester, one_more_row: Output
) -> None:
    # The option alone turns --toll on and writes the file, relative to the invocation.
    result = project.runpytest(*QUIET, f"{one_more_row.flag}=out/ids.txt")
    assert result.ret == 0, result.stdout.str()
    assert (project.path / "out" / "ids.txt").read_text(encoding="utf-8") == (
        "ledger toll.yaml\ntoll.yaml::servers::files new\n"
    )
    # The ini twin names a path relative to the ini file.
    project.makeini(f"[pytest]\n{one_more_row.ini_name} = from-ini/ids.txt\n")
    result = project.runpytest(*QUIET, "--toll")
    assert result.ret == 0, result.stdout.str()
    assert (
        (project.path / "from-ini" / "ids.txt")
        .read_text(encoding="utf-8")
        .startswith("ledger toll.yaml\n")
    )


def test_a_new_row_reaches_toll_merge_and_the_github_outputs_step(one_more_row: Output) -> None:
    merge = argparse.ArgumentParser()
    merge_verb.configure(merge)
    parsed = merge.parse_args(["shard-1.json", "--nodeids", "merged.txt"])
    assert parsed.nodeids == Path("merged.txt")
    outputs = argparse.ArgumentParser()
    github_verb.configure(outputs)
    parsed = outputs.parse_args(["outputs", "--exit-code", "0", "--nodeids", "ids.txt"])
    assert parsed.nodeids == "ids.txt"


def test_toll_merge_offers_exactly_the_rows_written_on_merge() -> None:
    merge = argparse.ArgumentParser()
    merge_verb.configure(merge)
    options = {action.dest for action in merge._actions}
    for output in OUTPUTS.values():
        assert (output.name in options) == output.on_merge, output.name
