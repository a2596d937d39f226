"""A captured test in the report: the JSON entry gains ``capture`` (only there), it survives
the trip from an xdist worker, and the terminal and Markdown show each request."""

from __future__ import annotations

import json

import jsonschema

from pytest_toll.calls.capture import ANTHROPIC_MESSAGES, OPENAI_CHAT, SentRequest, measure_sent
from pytest_toll.report.data import SCHEMA_PATH, EntryResult, SessionReport
from pytest_toll.report.markdown import render
from pytest_toll.report.terminal import summary_lines


def _captured() -> dict[str, object]:
    good = {
        "model": "claude-sonnet-5",
        "system": "Answer from the notes.",
        "messages": [{"role": "user", "content": "What changed in the release?"}],
    }
    sent = [
        SentRequest(
            ANTHROPIC_MESSAGES, "api.anthropic.com", "/v1/messages", json.dumps(good).encode()
        ),
        SentRequest(OPENAI_CHAT, "api.openai.com", "/v1/chat/completions", b"{oops"),
    ]
    return measure_sent(sent).as_dict()


def _report() -> SessionReport:
    capture = _captured()
    tests = [
        EntryResult("tests", "t.py::test_agent", "t.py::test_agent", None, None, None, None, None,
                    "error", True, "could not judge captured request #2", capture=capture),
        EntryResult("tests", "t.py::test_plain", "t.py::test_plain", None, 18, "o200k", None,
                    100, "new"),
    ]  # fmt: skip
    return SessionReport(ledger="toll.yaml", window=200_000, tolerance=0, entries=tests)


def test_only_a_capturing_test_has_the_capture_key_and_it_travels() -> None:
    report = _report().as_dict()
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    agent, plain = report["entries"]
    assert "capture" not in plain  # reports of tests that did not capture are unchanged
    assert agent["capture"]["count"] == 2 and agent["capture"]["could_not_judge"] == 1
    assert EntryResult.from_dict(agent).as_dict() == agent  # the xdist path


def test_the_terminal_and_markdown_show_each_request() -> None:
    report = _report()
    lines = [text for text, _ in summary_lines(report)]
    first = report.entries[0].capture
    assert first is not None
    tokens = first["largest"]
    assert f"tests::t.py::test_agent: largest request #1: {tokens} o200k (sum {tokens} over 2 " \
        "requests, 1 could not judge)" in lines  # fmt: skip
    assert any(
        line.startswith("  #2 openai.chat_completions api.openai.com/v1/chat/completions: "
                        "could not judge: the body is not JSON")
        for line in lines
    )  # fmt: skip
    markdown = render(report.as_dict())
    section = markdown.split("### Captured LLM requests\n\n")[1]
    assert section.startswith(
        f"- **tests::t.py::test\\_agent**: largest request \\#1: {tokens} o200k"
    )
    assert "  - \\#1 anthropic.messages claude-sonnet-5 api.anthropic.com/v1/messages: " in section
    assert "the body is not JSON" in section
