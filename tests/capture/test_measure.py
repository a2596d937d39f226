"""Captured request bodies, recognised and measured: the same figures ``toll measure`` gives
for the same body, a body that cannot be judged says why, and the largest request is graded."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.calls.capture import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    SentRequest,
    measure_sent,
    recognise,
    responses_messages,
)

SYSTEM = "You are the notes assistant. Answer from the team's notes."
TOOL = {
    "name": "search_notes",
    "description": "Search the team's notes by keyword.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
}


def _sent(api: str, body: object) -> SentRequest:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    return SentRequest(api, "127.0.0.1:1", "/v1/x", raw)


@pytest.mark.parametrize(
    ("method", "path", "api"),
    [
        ("POST", "/v1/messages", ANTHROPIC_MESSAGES),
        ("POST", "/v1/messages/", ANTHROPIC_MESSAGES),
        ("POST", "/gateway/anthropic/v1/messages", ANTHROPIC_MESSAGES),
        ("POST", "/v1/messages/count_tokens", None),
        ("POST", "/v1/messages/batches", None),
        ("GET", "/v1/messages", None),
        ("POST", "/v1/chat/completions", OPENAI_CHAT),
        ("POST", "/openai/deployments/prod/chat/completions", OPENAI_CHAT),
        ("POST", "/v1/responses", OPENAI_RESPONSES),
        ("POST", "/v1/responses/resp_1/cancel", None),
        ("POST", "/v1/embeddings", None),
    ],
)
def test_recognise(method: str, path: str, api: str | None) -> None:
    assert recognise(method, path) == api


def _toll_measure(tmp_path: Path, model: str, body: dict[str, Any]) -> dict[str, Any]:
    path = tmp_path / "body.json"
    path.write_text(json.dumps(body), encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest_toll",
            "measure",
            "--model",
            model,
            "--messages",
            str(path),
            "--json",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    data: dict[str, Any] = json.loads(done.stdout)
    return data


@pytest.mark.parametrize(
    ("api", "model", "body"),
    [
        (
            ANTHROPIC_MESSAGES,
            "claude-sonnet-5",
            {
                "system": SYSTEM,
                "messages": [{"role": "user", "content": "What did we decide?"}],
                "tools": [TOOL],
            },
        ),
        (
            OPENAI_CHAT,
            "gpt-6.2-sol",
            {
                "messages": [
                    {"role": "system", "content": SYSTEM},
                    {"role": "user", "content": "What did we decide?"},
                ],
                "tools": [
                    {
                        "type": "function",
                        "function": {
                            "name": "search_notes",
                            "description": "Search the team's notes by keyword.",
                            "parameters": TOOL["input_schema"],
                        },
                    }
                ],
            },
        ),
    ],
)
def test_a_body_measures_as_toll_measure_measures_it(
    tmp_path: Path, api: str, model: str, body: dict[str, Any]
) -> None:
    expected = _toll_measure(tmp_path, model, body)
    [request] = measure_sent([_sent(api, {"model": model, "max_tokens": 10, **body})]).requests
    data = request.as_dict()
    assert data["tokens"] == expected["total"]["tokens"]
    assert data["parts"] == {name: part["tokens"] for name, part in expected["parts"].items()}
    assert data["scaled"] == expected["total"].get("scaled")
    assert data["cost_usd"] == expected["total"].get("cost_usd")
    assert data["model"] == model and data["method"] == "o200k"


def test_responses_input_becomes_messages_and_instructions_the_system() -> None:
    items = [
        {"role": "user", "content": [{"type": "input_text", "text": "Find the release note."}]},
        {"type": "function_call", "call_id": "c1", "name": "search_notes", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "release-2026.md"},
    ]
    assert responses_messages(items) == [
        {"role": "user", "content": [{"type": "input_text", "text": "Find the release note."}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "c1", "function": {"name": "search_notes", "arguments": "{}"}}],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "release-2026.md"},
    ]
    tools = [
        {
            "type": "function",
            "name": "search_notes",
            "description": "Search.",
            "parameters": TOOL["input_schema"],
        },
        {"type": "web_search"},
    ]
    body = {"model": "gpt-6.2-sol", "instructions": SYSTEM, "input": items, "tools": tools}
    [request] = measure_sent([_sent(OPENAI_RESPONSES, body)]).requests
    assert request.report is not None
    parts = request.as_dict()["parts"]
    assert parts["system"] > 0 and parts["tools"] > 0 and parts["messages"] > 0
    assert request.notes == ("built-in tools not counted (the provider defines them): web_search",)


def test_an_unknown_model_is_measured_and_says_so() -> None:
    body = {"model": "my-gateway-model", "messages": [{"role": "user", "content": "hi"}]}
    [request] = measure_sent([_sent(OPENAI_CHAT, body)]).requests
    assert request.tokens is not None and request.report is not None
    assert request.report.total.cost_usd is None and request.report.scaled_method is None
    assert request.notes[0].startswith("my-gateway-model is not in the model catalogue")


@pytest.mark.parametrize(
    ("api", "body", "error"),
    [
        (OPENAI_CHAT, b"\xff\xfe", "the body is not JSON"),
        (OPENAI_CHAT, [1, 2], "the body must be a JSON object, not array"),
        (ANTHROPIC_MESSAGES, {"messages": []}, "the body names no model"),
        (ANTHROPIC_MESSAGES, {"model": "claude-sonnet-5"}, "the body has no 'messages' array"),
        (
            ANTHROPIC_MESSAGES,
            {"model": "claude-sonnet-5", "messages": [{"role": "robot", "content": "x"}]},
            "messages[0].role: must be user, assistant",
        ),
        (
            OPENAI_RESPONSES,
            {"model": "gpt-6.2-sol", "input": [{"type": "mystery"}]},
            "input[0].type: 'mystery' is not an input item measured here",
        ),
    ],
)
def test_a_body_that_cannot_be_judged_says_why(api: str, body: object, error: str) -> None:
    [request] = measure_sent([_sent(api, body)]).requests
    assert request.tokens is None and request.error.startswith(error)
    assert request.as_dict()["error"] == request.error


def test_an_unread_body_is_not_dropped() -> None:
    sent = SentRequest(OPENAI_CHAT, "h", "/v1/chat/completions", None, "OSError: stream broke")
    [request] = measure_sent([sent]).requests
    assert request.error == "the body could not be read: OSError: stream broke"


def test_the_largest_request_is_graded_with_the_sum_and_count_beside_it() -> None:
    def body(turns: int) -> dict[str, Any]:
        messages = [{"role": "user", "content": f"question {n} " * 20} for n in range(turns)]
        return {"model": "claude-sonnet-5", "system": SYSTEM, "messages": messages}

    sent = [_sent(ANTHROPIC_MESSAGES, body(n)) for n in (1, 3, 2)]
    sent.append(_sent(ANTHROPIC_MESSAGES, b"not json"))
    report = measure_sent(sent)
    tokens = [request.tokens for request in report.requests]
    assert tokens[3] is None and tokens[0] < tokens[2] < tokens[1]  # type: ignore[operator]
    data = report.as_dict()
    assert data["largest"] == tokens[1] and data["largest_number"] == 2
    assert data["sum"] == sum(tokens[:3])  # type: ignore[arg-type]
    assert (data["count"], data["could_not_judge"]) == (4, 1)
