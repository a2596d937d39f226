"""``run_budget`` and ``run_pin``: what a test's whole run sends, graded and ratcheted beside
its largest request; pytester runs of a real agent loop (the official SDK against the local
server), serial and under ``-n 2``, and the judgement itself as plain data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from pytest_toll.core.kinds import RUN_PIN
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import Policy, judge, plan_entry
from pytest_toll.report.data import SCHEMA_PATH

pytest_plugins = ["pytester"]

LLM_SERVER = Path(__file__).with_name("llm_server.py")
QUIET = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-p", "no:randomly")

CONFTEST = """\
import pytest
from llm_server import serving

@pytest.fixture
def server():
    with serving() as running:
        yield running
"""

LOOP = """\
import os

import anthropic
import pytest

SYSTEM = "You are the notes assistant. Search the notes before you answer."

def claude(server):
    return anthropic.Anthropic(base_url=server.url, api_key="sk-never-recorded", max_retries=0)

def run_agent(client, turns=3):
    \"\"\"Each turn resends the whole conversation so far: the sum grows faster than the largest.\"\"\"
    messages = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"What changed in release {turn + 1}?"})
        reply = client.messages.create(
            model="claude-sonnet-5", max_tokens=100, system=SYSTEM, messages=messages
        )
        messages.append({"role": "assistant", "content": reply.content[0].text})

def ask_the_same(client):
    \"\"\"The same request REPEATS times: its largest stays, its sum follows REPEATS.\"\"\"
    for _ in range(int(os.environ.get("REPEATS", "3"))):
        client.messages.create(
            model="claude-sonnet-5", max_tokens=100, system=SYSTEM,
            messages=[{"role": "user", "content": "What changed?"}],
        )
"""

GRADED = (
    LOOP
    + """
@pytest.mark.toll(capture=True, run_budget=ABOVE)
def test_run_under_its_budget(server):
    run_agent(claude(server))

@pytest.mark.toll(capture=True, budget=ABOVE, run_budget=BETWEEN)
def test_run_over_its_budget(server):
    run_agent(claude(server))

def test_fixture_run_budget(toll, server):
    with toll.capture(run_budget=BETWEEN):
        run_agent(claude(server))
"""
)

REPEATED = (
    LOOP
    + """
@pytest.mark.toll(capture=True)
def test_same_request(server):
    ask_the_same(claude(server))
"""
)


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(*QUIET, "--toll", "--toll-json", "toll.json", *args)


def _entries(project: pytest.Pytester) -> dict[str, dict[str, Any]]:
    report = json.loads((project.path / "toll.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    return {entry["name"].split("::")[-1]: entry for entry in report["entries"]}


def _project(pytester: pytest.Pytester, tests: str) -> pytest.Pytester:
    pytester.makepyfile(llm_server=LLM_SERVER.read_text(encoding="utf-8"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_loop=tests)
    pytester.makefile(".yaml", toll="version: 1\n")
    return pytester


def _loop_figures(pytester: pytest.Pytester) -> tuple[int, int]:
    """The loop's largest request and sum, from a run of it with no budget."""
    probe = (
        LOOP
        + "\n@pytest.mark.toll(capture=True)\ndef test_probe(server):\n    run_agent(claude(server))\n"
    )
    project = _project(pytester, probe)
    _run(project).assert_outcomes(passed=1)
    capture = _entries(project)["test_probe"]["capture"]
    tokens = [request["tokens"] for request in capture["requests"]]
    assert len(tokens) == 3 and tokens == sorted(tokens)
    assert capture["sum"] == sum(tokens) and capture["largest"] == tokens[-1]
    # Each request adds its turn over the one before: the rest of the sum was resent.
    assert capture["new"] == tokens[-1] and capture["resent"] == sum(tokens) - tokens[-1]
    return capture["largest"], capture["sum"]


@pytest.mark.parametrize(
    "workers",
    [pytest.param((), id="serial"), pytest.param(("-n", "2"), id="xdist", marks=pytest.mark.slow)],
)
def test_run_budget_grades_the_sum_of_the_requests(
    pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    largest, total = _loop_figures(pytester)
    between = (largest + total) // 2
    assert largest < between < total
    project = _project(
        pytester, GRADED.replace("ABOVE", str(total + 1)).replace("BETWEEN", str(between))
    )
    result = _run(project, *workers)
    result.assert_outcomes(passed=1, failed=2)
    entries = _entries(project)
    under = entries["test_run_under_its_budget"]
    assert under["outcome"] == "new" and under["measured"] == largest
    assert under["other_pins"] == [
        {"key": RUN_PIN, "measured": total, "pin": None, "budget": total + 1}
    ]
    over = entries["test_run_over_its_budget"]
    # Its largest request is within budget; the sum of the three is not.
    assert over["outcome"] == "over_budget" and over["measured"] < over["budget"]
    # A measurement, named as one (#36 item 6e), beside the ledger key of its budget.
    expected = (
        f"run measured {total:,} tok, over its run_budget of {between:,} by {total - between:,}"
    )
    assert over["message"] == expected
    assert entries["test_fixture_run_budget"]["outcome"] == "over_budget"
    result.stdout.fnmatch_lines([f"*{expected}*"])


@pytest.mark.slow
@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_update_pins_the_sum_and_a_rise_of_the_sum_alone_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    project = _project(pytester, REPEATED)
    monkeypatch.setenv("REPEATS", "3")
    _run(project, "--toll-update", *workers).assert_outcomes(passed=1)
    entry = _entries(project)["test_same_request"]
    largest, total = entry["measured"], entry["capture"]["sum"]
    assert total == 3 * largest
    ledger = project.path / "toll.yaml"
    parts = ", ".join(
        f"capture/{name}: {tokens}"
        for name, tokens in entry["capture"]["requests"][0]["parts"].items()
    )
    pinned = (
        f"test_loop.py::test_same_request: {{pin: {largest}, run_pin: {total}, parts: {{{parts}}}}}"
    )
    assert ledger.read_text() == f"version: 1\ntests:\n  {pinned}\n"
    _run(project, *workers).assert_outcomes(passed=1)
    assert _entries(project)["test_same_request"]["outcome"] == "passed"

    # A fourth identical request: the largest is unchanged, the run grew: a regression.
    monkeypatch.setenv("REPEATS", "4")
    result = _run(project, "--toll-update", *workers)
    result.assert_outcomes(failed=1)
    regressed = _entries(project)["test_same_request"]
    assert regressed["outcome"] == "regressed" and regressed["measured"] == largest
    # Under --toll-update the message also says how to accept the rise.
    assert regressed["message"] == (
        f"regressed: run +{largest:,} over its run_pin {total:,} — not raised: --toll-update "
        "only lowers pins; to accept the increase, run again with --toll-update "
        "--toll-allow-increase"
    )
    assert ledger.read_text() == f"version: 1\ntests:\n  {pinned}\n"  # never raised silently
    _run(project, "--toll-update", "--toll-allow-increase", *workers).assert_outcomes(passed=1)
    assert f"run_pin: {4 * largest}, parts:" in ledger.read_text()

    # Fewer requests: improved, and the update lowers run_pin (pin itself is unchanged).
    monkeypatch.setenv("REPEATS", "2")
    _run(project, "--toll-update", *workers).assert_outcomes(passed=1)
    assert _entries(project)["test_same_request"]["outcome"] == "improved"
    lowered = (
        f"test_loop.py::test_same_request: {{pin: {largest}, run_pin: {2 * largest}, "
        f"parts: {{{parts}}}}}"
    )
    assert ledger.read_text() == f"version: 1\ntests:\n  {lowered}\n"


def test_the_ledgers_run_budget_applies(pytester: pytest.Pytester) -> None:
    project = _project(pytester, REPEATED)
    (project.path / "toll.yaml").write_text(
        "version: 1\ntests:\n  test_loop.py::test_same_request: {run_budget: 10}\n"
    )
    _run(project).assert_outcomes(failed=1)
    entry = _entries(project)["test_same_request"]
    assert entry["outcome"] == "over_budget" and "over its run_budget of 10 by" in entry["message"]


MISUSED = """\
import pytest

@pytest.mark.toll(run_budget=100)
def test_nothing_captured(toll):
    toll.text("prompt", "hello")
"""


def test_a_run_budget_with_no_capture_is_an_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_misused=MISUSED)
    pytester.makefile(".yaml", toll="version: 1\n")
    result = _run(pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*marked toll(run_budget=…) but captured nothing*"])


def test_a_bad_run_budget_stops_the_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="import pytest\n\n@pytest.mark.toll(capture=True, run_budget='lots')\n"
        "def test_it():\n    pass\n"
    )
    result = pytester.runpytest_subprocess(*QUIET)
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*test_it: @pytest.mark.toll(run_budget=…): must be a whole number of tokens >= 0*"]
    )


# --- the judgement as plain data --------------------------------------------------------


def _judge(entry: dict[str, Any], run: int, policy: Policy | None = None, **budgets: int) -> Any:
    measurement = EntryMeasurement(
        100, "o200k", {"largest captured request": 100}, other_pins={RUN_PIN: run}
    )
    return judge(
        kind="tests", name="t.py::t", nodeid="t.py::t", line=None, entry=entry,
        measurement=measurement, policy=policy or Policy(), extra_other_budgets=budgets or None,
    )  # fmt: skip


def test_judgement_of_the_run() -> None:
    assert _judge({"pin": 100, "run_pin": 300}, 300).outcome == "passed"
    risen = _judge({"pin": 100, "run_pin": 300}, 301)
    assert (risen.outcome, risen.failed) == ("regressed", True)
    assert _judge({"pin": 100, "run_pin": 300}, 301, Policy(tolerance=1)).outcome == "passed"
    assert _judge({"pin": 100, "run_pin": 300}, 250).outcome == "improved"
    # A pin from before run_pin existed: judged by its pin; an update adds run_pin.
    old = _judge({"pin": 100}, 300, Policy(update=True))
    assert old.outcome == "passed" and not old.failed
    assert plan_entry(old, Policy(update=True)) == {("tests", "t.py::t", RUN_PIN): 300}
    # The lower of the ledger's run_budget and the marker's applies.
    over = _judge({"run_budget": 299}, 300, run_pin=1000)
    assert (over.outcome, over.failed, over.other_pins[0]["budget"]) == ("over_budget", True, 299)
    assert _judge({"run_budget": 1000}, 300, run_pin=299).other_pins[0]["budget"] == 299
    # Both over: both said.
    both = _judge({"budget": 50, "run_budget": 200}, 300)
    assert both.message == (
        "100 tok is over the budget of 50 by 50; run measured 300 tok, over its run_budget of 200 "
        "by 100"
    )
