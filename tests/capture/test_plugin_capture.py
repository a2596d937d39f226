"""``toll(capture=True)`` and ``toll.capture()`` end to end with pytester: a real agent loop
through the official SDK against a local server, graded on its largest request, shown per
request in the summary, the JSON report and JUnit XML; serial and under ``-n 2`` alike."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import jsonschema
import pytest

from pytest_toll.report.data import SCHEMA_PATH

pytest_plugins = ["pytester"]

LLM_SERVER = Path(__file__).with_name("llm_server.py")
# anyio stays on: one test below is an async test run by its pytest plugin.
QUIET = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-p", "no:randomly")

CONFTEST = """\
import pytest
from llm_server import serving

@pytest.fixture
def server():
    with serving() as running:
        yield running

@pytest.fixture
def anyio_backend():
    return "asyncio"
"""

AGENT_TESTS = """\
import anthropic
import httpx
import openai
import pytest

SYSTEM = "You are the notes assistant. Search the notes before you answer."
TOOLS = [{
    "name": "search_notes",
    "description": "Search the team's notes by keyword; returns matching titles.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
}]

def run_agent(client, turns=3):
    messages = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"What changed in release {turn + 1}?"})
        reply = client.messages.create(
            model="claude-sonnet-5", max_tokens=100, system=SYSTEM, messages=messages,
            tools=TOOLS,
        )
        messages.append({"role": "assistant", "content": reply.content[0].text})
    return messages

def claude(server):
    return anthropic.Anthropic(base_url=server.url, api_key="sk-never-recorded", max_retries=0)

@pytest.mark.toll(budget=5000, capture=True)
def test_agent(server):
    assert len(run_agent(claude(server))) == 6

@pytest.mark.toll(budget=60, capture=True)
def test_agent_over_budget(server):
    run_agent(claude(server))

@pytest.mark.toll(budget=100, capture=True)
def test_sends_nothing():
    pass

@pytest.mark.toll(capture=True)
def test_unreadable_body(server):
    httpx.post(server.url + "/v1/chat/completions", content=b"{not json")

def test_fixture_capture(toll, server):
    client = claude(server)
    run_agent(client, turns=1)  # before the capture: not counted
    with toll.capture():
        run_agent(client, turns=2)
    assert [request.number for request in toll.captured().requests] == [1, 2]

@pytest.mark.anyio
@pytest.mark.toll(capture=True)
async def test_async_agent(server):
    client = openai.AsyncOpenAI(base_url=server.url + "/v1", api_key="sk-x", max_retries=0)
    reply = await client.chat.completions.create(
        model="gpt-6.2-sol", messages=[{"role": "user", "content": "hi"}], stream=True
    )
    async for _ in reply:
        pass

def test_nothing_left_patched_after_them():
    from pytest_toll.capture_hook import active_captures, patched
    assert not patched() and active_captures() == 0
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(llm_server=LLM_SERVER.read_text(encoding="utf-8"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_agent=AGENT_TESTS)
    pytester.makefile(".yaml", toll="version: 1\n")
    return pytester


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess(
        *QUIET, "--toll", "--toll-json", "toll.json", "--junitxml", "junit.xml", *args
    )


def _entries(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    report = json.loads((project.path / "toll.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    return {entry["name"].split("::")[-1]: entry for entry in report["entries"]}


def test_capture_grades_the_largest_request_and_shows_each(project: pytest.Pytester) -> None:
    result = _run(project)
    result.assert_outcomes(passed=5, failed=2)
    entries = _entries(project)
    agent = entries["test_agent"]
    capture = agent["capture"]
    assert isinstance(capture, dict)
    tokens = [request["tokens"] for request in capture["requests"]]
    assert tokens == sorted(tokens) and len(set(tokens)) == 3  # the conversation grows
    assert agent["measured"] == capture["largest"] == tokens[2]
    assert capture["largest_number"] == 3 and capture["sum"] == sum(tokens)
    assert agent["outcome"] == "new" and agent["budget"] == 5000
    assert entries["test_agent_over_budget"]["outcome"] == "over_budget"
    unreadable = entries["test_unreadable_body"]
    assert unreadable["outcome"] == "error" and str(unreadable["message"]).startswith(
        "could not judge captured request #1 openai.chat_completions: the body is not JSON"
    )
    fixture = entries["test_fixture_capture"]["capture"]
    assert isinstance(fixture, dict) and fixture["count"] == 2
    streamed = entries["test_async_agent"]["capture"]
    assert isinstance(streamed, dict) and streamed["requests"][0]["stream"] is True
    assert "test_sends_nothing" not in entries
    result.stdout.fnmatch_lines(
        [
            "*test_sends_nothing: asked to capture LLM requests but captured none*",
            "tests::test_agent.py::test_agent: largest request #3: * o200k (sum * over 3 requests, * of it resent)",
            # No port: the fake server's is random, and a row must read the same every run.
            "  #1 anthropic.messages claude-sonnet-5 127.0.0.1/v1/messages: * o200k, "
            "* o200k×1.80, $* (messages *, system *, skills 0, tools *)",
        ]
    )
    assert "sk-never-recorded" not in result.stdout.str()
    assert "sk-never-recorded" not in (project.path / "toll.json").read_text()
    junit = ElementTree.parse(project.path / "junit.xml")
    properties = [
        prop.get("value", "")
        for case in junit.iter("testcase")
        if case.get("name") == "test_agent"
        for prop in case.iter("property")
        if prop.get("name") == "toll_request"
    ]
    assert [text.split("/v1/")[0] for text in properties] == [
        f"#{n} anthropic.messages claude-sonnet-5 127.0.0.1" for n in (1, 2, 3)
    ]


def test_strict_fails_a_test_that_captured_nothing(project: pytest.Pytester) -> None:
    result = _run(project, "--toll-strict", "-k", "sends_nothing")
    result.assert_outcomes(failed=1, deselected=6)
    result.stdout.fnmatch_lines(["*captured none*--toll-strict fails it*"])


def test_the_ledger_pins_the_largest_request_and_the_sum(project: pytest.Pytester) -> None:
    _run(project, "--toll-update", "test_agent.py::test_agent").assert_outcomes(passed=1)
    ledger = (project.path / "toll.yaml").read_text()
    agent = _entries(project)["test_agent"]
    pinned, capture = agent["measured"], agent["capture"]
    assert isinstance(capture, dict)
    # The largest request's parts are pinned beside its total, so a regression names the
    # part that grew (#36 item 6g).
    (largest,) = [r for r in capture["requests"] if r["number"] == capture["largest_number"]]
    parts = ", ".join(f"capture/{name}: {tokens}" for name, tokens in largest["parts"].items())
    expected = f"test_agent.py::test_agent: {{pin: {pinned}, run_pin: {capture['sum']}, parts: {{{parts}}}}}"
    assert ledger == f"version: 1\ntests:\n  {expected}\n"
    again = _run(project, "test_agent.py::test_agent")
    again.assert_outcomes(passed=1)
    assert _entries(project)["test_agent"]["outcome"] == "passed"


@pytest.mark.slow
def test_xdist_matches_serial(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")

    def stable() -> list[tuple[object, ...]]:
        """Each entry's outcome, total and requests (ports differ between runs)."""
        rows: list[tuple[object, ...]] = []
        for name, entry in sorted(_entries(project).items()):
            capture = entry.get("capture")
            requests = capture["requests"] if isinstance(capture, dict) else []
            shown = [(r["api"], r["tokens"], r.get("parts")) for r in requests]
            rows.append((name, entry["outcome"], entry["measured"], *shown))
        return rows

    _run(project).assert_outcomes(passed=5, failed=2)
    serial = stable()
    _run(project, "-n", "2").assert_outcomes(passed=5, failed=2)
    assert stable() == serial
