"""A budget on what the agent really sends: ``toll(capture=True)`` records every LLM request the
code under test makes (through httpx, as the official SDKs do) and grades the largest one.

The agent below is a tiny tool-using loop against a local stand-in for the Anthropic Messages
API (stdlib HTTP on 127.0.0.1): the model asks for ``search_notes``, the agent runs it and
sends the result back, the model answers, the user asks a follow-up. Each request carries the
whole conversation so far, so the last one is the heaviest, and that is the figure the budget
and toll.yaml's pin hold. Headers (the API key) are never recorded.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest

SYSTEM_PROMPT = (
    "You are the notes assistant for a small engineering team. Answer from the team's notes "
    "and say which note you used. Search before you answer."
)
TOOLS = [
    {
        "name": "search_notes",
        "description": "Search the team's notes by keyword; returns matching titles and ids.",
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string", "description": "words to look for"}},
            "required": ["query"],
        },
    }
]
NOTES = {"n-12": "Release 2.4: the export job moved to the nightly queue."}


class FakeModel(BaseHTTPRequestHandler):
    """Answers like Messages: a tool call when the last turn is a question, text otherwise."""

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        last = body["messages"][-1]["content"]
        if isinstance(last, str) and last.endswith("?") and "again" not in last:
            content = [
                {"type": "tool_use", "id": "t1", "name": "search_notes", "input": {"query": last}}
            ]
        else:
            content = [{"type": "text", "text": "Note n-12 says the export job runs nightly."}]
        reply = json.dumps({"role": "assistant", "content": content}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)


@pytest.fixture
def model_url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeModel)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def search_notes(query: str) -> str:
    return json.dumps([{"id": key, "text": text} for key, text in NOTES.items()])


def ask(client: httpx.Client, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The agent's loop for one user turn: call the model, run tools, until it answers."""
    while True:
        body = {
            "model": "claude-sonnet-4-5",
            "max_tokens": 400,
            "system": SYSTEM_PROMPT,
            "tools": TOOLS,
            "messages": messages,
        }
        content = client.post("/v1/messages", json=body).json()["content"]
        messages.append({"role": "assistant", "content": content})
        calls = [block for block in content if block["type"] == "tool_use"]
        if not calls:
            return messages
        results = [
            {
                "type": "tool_result",
                "tool_use_id": call["id"],
                "content": search_notes(**call["input"]),
            }
            for call in calls
        ]
        messages.append({"role": "user", "content": results})


@pytest.mark.toll(budget=600, run_budget=1500, capture=True)
def test_the_agent_loop_stays_within_its_budget(model_url: str) -> None:
    headers = {"x-api-key": "sk-demo-never-recorded"}
    with httpx.Client(base_url=model_url, headers=headers) as client:
        messages = ask(client, [{"role": "user", "content": "When does the export job run?"}])
        messages.append({"role": "user", "content": "Say that again, briefly."})
        ask(client, messages)
    assert len(messages) == 6  # question, tool call, result, answer, follow-up, answer
