"""The gate in a real repository: it never passes while checking nothing, and it behaves as
pytest users expect (serial and under xdist)."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from pytest_toll.definitions.mcp.process import resolve_program
from tests.plugin.inner import QUIET
from tests.plugin.test_plugin import LEDGER, READ, TESTS, WRITE, summary

pytest_plugins = ["pytester"]

WORKERS = [
    pytest.param([], id="serial"),
    pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow),
]
SERVERS = Path(__file__).parents[1] / "servers"


def run(pytester: pytest.Pytester, workers: list[str], *args: str) -> pytest.RunResult:
    if workers:
        pytest.importorskip("xdist")
        return pytester.runpytest_subprocess(*QUIET, *workers, *args)
    return pytester.runpytest(*QUIET, *args)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "tools.json").write_text(json.dumps([READ, WRITE]), encoding="utf-8")
    (pytester.path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    pytester.makepyfile(test_agent=TESTS)
    return pytester


# --- 1. no ledger is not a pass ---------------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_no_ledger_is_a_usage_error_and_an_update_creates_it(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(test_agent=TESTS)
    missing = run(pytester, workers, "--toll")
    assert missing.ret == pytest.ExitCode.USAGE_ERROR
    missing.stderr.fnmatch_lines(
        [
            f"ERROR: --toll: no ledger at {pytester.path / 'toll.yaml'} (at the rootdir)*",
            "*`toll init` writes a starter toll.yaml*",
            "*`pytest --toll --toll-update` seeds pins*",
        ]
    )
    assert not (pytester.path / "toll.yaml").exists()
    # --toll --toll-update seeds it.
    run(pytester, workers, "--toll", "--toll-update").assert_outcomes(passed=2)
    assert (pytester.path / "toll.yaml").read_text() == (
        "version: 1\ntests:\n  test_agent.py::test_prompt: {pin: 6}\n"
    )
    run(pytester, workers, "--toll").assert_outcomes(passed=2)


def test_a_misnamed_ledger_is_named_in_the_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "toll.yml").write_text("version: 1\n")
    result = run(pytester, [], "--toll")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*found toll.yml beside it: rename it to toll.yaml, or pass --toll-ledger toll.yml"]
    )


def test_without_toll_a_missing_ledger_changes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_agent=TESTS)
    run(pytester, []).assert_outcomes(passed=2)


# --- 2. the update and output options imply --toll --------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_update_and_outputs_imply_toll(project: pytest.Pytester, workers: list[str]) -> None:
    ledger = project.path / "toll.yaml"
    updated = run(project, workers, "--toll-update", "--toll-json", "toll.json")
    updated.assert_outcomes(passed=3)
    assert "    pin: 121\n" in ledger.read_text()
    report = json.loads((project.path / "toll.json").read_text())
    assert report["counts"]["new"] == 2
    assert report["update"] is True
    # --toll-strict alone turns the gate on too, and fails on nothing here.
    run(project, workers, "--toll-strict").assert_outcomes(passed=3)


def test_ini_outputs_do_not_turn_the_gate_on(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\ntoll_json = toll.json\ntoll_strict = true\n")
    result = run(project, [])
    result.assert_outcomes(passed=2)
    assert not (project.path / "toll.json").exists()
    assert "toll summary" not in result.stdout.str()


# --- 3. what fails shows as failed ------------------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_stale_and_unpinned_entries_fail_as_items_under_strict(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(test_a="def test_kept(toll):\n    toll.text('a', 'one two')\n")
    (pytester.path / "toll.yaml").write_text(
        "tests:\n  test_a.py::test_kept: {pin: 2}\n  test_a.py::test_gone: {pin: 5}\n"
        "  test_removed.py::test_x: {pin: 1}\n"
    )
    loose = run(pytester, workers, "--toll")
    loose.assert_outcomes(passed=3)
    assert loose.ret == pytest.ExitCode.OK
    strict = run(pytester, workers, "--toll", "--toll-strict", "-rA", "--junitxml", "junit.xml")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.assert_outcomes(passed=1, failed=2)
    strict.stdout.fnmatch_lines(["3 entries: 2 failed, 1 passed (1 ok, 2 stale)"])
    for line in (
        "FAILED toll.yaml::stale::tests::test_a.py::test_gone*",
        "FAILED toll.yaml::stale::tests::test_removed.py::test_x*",
        "PASSED test_a.py::test_kept",
    ):
        strict.stdout.fnmatch_lines([line])
    suite = ElementTree.parse(pytester.path / "junit.xml").getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("3", "2")
    # A new test with no pin fails under --toll-strict too, as its own test.
    (pytester.path / "test_a.py").write_text(
        "def test_kept(toll):\n    toll.text('a', 'one two')\n\n"
        "def test_gone(toll):\n    toll.text('a', 'one two three four five')\n\n"
        "def test_new(toll):\n    toll.text('a', 'one')\n"
    )
    (pytester.path / "test_removed.py").write_text("def test_x(toll):\n    toll.text('a', 'x')\n")
    new = run(pytester, workers, "--toll", "--toll-strict")
    new.assert_outcomes(passed=3, failed=1)
    new.stdout.fnmatch_lines(["*_ test_new _*", "not pinned, and --toll-strict fails on it*"])


# --- issue 13 A2: an update drops only the pins of tests that no longer exist -----------

PINNED = """\
import os
import pytest

def test_measured(toll):
    toll.text("a", "one two")

@pytest.mark.skipif(True, reason="not on this machine")
def test_skipped(toll):
    toll.text("a", "one two")

@pytest.fixture
def broken():
    raise RuntimeError("the fixture failed")

def test_fixture_errors(toll, broken):
    toll.text("a", "one two")

def test_fails(toll):
    toll.text("a", "one two")
    assert False
"""
PINNED_LEDGER = """\
tests:
  test_pinned.py::test_measured: {pin: 9}
  test_pinned.py::test_skipped: {pin: 9}
  test_pinned.py::test_fixture_errors: {pin: 9}
  test_pinned.py::test_fails: {pin: 9}
  test_pinned.py::test_renamed: {pin: 9}
  ignored/test_ignored.py::test_x: {pin: 9}
  broken/test_import.py::test_y: {pin: 9}
  crash/test_crash.py::test_z: {pin: 9}
  test_deleted.py::test_w: {pin: 9}
"""


@pytest.mark.parametrize("workers", WORKERS)
def test_a_full_update_keeps_pins_of_tests_that_exist_but_did_not_measure(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytester.makepyfile(test_pinned=PINNED)
    for folder, name, body in (
        ("ignored", "test_ignored.py", "def test_x(toll):\n    toll.text('a', 'x')\n"),
        ("broken", "test_import.py", "import no_such_module\n\ndef test_y():\n    pass\n"),
    ):
        (pytester.path / folder).mkdir()
        (pytester.path / folder / name).write_text(body)
    ledger = pytester.path / "toll.yaml"
    ledger.write_text(PINNED_LEDGER)
    args = ["--toll-update", "--ignore", "ignored", "--continue-on-collection-errors"]
    if workers:
        # A worker that dies in the middle of a test: its pin stays.
        (pytester.path / "crash").mkdir()
        (pytester.path / "crash" / "test_crash.py").write_text(
            "import os\n\ndef test_z(toll):\n    os._exit(1)\n"
        )
        args += ["--max-worker-restart", "1"]
    result = run(pytester, workers, "--toll", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = ledger.read_text()
    expected = PINNED_LEDGER.replace("test_measured: {pin: 9}", "test_measured: {pin: 2}")
    # Gone: the renamed test (its file was collected without it) and the deleted file.
    expected = expected.replace("  test_pinned.py::test_renamed: {pin: 9}\n", "")
    expected = expected.replace("  test_deleted.py::test_w: {pin: 9}\n", "")
    if not workers:
        # Serially there is no crash folder: its file does not exist, so its pin goes.
        expected = expected.replace("  crash/test_crash.py::test_z: {pin: 9}\n", "")
    assert text == expected
    lines = summary(result)
    kept = next(line for line in lines if line.startswith("not measured in this run"))
    for label in ("test_skipped", "test_fixture_errors", "test_ignored.py", "test_import.py"):
        assert label in kept


# --- 8. JUnit properties and summary numbers --------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_junit_properties_are_numbers_and_json(
    project: pytest.Pytester, workers: list[str]
) -> None:
    run(project, workers, "--toll", "--toll-update")
    run(project, workers, "--toll", "--junitxml", "junit.xml").assert_outcomes(passed=3)
    root = ElementTree.parse(project.path / "junit.xml").getroot()
    properties = {
        case.get("name"): {
            str(prop.get("name")): str(prop.get("value")) for prop in case.iter("property")
        }
        for case in root.iter("testcase")
    }
    assert properties["files"]["toll_tokens"] == "121"
    assert json.loads(properties["files"]["toll"]) == {
        "outcome": "passed",
        "failed": False,
        "measured": 121,
        "pin": 121,
        "budget": 4000,
        "method": "o200k",
    }
    assert properties["test_prompt"]["toll_tokens"] == "6"
    assert json.loads(properties["test_prompt"]["toll"])["outcome"] == "passed"
    assert properties["test_plain"] == {}
    assert "findings" not in (project.path / "junit.xml").read_text()


def test_improvements_count_a_server_once(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_weighs="def test_weighs(toll):\n    toll.tools('tools.json')\n",
    )
    run(project, [], "--toll", "--toll-update").assert_outcomes(passed=4)
    (project.path / "tools.json").write_text(
        json.dumps([READ, {**WRITE, "description": "Write."}]), encoding="utf-8"
    )
    improved = run(project, [], "--toll")
    improved.assert_outcomes(passed=4)
    # The server's tools shrank by 4 tok; the test that weighs them is counted as a test.
    assert (
        summary(improved)[-1] == "improved by 4 tok, 1 test improved — ratchet with --toll-update"
    )


# --- 9. the fixed cost is never a wrong number ------------------------------------------


@pytest.mark.parametrize("workers", WORKERS)
def test_a_partial_run_says_so_and_the_badge_shows_partial(
    project: pytest.Pytester, workers: list[str]
) -> None:
    result = run(project, workers, "--toll", "test_agent.py", "--toll-badge", "badge.svg")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "fixed cost per request (server definitions + skill metadata): ≥ 0 tok (o200k), "
            "~0.00% of a 1,000,000 window (partial run: servers::files not measured)"
        ]
    )
    endpoint = json.loads((project.path / "badge.json").read_text())
    assert (endpoint["message"], endpoint["color"]) == ("partial", "lightgrey")


def test_an_error_makes_the_badge_say_error(project: pytest.Pytester) -> None:
    (project.path / "toll.yaml").write_text(LEDGER + "  lost: {tools_file: missing.json}\n")
    result = run(project, [], "--toll", "--toll-badge", "badge.svg")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*: ≥ 121 tok (o200k), *(servers::lost could not be measured)"])
    endpoint = json.loads((project.path / "badge.json").read_text())
    assert (endpoint["message"], endpoint["color"]) == ("error", "red")


# --- 10. ini options have types ---------------------------------------------------------


def test_ini_options_are_typed(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest(*QUIET, "--help")
    result.stdout.fnmatch_lines(["*toll_strict (bool):*"])
    if pytest.version_tuple >= (8, 4):
        result.stdout.fnmatch_lines(["*toll_window (int):*", "*toll_tolerance (int):*"])
    pytester.makeini("[pytest]\ntoll_window = lots\n")
    (pytester.path / "toll.yaml").write_text("version: 1\n")
    bad = pytester.runpytest(*QUIET, "--toll")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["ERROR: toll_window in */tox.ini: *lots*"])


# --- 5. `python` means this Python ------------------------------------------------------


@pytest.mark.skipif(sys.platform == "win32", reason="the stand-in python is a shell script")
@pytest.mark.parametrize("workers", WORKERS)
def test_a_bare_python_command_runs_under_this_python(
    pytester: pytest.Pytester, workers: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A `python` first on PATH that is not this one (it only fails).
    fake = pytester.path / "fakebin"
    fake.mkdir()
    (fake / "python").write_text("#!/bin/sh\necho 'the wrong python' >&2\nexit 7\n")
    (fake / "python").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}{os.pathsep}{os.environ.get('PATH', '')}")
    server = SERVERS / "raw_server.py"
    (pytester.path / "toll.yaml").write_text(
        f"servers:\n  env:\n    command: [python, {json.dumps(str(server))}, env]\n"
        "    env: {TOLL_TEST_VALUE: '42'}\n"
    )
    result = run(pytester, workers, "--toll")
    result.assert_outcomes(passed=1)


# --- 7. the fixture meets the SDKs where users are --------------------------------------


SDK_TESTS = f"""
import sys

sys.path.insert(0, {str(SERVERS)!r})
import sdk_server


def test_server_object(toll):
    server = sdk_server.build(sdk_server.parse([]))
    report = toll.tools(server)
    assert [row.name for row in report.tools] == ["read_file", "write_file", "search"]
    assert report.target == "toll-test-server"
    assert report.instructions


def test_server_object_inside_an_event_loop(toll):
    import asyncio

    async def in_a_loop():
        return toll.tools(sdk_server.build(sdk_server.parse([]))).claude

    assert asyncio.run(in_a_loop()) == toll.records[0].tokens


def test_tool_models_weigh_as_their_wire_dicts(toll):
    import anyio

    server = sdk_server.build(sdk_server.parse([]))
    models = anyio.run(server.list_tools)
    dicts = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in models]
    assert toll.tools(models).claude == toll.tools(dicts).claude == toll.tools(server).claude


def test_anthropic_and_openai_dicts(toll):
    anthropic = [{{"name": "ping", "description": "Ping.", "input_schema": {{"type": "object"}}}}]
    openai = [{{"type": "function", "function": {{"name": "ping", "description": "Ping.",
              "parameters": {{"type": "object"}}}}}}]
    assert toll.tools(anthropic).claude == toll.tools(openai).claude


def test_a_server_that_cannot_start(toll):
    toll.tools({{"command": [sys.executable, "-c", "import sys; sys.exit(3)"], "timeout": 10}})
"""


@pytest.mark.parametrize("workers", WORKERS)
def test_toll_tools_takes_sdk_servers_and_models(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    pytest.importorskip("mcp")
    pytester.makepyfile(test_sdk=SDK_TESTS)
    (pytester.path / "toll.yaml").write_text("version: 1\n")
    result = run(pytester, workers, "--toll")
    result.assert_outcomes(passed=4, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_a_server_that_cannot_start _*",
            "toll: could not measure: * exited with code 3 before answering (initialize)*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "weigh_source" not in result.stdout.str()


def test_a_bare_python_is_resolved_and_a_path_is_not() -> None:
    for bare in ("python", "python3", "python3.12", "python.exe"):
        assert resolve_program([bare, "server.py"]) == [sys.executable, "server.py"]
    for kept in ("/usr/bin/python3", "pythonic", "py", "node"):
        assert resolve_program([kept, "server.py"]) == [kept, "server.py"]
    assert resolve_program([]) == []
