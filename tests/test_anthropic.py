"""The count_tokens client against a real HTTP server on 127.0.0.1 speaking the wire format."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from pytest_toll.anthropic import (
    CountFailed,
    CountRefused,
    CountTokensClient,
)
from pytest_toll.errors import CouldNotJudge

KEY = "sk-ant-test-0123456789"


def fake_count(body: dict[str, Any]) -> int:
    """The fake tokenizer: one token per 4 characters of what the request carries."""
    carried = json.dumps(
        [body.get("system"), body.get("messages"), body.get("tools")], sort_keys=True
    )
    return len(carried) // 4


@dataclass
class Reply:
    status: int
    body: Any
    delay: float = 0.0
    headers: dict[str, str] = field(default_factory=dict)


@dataclass
class FakeAnthropic:
    """A count_tokens server: counts, or answers with a scripted reply per model name."""

    url: str = ""
    seen: list[tuple[dict[str, str], dict[str, Any]]] = field(default_factory=list)
    replies: dict[str, Reply] = field(default_factory=dict)

    def error(self, model: str, status: int, kind: str, message: str, **extra: Any) -> None:
        body = {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": "req_f00",
        }
        self.replies[model] = Reply(status, body, **extra)


@pytest.fixture
def anthropic_server() -> Iterator[FakeAnthropic]:
    fake = FakeAnthropic()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length))
            fake.seen.append(({k.lower(): v for k, v in self.headers.items()}, body))
            if self.path != "/v1/messages/count_tokens":
                self._send(
                    Reply(
                        404,
                        {
                            "type": "error",
                            "error": {"type": "not_found_error", "message": "no route"},
                        },
                    )
                )
                return
            reply = fake.replies.get(body.get("model", ""))
            if reply is None:
                reply = Reply(
                    200, {"input_tokens": fake_count(body)}, headers={"request-id": "req_ok"}
                )
            if reply.delay:
                time.sleep(reply.delay)
            self._send(reply)

        def _send(self, reply: Reply) -> None:
            data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
            self.send_response(reply.status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            for name, value in reply.headers.items():
                self.send_header(name, value)
            self.end_headers()
            with contextlib.suppress(OSError):  # the client gave up (the timeout test)
                self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    fake.url = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()


def client_for(server: FakeAnthropic, timeout: float = 5.0) -> CountTokensClient:
    return CountTokensClient.from_environment(
        {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": server.url + "/"}, timeout=timeout
    )


BODY = {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": "hello"}]}


def test_count_sends_the_wire_format(anthropic_server: FakeAnthropic) -> None:
    with client_for(anthropic_server) as client:
        assert client.count(BODY) == fake_count(BODY)
        assert client.requests_made == 1
    headers, body = anthropic_server.seen[0]
    assert headers["x-api-key"] == KEY
    assert headers["anthropic-version"] == "2023-06-01"
    assert headers["content-type"] == "application/json"
    assert body == BODY


def test_400_is_a_refusal_with_message_and_request_id(anthropic_server: FakeAnthropic) -> None:
    anthropic_server.error(
        "claude-sonnet-5", 400, "invalid_request_error", "model does not support token counting"
    )
    with client_for(anthropic_server) as client, pytest.raises(CountRefused) as caught:
        client.count(BODY)
    assert str(caught.value) == (
        "Anthropic count_tokens: HTTP 400 invalid_request_error: "
        "model does not support token counting (request req_f00)"
    )
    assert caught.value.request_id == "req_f00"
    assert caught.value.status == 400


@pytest.mark.parametrize(
    ("status", "kind", "message", "expected"),
    [
        (
            401,
            "authentication_error",
            "invalid x-api-key",
            "HTTP 401 authentication_error: invalid x-api-key (request req_f00) — check ANTHROPIC_API_KEY",
        ),
        (
            429,
            "rate_limit_error",
            "Number of requests has exceeded your rate limit",
            "HTTP 429 rate_limit_error: Number of requests has exceeded your rate limit (request req_f00) — rate limited; try again later",
        ),
        (
            529,
            "overloaded_error",
            "Overloaded",
            "HTTP 529 overloaded_error: Overloaded (request req_f00) — the API is overloaded; try again later",
        ),
        (
            500,
            "api_error",
            "Internal server error",
            "HTTP 500 api_error: Internal server error (request req_f00)",
        ),
    ],
)
def test_other_errors_fail_loudly(
    anthropic_server: FakeAnthropic, status: int, kind: str, message: str, expected: str
) -> None:
    anthropic_server.error("claude-sonnet-5", status, kind, message)
    with client_for(anthropic_server) as client, pytest.raises(CountFailed) as caught:
        client.count(BODY)
    assert str(caught.value) == f"Anthropic count_tokens: {expected}"
    assert not isinstance(caught.value, CountRefused)
    assert isinstance(caught.value, CouldNotJudge)


def test_the_key_is_never_in_a_message(anthropic_server: FakeAnthropic) -> None:
    anthropic_server.error("claude-sonnet-5", 401, "authentication_error", f"bad key {KEY}")
    with client_for(anthropic_server) as client, pytest.raises(CountFailed) as caught:
        client.count(BODY)
    assert KEY not in str(caught.value)
    assert "bad key [ANTHROPIC_API_KEY]" in str(caught.value)
    assert KEY not in repr(client)


def test_timeout(anthropic_server: FakeAnthropic) -> None:
    anthropic_server.replies["claude-sonnet-5"] = Reply(200, {"input_tokens": 1}, delay=1.0)
    with client_for(anthropic_server, timeout=0.2) as client, pytest.raises(CountFailed) as caught:
        client.count(BODY)
    assert str(caught.value) == (
        f"Anthropic count_tokens at {anthropic_server.url}/v1/messages/count_tokens: "
        "no answer within 0.2 s (timed out; raise TOLL_ANTHROPIC_TIMEOUT for a slow gateway)"
    )


def test_non_json_error_and_bad_success(anthropic_server: FakeAnthropic) -> None:
    anthropic_server.replies["gateway"] = Reply(502, b"<html>Bad Gateway</html>")
    anthropic_server.replies["odd"] = Reply(200, {"tokens": 5}, headers={"request-id": "req_odd"})
    with client_for(anthropic_server) as client:
        with pytest.raises(CountFailed) as caught:
            client.count({**BODY, "model": "gateway"})
        assert str(caught.value) == "Anthropic count_tokens: HTTP 502: <html>Bad Gateway</html>"
        with pytest.raises(CountFailed) as caught:
            client.count({**BODY, "model": "odd"})
        assert "HTTP 200 without an input_tokens count (request req_odd)" in str(caught.value)


def test_connection_refused() -> None:
    client = CountTokensClient.from_environment(
        {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, timeout=2
    )
    with client, pytest.raises(CountFailed) as caught:
        client.count(BODY)
    assert str(caught.value).startswith(
        "Anthropic count_tokens at http://127.0.0.1:9/v1/messages/count_tokens: cannot connect:"
    )


def test_missing_key_and_bad_timeout() -> None:
    with pytest.raises(CouldNotJudge, match="ANTHROPIC_API_KEY is not set"):
        CountTokensClient.from_environment({})
    with pytest.raises(CouldNotJudge, match="TOLL_ANTHROPIC_TIMEOUT='soon': must be a number"):
        CountTokensClient.from_environment(
            {"ANTHROPIC_API_KEY": KEY, "TOLL_ANTHROPIC_TIMEOUT": "soon"}
        )
    default = CountTokensClient.from_environment({"ANTHROPIC_API_KEY": KEY})
    assert default.url == "https://api.anthropic.com/v1/messages/count_tokens"
    assert default.timeout == 30.0
