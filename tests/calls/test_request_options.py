"""Structured-output formats, tool_choice and thinking in a request body: counted natively
beside the total with exact counts, named as not counted otherwise — never ignored."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.calls.measuring import measure
from tests.cli import run_toll as toll
from tests.count_tokens_server import count_tokens_server, counted

TOOLS = [{"name": "lookup", "description": "Look a word up.", "input_schema": {"type": "object"}}]
BODY = {
    "model": "claude-sonnet-5",
    "messages": [{"role": "user", "content": "Define toll."}],
    "tools": TOOLS,
    "tool_choice": {"type": "tool", "name": "lookup"},
    "thinking": {"type": "enabled", "budget_tokens": 2048},
    "output_format": {"type": "json_schema", "schema": {"type": "object"}},
    "response_format": {"type": "json_object"},
    "temperature": 0.2,
}


def test_the_estimate_names_every_setting_it_leaves_out(tmp_path: Path) -> None:
    (tmp_path / "request.json").write_text(json.dumps(BODY), encoding="utf-8")
    result = toll(
        "measure",
        "--model",
        "claude-sonnet-5",
        "--messages",
        "request.json",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["request_settings"] == {
        "present": ["output_format", "response_format", "tool_choice", "thinking"],
        "counted": [],
        "not_counted": ["output_format", "response_format", "tool_choice", "thinking"],
    }
    assert (
        "not counted: output_format (a structured-output schema), response_format (OpenAI's "
        "structured-output format), tool_choice (which tool the model must call), thinking "
        "(extended-thinking settings); the estimate covers messages, system, skills and tools "
        "only (exact counts take output_format, tool_choice and thinking)"
    ) in data["notes"]
    plain = dict(BODY)
    for name in ("tool_choice", "thinking", "output_format", "response_format"):
        plain.pop(name)
    bare = measure("claude-sonnet-5", messages=plain["messages"], tools=TOOLS).as_dict()
    assert "request_settings" not in bare and data["total"] == bare["total"]


def test_exact_counts_them_beside_the_total() -> None:
    with count_tokens_server() as server:
        client = CountTokensClient.from_environment(server.environment())
        settings = {name: BODY[name] for name in ("tool_choice", "thinking", "output_format")}
        with client:
            report = measure(
                "claude-sonnet-5",
                messages=BODY["messages"],
                tools=TOOLS,
                exact=True,
                client=client,
                request_settings={**settings, "response_format": BODY["response_format"]},
            )
        whole = server.bodies[-2]  # the last stage: the whole request without the settings
        with_settings = server.bodies[-1]
    assert with_settings == {**whole, **settings}
    assert report.total.tokens == counted(whole)  # the parts and total leave them out
    assert report.settings is not None
    assert report.settings.tokens == counted(with_settings) - counted(whole)
    assert report.as_dict()["request_settings"] == {
        "present": ["output_format", "response_format", "tool_choice", "thinking"],
        "counted": ["output_format", "tool_choice", "thinking"],
        "tokens": report.settings.tokens,
        "source": "native",
        "not_counted": ["response_format"],
    }
    assert report.notes[:2] == (
        "request settings counted by count_tokens, beside the total: output_format, "
        f"tool_choice, thinking add {report.settings.tokens:,} native tokens",
        "not counted: response_format (OpenAI's structured-output format); count_tokens does "
        "not take OpenAI's response_format",
    )


def test_tool_choice_without_tools_is_named_not_sent() -> None:
    with count_tokens_server() as server:
        with CountTokensClient.from_environment(server.environment()) as client:
            report = measure(
                "claude-sonnet-5",
                messages=BODY["messages"],
                exact=True,
                client=client,
                request_settings={"tool_choice": {"type": "auto"}},
            )
        assert all("tool_choice" not in body for body in server.bodies)
    assert report.settings is not None and report.settings.tokens is None
    assert "tool_choice without tools has nothing to choose" in report.notes[0]
