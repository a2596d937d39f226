"""The count_tokens client against a real HTTP server on 127.0.0.1 speaking the wire format."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.calls.anthropic import (
    CountFailed,
    CountRefused,
    CountTokensClient,
)
from pytest_toll.calls.measuring import measure
from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge
from tests.local_http import serving

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
    #: Replies only for requests that carry tools (a refusal of the tools stage alone).
    tools_replies: dict[str, Reply] = field(default_factory=dict)

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
            model = body.get("model", "")
            reply = fake.replies.get(model)
            if "tools" in body and model in fake.tools_replies:
                reply = fake.tools_replies[model]
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

    with serving(Handler) as fake.url:
        yield fake


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
    assert "bad key [secret]" in str(caught.value)
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


# --- measure(exact=True) against the same server ---------------------------------------

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
]
MESSAGES = [{"role": "user", "content": "Show me setup.py"}]
SKILLS = [{"name": "pdf", "description": "Fill PDF forms."}]


def test_exact_stages_are_real_requests(anthropic_server: FakeAnthropic) -> None:
    with client_for(anthropic_server) as client:
        result = measure(
            "claude-sonnet-5", "Be careful.", MESSAGES, TOOLS, SKILLS, exact=True, client=client
        )
    bodies = [body for _headers, body in anthropic_server.seen]
    base = {
        "model": "claude-sonnet-5",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Show me setup.py"}]}],
    }
    tool = {
        "name": "read_file",
        "description": "Read a file.",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    assert bodies == [
        base,
        {**base, "system": "Be careful."},
        {**base, "system": "pdf: Fill PDF forms.\n\nBe careful."},
        {**base, "system": "pdf: Fill PDF forms.\n\nBe careful.", "tools": [tool]},
    ]
    counts = [fake_count(body) for body in bodies]
    assert [result.parts[name].tokens for name in ("messages", "system", "skills", "tools")] == [
        counts[0],
        counts[1] - counts[0],
        counts[2] - counts[1],
        counts[3] - counts[2],
    ]
    assert result.total.tokens == counts[3]
    assert result.method == "native" and result.source == "native"
    assert result.total.scaled is None
    assert result.total.cost_usd == pytest.approx(counts[3] * 2 / 1e6)
    twin = measure("claude-sonnet-5", "Be careful.", MESSAGES, TOOLS, SKILLS)
    assert result.o200k == {
        **{name: part.tokens for name, part in twin.parts.items()},
        "total": twin.total.tokens,
    }
    assert result.graded_tokens == twin.total.tokens
    data = result.as_dict()
    assert data["o200k"] == result.o200k
    assert data["exact"] == {"requested": True, "used": True}
    assert data["parts"]["tools"]["source"] == "native"
    assert data["tokenizer"] == "anthropic count_tokens"


def test_exact_skips_stages_that_add_nothing(anthropic_server: FakeAnthropic) -> None:
    with client_for(anthropic_server) as client:
        result = measure("claude-sonnet-5", tools=TOOLS, exact=True, client=client)
        assert client.requests_made == 2  # the probe alone, then with the tools
    assert result.probe is True
    assert result.parts["system"].tokens == result.parts["skills"].tokens == 0
    bodies = [body for _headers, body in anthropic_server.seen]
    assert bodies[0]["messages"] == [{"role": "user", "content": "."}]
    assert result.parts["tools"].tokens == fake_count(bodies[1]) - fake_count(bodies[0])


def test_a_refused_shape_turns_the_whole_report_into_estimates(
    anthropic_server: FakeAnthropic,
) -> None:
    anthropic_server.tools_replies["claude-sonnet-5"] = Reply(
        400,
        {
            "type": "error",
            "error": {"type": "invalid_request_error", "message": "tools: unsupported schema"},
            "request_id": "req_no",
        },
    )
    with client_for(anthropic_server) as client:
        result = measure(
            "claude-sonnet-5", "Be careful.", MESSAGES, TOOLS, exact=True, client=client
        )
    assert all(part.source == "estimate" for part in result.parts.values())
    assert (result.method, result.scaled_method) == ("o200k", "o200k×1.80")
    reason = (
        "count_tokens refused the request, so these are estimates: Anthropic count_tokens: "
        "HTTP 400 invalid_request_error: tools: unsupported schema (request req_no)"
    )
    assert result.fallback_reason == reason
    assert result.notes[0] == reason
    assert result.as_dict()["exact"] == {"requested": True, "used": False, "reason": reason}
    assert result.total == measure("claude-sonnet-5", "Be careful.", MESSAGES, TOOLS).total


@pytest.mark.parametrize(
    ("status", "kind"), [(401, "authentication_error"), (529, "overloaded_error")]
)
def test_other_errors_are_never_swallowed(
    anthropic_server: FakeAnthropic, status: int, kind: str
) -> None:
    anthropic_server.tools_replies["claude-sonnet-5"] = Reply(
        status, {"type": "error", "error": {"type": kind, "message": "nope"}, "request_id": "req_x"}
    )
    with client_for(anthropic_server) as client, pytest.raises(CountFailed) as caught:
        measure("claude-sonnet-5", messages=MESSAGES, tools=TOOLS, exact=True, client=client)
    assert f"HTTP {status} {kind}: nope (request req_x)" in str(caught.value)


# --- the CLI against the same server -----------------------------------------------------


def run_toll(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("ANTHROPIC_")}
    environment.update(env)
    return subprocess.run(
        [sys.executable, "-m", "pytest_toll", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=environment,
    )


def test_cli_measure_exact(anthropic_server: FakeAnthropic, tmp_path: Path) -> None:
    (tmp_path / "m.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic_server.url}
    result = run_toll(
        "measure",
        "--model",
        "claude-sonnet-5",
        "--messages",
        "m.json",
        "--exact",
        "--json",
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    body = anthropic_server.seen[0][1]
    assert report["total"]["tokens"] == fake_count(body)
    assert report["method"] == "native"
    assert KEY not in result.stdout + result.stderr
    graded = report["o200k"]["total"]
    budget = run_toll(
        "measure",
        "--model",
        "claude-sonnet-5",
        "--messages",
        "m.json",
        "--exact",
        "--budget",
        str(graded),
        cwd=tmp_path,
        env=env,
    )
    assert budget.returncode == 0, budget.stdout + budget.stderr
    assert (
        "native: Anthropic's count_tokens; budgets and pins use the o200k_base column"
        in budget.stdout
    )
    over = run_toll(
        "measure",
        "--model",
        "claude-sonnet-5",
        "--messages",
        "m.json",
        "--exact",
        "--budget",
        str(graded - 1),
        cwd=tmp_path,
        env=env,
    )
    assert over.returncode == 1
    assert over.stdout.splitlines()[-1] == f"over budget: {graded:,} > {graded - 1:,} o200k tokens"
    anthropic_server.replies["claude-sonnet-5"] = Reply(
        401,
        {
            "type": "error",
            "error": {"type": "authentication_error", "message": "invalid x-api-key"},
            "request_id": "req_k",
        },
    )
    denied = run_toll("measure", "--model", "claude-sonnet-5", "--exact", cwd=tmp_path, env=env)
    assert denied.returncode == 2
    assert denied.stderr == (
        "toll: error: Anthropic count_tokens: HTTP 401 authentication_error: invalid x-api-key "
        "(request req_k) — check ANTHROPIC_API_KEY\n"
    )
    assert KEY not in denied.stdout + denied.stderr


def test_cli_calibrate_exact(anthropic_server: FakeAnthropic, tmp_path: Path) -> None:
    text = "The quick brown fox jumps over the lazy dog. " * 4
    (tmp_path / "s.txt").write_text(text, encoding="utf-8")
    env = {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": anthropic_server.url}
    result = run_toll(
        "calibrate",
        "--model",
        "claude-sonnet-5",
        "--exact",
        "s.txt",
        "--json",
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    probe = fake_count({"messages": [{"role": "user", "content": "."}]})
    sample = fake_count({"messages": [{"role": "user", "content": text}]})
    o200k = tokens.count(text) - tokens.count(".")
    assert report["samples"] == [
        {
            "path": "s.txt",
            "o200k": o200k,
            "provider": sample - probe,
            "ratio": round((sample - probe) / o200k, 4),
        }
    ]
    assert report["source"] == "anthropic count_tokens"


def test_the_toll_fixture_records_the_o200k_count_of_an_exact_call(
    anthropic_server: FakeAnthropic,
) -> None:
    from pytest_toll.fixture import Toll

    meter = Toll("tests/test_agent.py::test_call")
    with client_for(anthropic_server) as client:
        report = meter.call(
            "claude-sonnet-5",
            system="Be careful.",
            messages=MESSAGES,
            tools=TOOLS,
            exact=True,
            client=client,
        )
    estimate = measure("claude-sonnet-5", "Be careful.", MESSAGES, TOOLS)
    assert report.method == "native"
    assert report.total.tokens != estimate.total.tokens
    # Budgets and pins grade the deterministic o200k count, never the provider's.
    assert [(record.tokens, record.method) for record in meter.records] == [
        (estimate.total.tokens, "o200k")
    ]
