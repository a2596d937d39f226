"""``pytest --toll`` end to end with pytester: seed, regress, improve, ratchet, errors."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import jsonschema
import pytest

from pytest_toll.report.data import SCHEMA_PATH
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

READ = {
    "name": "read_file",
    "description": "Read a file from disk and return its text. Use when you need file contents.",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string", "description": "file path"}},
    },
}
WRITE = {
    "name": "write_file",
    "description": "Write text to a file.",
    "inputSchema": {
        "type": "object",
        "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
    },
}
LEDGER = """\
# the ledger of this project
version: 1
servers:
  files:
    tools_file: tools.json  # the server's tools, as a file
    budget: 4000  # a human ceiling
"""
TESTS = """\
import pytest

@pytest.mark.toll(budget=100)
def test_prompt(toll):
    toll.text("system", "You are a helpful assistant.")

def test_plain():
    pass
"""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


def write_tools(pytester: pytest.Pytester, write_description: object) -> None:
    tools = [READ, {**WRITE, "description": write_description}]
    (pytester.path / "tools.json").write_text(json.dumps(tools), encoding="utf-8")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    write_tools(pytester, WRITE["description"])
    (pytester.path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def summary(result: pytest.RunResult) -> list[str]:
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "toll summary" in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("=")), len(lines))
    return [line for line in lines[start + 1 : end] if line]


SEEDED = LEDGER + (
    "    pin: 121\n"
    "    tools:\n"
    "      read_file: 57\n"
    "      write_file: 48\n"
    "tests:\n"
    "  test_agent.py::test_prompt: {pin: 6}\n"
)


def test_seed_regress_improve_ratchet(project: pytest.Pytester) -> None:
    ledger = project.path / "toll.yaml"
    seeded = run(project, "--toll", "--toll-update")
    seeded.assert_outcomes(passed=3)
    assert summary(seeded) == [
        "     entry                              measured  pin  budget  change  method",
        "new  servers::files                          121    -   4,000       -  o200k",
        "new  tests::test_agent.py::test_prompt         6    -     100       -  o200k",
        "servers::files: E122 warn write_file: description misses 4 of 4: length 40–600 chars "
        "(is 21); when to use it; what its parameters mean; what it returns",
        "fixed cost per request (server definitions + skill metadata): 121 tok (o200k), "
        "~0.01% of a 1,000,000 window",
        "2 entries: 2 passed (2 new)",
        "ledger updated: toll.yaml",
        "  servers::files: new pin 121",
        "  tests::test_agent.py::test_prompt: new pin 6",
    ]
    assert ledger.read_text() == SEEDED

    # Nothing changed: a second update leaves the file byte-identical.
    again = run(project, "--toll", "--toll-update")
    again.assert_outcomes(passed=3)
    assert "ledger updated" not in again.stdout.str()
    assert ledger.read_text() == SEEDED

    # A longer description: the gate fails with the diff, and the ledger is not touched.
    write_tools(project, "Write text to a file, replacing the old content completely and forever.")
    regressed = run(project, "--toll")
    regressed.assert_outcomes(passed=2, failed=1)
    assert regressed.ret == pytest.ExitCode.TESTS_FAILED
    regressed.stdout.fnmatch_lines(
        [
            "*_ servers::files _*",
            "regressed by 8 tok against the pin 121",
            "  measured  pin  budget  delta  method",
            "       129  121   4,000     +8  o200k",
            "  biggest changes:",
            "    part        measured  pin  delta",
            "    write_file        56   48     +8",
            "FAILED toll.yaml::servers::files*",
        ]
    )
    assert ledger.read_text() == SEEDED
    # --toll-update alone never raises a pin.
    run(project, "--toll", "--toll-update").assert_outcomes(passed=2, failed=1)
    assert ledger.read_text() == SEEDED

    # Shorter than the pin: passes, and says how to ratchet.
    write_tools(project, "Write text.")
    improved = run(project, "--toll")
    improved.assert_outcomes(passed=3)
    lines = summary(improved)
    assert (
        lines[1]
        == "improved  servers::files                          118  121   4,000      -3  o200k"
    )
    assert lines[-1] == "improved by 3 tok — ratchet with --toll-update"
    assert ledger.read_text() == SEEDED

    # The ratchet: the pin drops, the comments and human fields survive.
    ratcheted = run(project, "--toll", "--toll-update")
    ratcheted.assert_outcomes(passed=3)
    # Every pin written is named: the tool's beside the total (#36 item 1).
    assert summary(ratcheted)[-3:] == [
        "ledger updated: toll.yaml",
        "  servers::files: pin 121 → 118",
        "  servers::files: write_file 48 → 45",
    ]
    assert ledger.read_text() == SEEDED.replace("pin: 121", "pin: 118").replace(
        "write_file: 48", "write_file: 45"
    )


def test_allow_increase_raises_the_pin(project: pytest.Pytester) -> None:
    run(project, "--toll", "--toll-update").assert_outcomes(passed=3)
    write_tools(project, "Write text to a file, replacing the old content completely and forever.")
    raised = run(project, "--toll", "--toll-update", "--toll-allow-increase")
    raised.assert_outcomes(passed=3)
    raised.stdout.fnmatch_lines(["REGRESSED  servers::files *129  121   4,000      +8  o200k"])
    text = (project.path / "toll.yaml").read_text()
    assert "    pin: 129\n" in text
    assert "      write_file: 56\n" in text
    usage = run(project, "--toll", "--toll-allow-increase")
    assert usage.ret == pytest.ExitCode.USAGE_ERROR
    usage.stderr.fnmatch_lines(["*--toll-allow-increase only applies with --toll-update*"])


def test_json_report_matches_its_schema(project: pytest.Pytester) -> None:
    run(project, "--toll", "--toll-update", "--toll-json", "out/toll.json")
    report = json.loads((project.path / "out" / "toll.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    entry = report["entries"][0]
    assert {key: entry[key] for key in ("kind", "name", "nodeid", "line", "measured", "pin")} == {
        "kind": "servers",
        "name": "files",
        "nodeid": "toll.yaml::servers::files",
        "line": 4,
        "measured": 121,
        "pin": None,
    }
    assert entry["ratchet"] == {"from": None, "to": 121}
    assert entry["parts"] == [
        {"name": "read_file", "measured": 57, "pin": None, "delta": None},
        {"name": "write_file", "measured": 48, "pin": None, "delta": None},
    ]
    assert report["counts"]["new"] == 2
    assert report["ledger_written"] is True


@pytest.mark.parametrize(
    ("ledger", "message"),
    [
        (
            "servers:\n  files:\n    tools_file: tools.json\n    budgt: 3\n",
            "ERROR: */toll.yaml:4: servers.files.budgt: unknown key (expected one of: *",
        ),
        (
            "servers:\n  files:\n    tools_file: tools.json\n    tools_file: other.json\n",
            "ERROR: */toll.yaml:4: servers.files.tools_file: duplicate key (first at line 3)",
        ),
        ("servers:\n  files: {tools_file: [\n", "ERROR: */toll.yaml:3: invalid YAML: *"),
    ],
)
def test_a_broken_ledger_is_a_usage_error(
    project: pytest.Pytester, ledger: str, message: str
) -> None:
    (project.path / "toll.yaml").write_text(ledger)
    result = run(project, "--toll")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_without_toll_the_ledger_is_not_read(project: pytest.Pytester) -> None:
    (project.path / "toll.yaml").write_text("not: [valid\n")
    project.makeconftest(
        """
        import sys

        def pytest_sessionfinish():
            assert "tiktoken" not in sys.modules
            assert "ruamel.yaml" not in sys.modules
        """
    )
    project.makepyfile(test_agent="def test_plain():\n    pass\n")
    result = project.runpytest_subprocess(*QUIET)
    result.assert_outcomes(passed=1)
    assert "toll summary" not in result.stdout.str()


def test_a_dead_server_is_an_error_not_a_pass(project: pytest.Pytester) -> None:
    (project.path / "dead_server.py").write_text("import sys\nsys.exit(3)\n")
    (project.path / "toll.yaml").write_text(
        "servers:\n"
        f"  dead: {{command: [{json.dumps(sys.executable)}, dead_server.py], pin: 100, timeout: 10}}\n"
        "  lost: {tools_file: missing.json}\n"
    )
    result = run(project, "--toll", "--toll-update")
    result.assert_outcomes(passed=2, failed=2)
    lines = summary(result)
    assert lines[1].split() == ["ERROR", "servers::dead", "-", "100", "-", "-", "-"]
    assert lines[2].split() == ["ERROR", "servers::lost", "-", "-", "-", "-", "-"]
    result.stdout.fnmatch_lines(
        [
            "*_ servers::dead _*",
            "* dead_server.py: exited with code 3 before answering (initialize)*",
            "*_ servers::lost _*",
            "*/missing.json: no such file",
        ]
    )
    # The fixed cost leaves out what could not be measured, and says so.
    assert lines[-4:-2] == [
        "fixed cost per request (server definitions + skill metadata): ≥ 0 tok (o200k), "
        "~0.00% of a 1,000,000 window (servers::dead, servers::lost could not be measured)",
        "3 entries: 2 failed, 1 passed (2 errors, 1 new)",
    ]
    # An error is never pinned.
    assert "pin: 100, timeout: 10}" in (project.path / "toll.yaml").read_text()


def test_partial_runs_keep_entries_and_full_runs_report_stale(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_two="""
        def test_one(toll):
            toll.text("a", "one two three")

        def test_two(toll):
            toll.text("b", "four five")
        """
    )
    ledger = pytester.path / "toll.yaml"
    run(pytester, "--toll", "--toll-update").assert_outcomes(passed=2)
    seeded = ledger.read_text()
    assert seeded == (
        "version: 1\ntests:\n  test_two.py::test_one: {pin: 3}\n  test_two.py::test_two: {pin: 2}\n"
    )
    # Rename a test and run only part of the suite: nothing is stale, nothing removed.
    pytester.makepyfile(
        test_two="""
        def test_one(toll):
            toll.text("a", "one two")

        def test_three(toll):
            toll.text("b", "four five")
        """
    )
    partial = run(pytester, "--toll", "--toll-update", "-k", "one")
    # The stale entry is an item of its own (toll.yaml::stale::…), deselected by -k too.
    partial.assert_outcomes(passed=1, deselected=2)
    assert not any(line.startswith("stale") for line in summary(partial))
    assert ledger.read_text() == seeded.replace("test_one: {pin: 3}", "test_one: {pin: 2}")
    # A full run reports the stale entry; --toll-strict fails on it.
    full = run(pytester, "--toll")
    full.assert_outcomes(passed=3)
    assert full.ret == pytest.ExitCode.OK
    assert ["stale", "tests::test_two.py::test_two", "-", "2", "-", "-", "-"] in [
        line.split() for line in summary(full)
    ]
    # Under --toll-strict the stale entry and the unpinned test fail as items: pytest's
    # counts, the toll summary and the exit code agree.
    strict = run(pytester, "--toll", "--toll-strict", "-rf")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.assert_outcomes(passed=1, failed=2)
    strict.stdout.fnmatch_lines(
        [
            "3 entries: 2 failed, 1 passed (1 ok, 1 new, 1 stale)",
            "FAILED test_two.py::test_three - Failed: not pinned, and --toll-strict *",
            "FAILED toll.yaml::stale::tests::test_two.py::test_two*",
        ]
    )
    # A full update removes the pin-only stale entry and pins the new test.
    run(pytester, "--toll", "--toll-update").assert_outcomes(passed=3)
    assert ledger.read_text() == (
        "version: 1\ntests:\n  test_two.py::test_one: {pin: 2}\n  test_two.py::test_three: {pin: 2}\n"
    )


def test_marker_budget(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_budget="""
        import pytest

        @pytest.mark.toll(budget=2)
        def test_over(toll):
            toll.text("prompt", "one two three four")

        @pytest.mark.toll(budget=2)
        def test_nothing_measured():
            pass

        @pytest.mark.toll(budget=10)
        def test_under(toll):
            assert toll.text("prompt", "one two") == 2

        def test_unbudgeted_without_a_measurement(toll):
            pass

        def test_unbudgeted_failing(toll):
            toll.text("prompt", "one")
            assert False
        """
    )
    (pytester.path / "toll.yaml").write_text("version: 1\n")
    result = run(pytester, "--toll")
    result.assert_outcomes(passed=2, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*_ test_over _*",
            "4 tok is over the budget of 2 by 2",
            "*_ test_nothing_measured _*",
            "marked toll(budget=…) but measured nothing: measure with the toll fixture",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    # Only budgeted or measured tests get a row; a failing unbudgeted test is not judged.
    assert [line.split()[:2] for line in summary(result)[1:4]] == [
        ["ERROR", "tests::test_budget.py::test_nothing_measured"],
        ["OVER", "BUDGET"],
        ["new", "tests::test_budget.py::test_under"],
    ]


@pytest.mark.parametrize("value", ["'many'", "-1", "True"])
def test_a_bad_marker_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makepyfile(
        test_bad=f"""
        import pytest

        @pytest.mark.toll(budget={value})
        def test_x():
            pass
        """
    )
    result = run(
        pytester,
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: test_bad.py::test_x: @pytest.mark.toll(budget=…): must be a whole number *"]
    )


def test_ledger_outside_testpaths_is_collected_once(project: pytest.Pytester) -> None:
    tests = project.path / "tests"
    tests.mkdir()
    (project.path / "test_agent.py").rename(tests / "test_agent.py")
    project.makeini("[pytest]\ntestpaths = tests\n")
    collected = run(project, "--toll", "--co", "-q")
    collected.stdout.fnmatch_lines(
        [
            "tests/test_agent.py::test_prompt",
            "tests/test_agent.py::test_plain",
            "toll.yaml::servers::files",
            "3 tests collected*",
        ]
    )
    explicit_directory = run(project, "--toll", "tests")
    explicit_directory.assert_outcomes(passed=3)
    a_test_only = run(project, "--toll", "tests/test_agent.py::test_plain")
    a_test_only.assert_outcomes(passed=1)
    by_id = run(project, "--toll", "toll.yaml::servers::files")
    by_id.assert_outcomes(passed=1)
    by_keyword = run(project, "--toll", "-k", "files")
    by_keyword.assert_outcomes(passed=1, deselected=2)


def test_bad_settings_name_their_source(project: pytest.Pytester) -> None:
    cli = run(project, "--toll", "--toll-window", "big")
    assert cli.ret == pytest.ExitCode.USAGE_ERROR
    cli.stderr.fnmatch_lines(
        ["ERROR: --toll-window on the command line: window must be a positive whole number *"]
    )
    project.makeini("[pytest]\ntoll_tolerance = -3\n")
    ini = run(project, "--toll")
    ini.stderr.fnmatch_lines(["ERROR: toll_tolerance in */tox.ini: tolerance must be *"])
    (project.path / "toll.yaml").write_text(LEDGER + "window: 0\n")
    project.makeini("[pytest]\n")
    ledger = run(project, "--toll")
    ledger.stderr.fnmatch_lines(["ERROR: */toll.yaml:7: window: must be at least 1, not 0"])
    # The command line wins over the ini file, which wins over the ledger.
    (project.path / "toll.yaml").write_text(LEDGER + "window: 1000\n")
    project.makeini("[pytest]\ntoll_window = 2000\n")
    wins = run(project, "--toll", "--toll-window", "4000")
    wins.stdout.fnmatch_lines(["*: 121 tok (o200k), ~3.0% of a 4,000 window"])
    ini_wins = run(project, "--toll")
    ini_wins.stdout.fnmatch_lines(["*: 121 tok (o200k), ~*% of a 2,000 window"])


@pytest.mark.slow
def test_xdist_matches_serial(pytester: pytest.Pytester, tmp_path: Path) -> None:
    pytest.importorskip("xdist")
    outputs = []
    for workers in ((), ("-n", "2")):
        directory = tmp_path / ("parallel" if workers else "serial")
        directory.mkdir()
        write_tools_to = directory / "tools.json"
        write_tools_to.write_text(json.dumps([READ, WRITE]))
        (directory / "toll.yaml").write_text(LEDGER + "    pin: 200\n")
        (directory / "test_agent.py").write_text(
            TESTS
            + "".join(
                f"\ndef test_many_{n}(toll):\n    toll.text('t', 'word ' * {n})\n" for n in range(6)
            )
        )
        pytester.chdir()
        result = pytester.runpytest_subprocess(
            *QUIET,
            "--rootdir", str(directory), str(directory), "--toll", "--toll-update",
            "--toll-json", str(directory / "toll.json"), *workers,
        )  # fmt: skip
        result.assert_outcomes(passed=9)
        outputs.append(
            (
                summary(result),
                (directory / "toll.json").read_text(),
                (directory / "toll.yaml").read_text(),
            )
        )
    assert outputs[0] == outputs[1]


@pytest.mark.slow
def test_a_bad_marker_under_xdist_fails_its_test(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    pytester.makepyfile(
        test_bad="""
        import pytest

        @pytest.mark.toll(budget="x")
        def test_x():
            pass

        def test_fine():
            pass
        """
    )
    result = pytester.runpytest_subprocess(*QUIET, "-n", "2")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["test_bad.py::test_x: @pytest.mark.toll(budget=…): must be a whole number *"]
    )
    assert "INTERNALERROR" not in result.stdout.str()


def test_ci_outputs_are_written_from_the_report(project: pytest.Pytester) -> None:
    result = run(
        project, "--toll", "--toll-markdown", "out/toll.md", "--toll-badge", "out/toll.svg"
    )
    result.assert_outcomes(passed=3)
    assert (project.path / "out" / "toll.md").read_text().startswith("## pytest-toll")
    assert (project.path / "out" / "toll.svg").read_text().startswith("<svg")
    assert "toll warning" not in result.stdout.str()
