"""A suite split across machines: shards run separately, ``toll merge`` judges them as one run.

The merged verdict, JSON report, Markdown and rewritten ledger must equal one full
``pytest --toll --toll-update`` run's, whether the suite is split by node ids
(``--toll-shard K/N``) or by pytest-split, with or without xdist inside each shard.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import jsonschema
import pytest

from pytest_toll.report.data import SCHEMA_PATH
from tests.cli import run_toll
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]


TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file from disk and return its text. Use when you need its text.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        "name": "write_file",
        "description": "Write text to a file.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        },
    },
]
LEDGER = """\
# one ledger, judged by three shards
version: 1
servers:
  files:
    tools_file: tools.json  # the server's tools
    budget: 4000  # a human ceiling
  more:
    tools_file: more.json
tests:
  test_a.py::test_prompt: {pin: 9}  # improves to 6
  test_c.py::test_words: {budget: 50, pin: 11}
  test_gone.py::test_old: {pin: 5}  # a removed test: stale, its pin removed by the update
"""
TEST_FILES = {
    "test_a": """
        def test_prompt(toll):
            toll.text("system", "You are a helpful assistant.")

        def test_plain():
            pass
        """,
    "test_b": """
        def test_new(toll):
            toll.text("user", "Summarise the open issues in three lines.")

        def test_other():
            pass
        """,
    "test_c": """
        def test_words(toll):
            toll.text("user", "word " * 10)

        def test_last():
            pass
        """,
}
NODE_ID_SHARDS = (["test_a.py"], ["test_b.py::test_new", "test_b.py::test_other"], ["test_c.py"])


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeini("[pytest]\n")
    (pytester.path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (pytester.path / "more.json").write_text(json.dumps(TOOLS[:1]), encoding="utf-8")
    (pytester.path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    for name, source in TEST_FILES.items():
        pytester.makepyfile(**{name: source})
    (pytester.path / "out").mkdir()
    return pytester


def run_pytest(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(*QUIET, "--toll", *args)


def toll(project: pytest.Pytester, *args: str) -> subprocess.CompletedProcess[str]:
    return run_toll(*args, cwd=project.path)


def run_shards(project: pytest.Pytester, splitter: str, workers: tuple[str, ...]) -> list[str]:
    reports = []
    for index in range(1, 4):
        report = f"out/shard-{index}.json"
        if splitter == "node ids":
            where = (*NODE_ID_SHARDS[index - 1], "--toll-shard", f"{index}/3")
        else:
            where = ("--splits", "3", "--group", str(index))
        result = run_pytest(project, *where, "--toll-json", report, *workers)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        reports.append(report)
    return reports


def summary(lines: list[str]) -> list[str]:
    start = next(i for i, line in enumerate(lines) if "toll summary" in line)
    end = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("=")), len(lines))
    return [line for line in lines[start + 1 : end] if line]


@pytest.mark.parametrize(
    "workers",
    [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist", marks=pytest.mark.slow)],
)
@pytest.mark.parametrize("splitter", ["node ids", "pytest-split"])
def test_merged_shards_equal_one_full_run(
    project: pytest.Pytester, splitter: str, workers: tuple[str, ...]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    if splitter == "pytest-split":
        pytest.importorskip("pytest_split")
    ledger = project.path / "toll.yaml"
    reports = run_shards(project, splitter, workers)
    shard_data = [json.loads((project.path / report).read_text()) for report in reports]
    schema = json.loads(SCHEMA_PATH.read_text())
    for data in shard_data:
        jsonschema.validate(data, schema)
        assert data["partial"] is False
        assert not any(entry["outcome"] == "stale" for entry in data["entries"])
    ledger_items = ["toll.yaml::servers::files", "toll.yaml::servers::more"]
    assert sorted(i for data in shard_data for i in data["collected"]["ledger_items"]) == (
        ledger_items
    )
    if splitter == "node ids":
        assert [data["shard"]["measures_ledger_items"] for data in shard_data] == [
            True,
            False,
            False,
        ]
        assert shard_data[0]["collected"]["ledger_items"] == ledger_items

    merged = toll(
        project, "merge", *reports, "--shards", "3", "--update",
        "--json", "out/merged.json", "--markdown", "out/merged.md",
        "--badge", "out/merged-badge.svg", "--sarif", "out/merged.sarif",
    )  # fmt: skip
    assert merged.returncode == 0, merged.stderr
    merged_ledger = ledger.read_text()
    assert merged_ledger != LEDGER

    ledger.write_text(LEDGER, encoding="utf-8")
    full = run_pytest(
        project, "--toll-update", "--toll-json", "out/full.json",
        "--toll-markdown", "out/full.md", "--toll-badge", "out/full-badge.svg",
        "--toll-sarif", "out/full.sarif", *workers,
    )  # fmt: skip
    full.assert_outcomes(passed=9)  # 8 tests, and toll.yaml::stale:: for the removed one
    merged_json = json.loads((project.path / "out/merged.json").read_text())
    full_json = json.loads((project.path / "out/full.json").read_text())
    jsonschema.validate(merged_json, schema)
    assert merged_json == full_json
    assert merged_json["counts"]["stale"] == 1
    assert merged_json["ledger_removed"] == ["tests.test_gone.py::test_old"]
    for output in (".md", "-badge.svg", "-badge.json", ".sarif"):
        merged_output = (project.path / f"out/merged{output}").read_text()
        assert merged_output == (project.path / f"out/full{output}").read_text(), output
    assert merged_ledger == ledger.read_text()
    assert "# one ledger, judged by three shards" in merged_ledger
    # The verdict as the terminal shows it: the merge prints the full run's toll summary.
    printed = [line for line in merged.stdout.splitlines()[1:] if line]
    assert printed == summary(full.outlines)


def test_a_missing_shard_cannot_be_judged(project: pytest.Pytester) -> None:
    reports = run_shards(project, "node ids", ())
    done = toll(project, "merge", *reports[:2], "--shards", "3")
    assert done.returncode == 2
    assert "shard 3/3 missing (2 of 3 reports); a missing shard is never a pass" in done.stderr
    # Without --shards the reports themselves say there are three.
    assert toll(project, "merge", *reports[1:]).returncode == 2
    wrong = toll(project, "merge", *reports, "--shards", "4")
    assert wrong.returncode == 2
    assert "--shards 4, but the reports are shards of 3" in wrong.stderr
    twice = toll(project, "merge", reports[0], reports[0], *reports[1:])
    assert "are both shard 1/3" in twice.stderr


@pytest.mark.slow
def test_shards_of_different_ledgers_are_an_error(project: pytest.Pytester) -> None:
    reports = run_shards(project, "node ids", ())
    ledger = project.path / "toll.yaml"
    ledger.write_text(LEDGER.replace("budget: 50", "budget: 60"), encoding="utf-8")
    result = run_pytest(project, "test_b.py", "--toll-shard", "2/3", "--toll-json", reports[1])
    assert result.ret == pytest.ExitCode.OK
    done = toll(project, "merge", *reports)
    assert done.returncode == 2
    assert f"{reports[0]} and {reports[1]} judged with a different ledger (its sha256)" in (
        done.stderr
    )
    # Shards of one ledger, merged against another: also an error.
    reports = run_shards(project, "node ids", ())
    ledger.write_text(LEDGER, encoding="utf-8")
    moved = toll(project, "merge", *reports)
    assert moved.returncode == 2
    assert "toll.yaml: not the ledger the shards judged" in moved.stderr


def test_shards_disagreeing_on_an_entry_are_an_error(project: pytest.Pytester) -> None:
    first = run_pytest(
        project, "test_a.py", "test_b.py::test_new", "--toll-shard", "1/2",
        "--toll-json", "out/one.json",
    )  # fmt: skip
    assert first.ret == pytest.ExitCode.OK
    project.makepyfile(
        test_b="""
        def test_new(toll):
            toll.text("user", "Summarise every open issue in three short lines.")

        def test_other():
            pass
        """
    )
    second = run_pytest(project, "test_b.py", "test_c.py", "--toll-shard", "2/2",
                        "--toll-json", "out/two.json")  # fmt: skip
    assert second.ret == pytest.ExitCode.OK
    done = toll(project, "merge", "out/one.json", "out/two.json")
    assert done.returncode == 2
    assert (
        "test_b.py::test_new was measured differently by out/one.json and out/two.json "
        "(measured 10 vs 11, parts)" in done.stderr
    )


def test_a_shard_cannot_update_the_ledger(project: pytest.Pytester) -> None:
    result = run_pytest(project, "test_a.py", "--toll-shard", "1/3", "--toll-update")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--toll-update on a shard: update once from all shards*"])
    bad = run_pytest(project, "--toll-shard", "4/3")
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    bad.stderr.fnmatch_lines(["*--toll-shard: shard 4 of 3 does not exist*"])


def test_a_partial_run_is_not_a_shard(project: pytest.Pytester) -> None:
    result = run_pytest(project, "test_a.py", "--toll-json", "out/some.json")
    assert result.ret == pytest.ExitCode.OK
    alone = toll(project, "merge", "out/some.json")
    assert alone.returncode == 2
    assert "out/some.json is not a shard: run each part with --toll-shard K/N" in alone.stderr


def test_a_full_run_merges_as_one_shard(project: pytest.Pytester, tmp_path: Path) -> None:
    result = run_pytest(project, "--toll-json", "out/full.json")
    result.assert_outcomes(passed=9)  # 8 tests, and toll.yaml::stale:: for the removed one
    done = toll(project, "merge", "out/full.json", "--json", "out/merged.json", "--strict")
    # --strict: the removed test's stale entry fails the merged run.
    assert done.returncode == 1, done.stderr
    merged = json.loads((project.path / "out/merged.json").read_text())
    full = json.loads((project.path / "out/full.json").read_text())
    assert merged["strict"] is True
    assert {e["nodeid"] for e in merged["entries"]} == {e["nodeid"] for e in full["entries"]}
    failed = {e["nodeid"]: e["outcome"] for e in merged["entries"] if e["failed"]}
    # Under --strict the removed test's stale entry fails, and so does every entry with no pin
    # yet, as in `pytest --toll --toll-strict`.
    assert failed["test_gone.py::test_old"] == "stale"
    assert set(failed.values()) == {"stale", "new"}
