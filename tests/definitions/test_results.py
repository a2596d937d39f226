"""Tool results gated at the source (issue #37 item 1), against a real MCP SDK server process
(tests/servers/results_server.py) over stdio: only the tools a ledger entry names are called,
several samples give the largest and the p90, and the R1xx rules judge each result."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.tokens import O200kCounter
from pytest_toll.definitions.mcp.calling import call_server
from pytest_toll.definitions.results import ResultCost, parse_specs, result_text
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import measure_servers_entry

SERVER = Path(__file__).resolve().parents[1] / "servers" / "results_server.py"
COMMAND = [sys.executable, str(SERVER)]


def _entry(results: dict[str, Any]) -> dict[str, Any]:
    return {"command": COMMAND, "results": results}


@pytest.mark.slow
def test_each_named_result_is_measured_and_pinned_beside_the_definitions(tmp_path: Path) -> None:
    logs = [{"lines": 5}, {"lines": 40}, {"lines": 10}]
    entry = _entry(
        {
            "log": {"tool": "read_log", "arguments": logs},
            "list_pages": {"arguments": {"topic": "all"}},
        }
    )
    measured = measure_servers_entry("notes", entry, EntryContext(tmp_path))
    detail = measured.detail or {}
    log = detail["results"]["log"]
    counter = O200kCounter()
    expected = [
        counter.count(
            "\n".join(
                f"2026-12-01T10:{i % 60:02d}:00 GET /notes 200" for i in range(sample["lines"])
            )
        )
        for sample in logs
    ]
    assert log["samples"] == expected
    assert log["max"] == max(expected) and log["p90"] == max(expected)  # nearest rank of 3
    assert measured.other_pins == {
        "results.log.pin": max(expected),
        "results.list_pages.pin": detail["results"]["list_pages"]["max"],
    }
    assert measured.other_budgets["results.log.pin"] == "results.log.budget"
    # The paged list hands back a next cursor: no R102. Nothing else was called.
    assert not [f for f in measured.findings if str(f["rule"]).startswith("R")]
    assert not (tmp_path / "wiped.txt").exists()


@pytest.mark.slow
def test_the_rules_judge_each_result(tmp_path: Path) -> None:
    body = "The release moves to Thursday because the migration needs a second review."
    entry = _entry(
        {
            "notes": {"tool": "list_notes", "arguments": {"topic": "all"}},
            "save": {"tool": "save_note", "arguments": {"title": "release", "body": body}},
            "log": {"tool": "read_log", "arguments": {"lines": 200}},
        }
    )
    measured = measure_servers_entry("notes", entry, EntryContext(tmp_path, window=20_000))
    by_rule = {(f["rule"], f["subject"]): f for f in measured.findings}
    assert "list_notes has no way to page" in by_rule[("R102", "notes")]["message"]
    assert "lists 30 items" in by_rule[("R102", "notes")]["message"]
    assert "repeats the argument body back" in by_rule[("R103", "save")]["message"]
    assert "of the 20,000 window (over 5%" in by_rule[("R101", "log")]["message"]
    assert ("R101", "notes") not in by_rule and ("R102", "log") not in by_rule


@pytest.mark.slow
def test_a_share_and_a_list_size_are_limits_and_a_rule_can_be_turned_off(tmp_path: Path) -> None:
    entry = _entry({"notes": {"tool": "list_notes", "arguments": {"topic": "all"}}})
    entry["rules"] = {"R102": "off"}
    context = EntryContext(tmp_path, limits={"result_window_share": 0.5}, window=1000)
    found = measure_servers_entry("notes", entry, context).findings
    assert [f["rule"] for f in found if str(f["rule"]).startswith("R")] == []


@pytest.mark.slow
def test_a_tool_the_server_does_not_list_is_never_called(tmp_path: Path) -> None:
    with pytest.raises(CouldNotJudge, match=r"no tool named erase in its tools/list.*nothing was"):
        call_server([("wipe", [{}]), ("erase", [{}])], command=COMMAND, cwd=tmp_path)
    assert not (tmp_path / "wiped.txt").exists()  # listed, but the call never started


def test_a_malformed_results_row_names_its_key() -> None:
    with pytest.raises(UsageError, match=r"servers.x.results.a.arguments: must be a mapping"):
        parse_specs({"a": {"arguments": [1]}}, "servers.x.results")
    with pytest.raises(UsageError, match=r"servers.x.results.a.tool: must be the name"):
        parse_specs({"a": {"tool": ""}}, "servers.x.results")
    assert parse_specs({"read_log": {}}, "r")[0].tool == "read_log"


def test_what_a_result_costs_is_what_a_host_puts_in_the_context() -> None:
    image = {"type": "image", "data": "AAAA", "mimeType": "image/png"}
    text = result_text({"content": [{"type": "text", "text": "hello"}, image]})
    assert text == "hello\n" + json.dumps(image, sort_keys=True)
    assert result_text({"content": [], "structuredContent": {"a": 1}}) == '{"a": 1}'
    assert ResultCost("x", "t", (5, 1, 9, 3, 7, 2, 8, 4, 6, 10)).p90 == 9


@pytest.mark.slow
def test_the_gate_pins_a_result_and_fails_when_it_grows(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.plugin.inner import QUIET

    monkeypatch.chdir(pytester.path)
    ledger = pytester.path / "toll.yaml"
    command = json.dumps(COMMAND)
    ledger.write_text(
        "version: 1\nservers:\n  notes:\n"
        f"    command: {command}\n"
        "    results:\n"
        "      log: {tool: read_log, arguments: [{lines: 3}, {lines: 6}], budget: 400}\n",
        encoding="utf-8",
    )
    first = pytester.runpytest("--toll", "toll.yaml", "--toll-update", *QUIET)
    assert first.ret == 0, first.stdout.str()
    written = ledger.read_text(encoding="utf-8")
    pinned = measure_servers_entry(
        "notes",
        {"command": COMMAND, "results": {"log": {"tool": "read_log", "arguments": [{"lines": 6}]}}},
        EntryContext(pytester.path),
    ).other_pins["results.log.pin"]
    assert f"budget: 400, pin: {pinned}}}" in written  # the largest sample, in its row
    ledger.write_text(written.replace("lines: 6", "lines: 9"), encoding="utf-8")
    grown = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert grown.ret == 1
    grown.stdout.fnmatch_lines(["*results.log.pin*"])
    assert not (pytester.path / "wiped.txt").exists()


@pytest.mark.slow
def test_toll_results_prints_what_a_sample_costs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_toll.cli import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "toll.yaml").write_text(
        f"version: 1\nwindow: 200000\nservers:\n  notes:\n    command: {json.dumps(COMMAND)}\n",
        encoding="utf-8",
    )
    body = "The release moves to Thursday because the migration needs a second review."
    arguments = json.dumps({"title": "release", "body": body})
    assert main(["results", "--server", "notes", "--tool", "save_note", "--args", arguments]) == 0
    out = capsys.readouterr().out
    expected = O200kCounter().count(f"Saved the note 'release':\n{body}")
    assert out.startswith(f"notes.save_note (save_note): {expected} tok (o200k)\n")
    assert "R103 warn notes.save_note: its result repeats the argument body back" in out
    logs = ["--args", '{"lines": 2}', "--args", '{"lines": 50}', "--json"]
    assert main(["results", "--server", "notes", "--tool", "read_log", *logs]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["max"] == max(data["samples"]) and len(data["samples"]) == 2
    assert main(["results", "--server", "nope", "--tool", "read_log"]) == 2
    assert "no such servers: entry (the ledger has: notes)" in capsys.readouterr().err
    assert not (tmp_path / "wiped.txt").exists()


@pytest.mark.slow
def test_init_proposes_no_calls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_toll.cli import main

    monkeypatch.chdir(tmp_path)
    servers = {"mcpServers": {"notes": {"command": COMMAND[0], "args": COMMAND[1:]}}}
    (tmp_path / ".mcp.json").write_text(json.dumps(servers), encoding="utf-8")
    assert main(["init"]) == 0
    capsys.readouterr()
    written = (tmp_path / "toll.yaml").read_text(encoding="utf-8")
    assert "\n  notes:\n" in written and "results:" not in written
    assert not (tmp_path / "wiped.txt").exists()
