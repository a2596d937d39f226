"""Hostile HTTP MCP servers, real on 127.0.0.1: every one ends at the deadline, in bounded
memory, with one clean line and no secret printed."""

from __future__ import annotations

import time
from http.server import BaseHTTPRequestHandler

import pytest

from tests.faults.hostile import (
    DEADLINE,
    NO_DEADLINE,
    TOKEN,
    Behaviour,
    assert_could_not_judge,
    drip,
    for_a_while,
    http_server,
    huge_body,
    run_toll,
    start,
)


def keepalive(handler: BaseHTTPRequestHandler) -> None:
    """An event stream of ``: keepalive`` comments and nothing else."""
    start(handler, 200, "text/event-stream")
    for _ in for_a_while():
        handler.wfile.write(b": keepalive\n\n")
        handler.wfile.flush()
        time.sleep(0.2)


def huge_sse_line(handler: BaseHTTPRequestHandler) -> None:
    """One SSE line that never ends."""
    start(handler, 200, "text/event-stream")
    handler.wfile.write(b"data: ")
    chunk = b"x" * (1 << 20)
    for _ in for_a_while():
        handler.wfile.write(chunk)


def deep_json(handler: BaseHTTPRequestHandler) -> None:
    """An answer nested 100,000 levels deep."""
    body = b'{"jsonrpc": "2.0", "id": 1, "result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    start(handler, 200, "application/json")
    handler.wfile.write(body)


def echoes_credentials(handler: BaseHTTPRequestHandler) -> None:
    """A 403 whose body repeats the Authorization header and the URL it was asked at."""
    body = f"forbidden: {handler.headers.get('Authorization')} at {handler.path}".encode()
    start(handler, 403, "text/plain")
    handler.wfile.write(body)


BEHAVIOURS: dict[str, Behaviour] = {
    "/drip": drip,
    "/keepalive": keepalive,
    "/huge": huge_body,
    "/huge-sse-line": huge_sse_line,
    "/deep": deep_json,
    "/echo": echoes_credentials,
}

# Each case with the deadline it runs under: the dripping and kept-alive answers must hit
# it (their message names it); the others get one no load can reach before their fault.
CASES: dict[str, tuple[float, str]] = {
    "/drip": (DEADLINE, "no answer to initialize within the 2s timeout"),
    "/keepalive": (DEADLINE, "no answer to initialize within the 2s timeout"),
    "/huge": (NO_DEADLINE, "larger than the 32 MiB read limit; cut, nothing measured"),
    "/huge-sse-line": (NO_DEADLINE, "larger than the 32 MiB read limit; cut, nothing measured"),
    "/deep": (NO_DEADLINE, "nests deeper than 200 levels"),
}


@pytest.mark.parametrize("path", sorted(CASES))
def test_hostile_http_server_ends_at_the_deadline_or_its_limit(path: str) -> None:
    timeout, expected = CASES[path]
    with http_server(BEHAVIOURS) as base:
        outcome = run_toll("weigh", "--timeout", f"{timeout:g}", "--url", base + path)
    assert_could_not_judge(outcome, expected)


def test_a_server_echoing_the_token_is_scrubbed() -> None:
    with http_server(BEHAVIOURS) as base:
        outcome = run_toll(
            "weigh",
            "--timeout",
            f"{NO_DEADLINE:g}",
            "--url",
            base + "/echo",
            "--header",
            "Authorization=Bearer ${MCP_TOKEN}",
            env={"MCP_TOKEN": TOKEN},
        )
    assert_could_not_judge(outcome, "HTTP 403", "forbidden: [secret] at /echo")


def test_userinfo_and_query_secrets_are_masked_in_the_target() -> None:
    password, query_secret = "pa55w0rd-in-url", "query-secret-991"
    with http_server(BEHAVIOURS) as base:
        url = base.replace("http://", f"http://user:{password}@") + f"/echo?key={query_secret}"
        outcome = run_toll("weigh", "--timeout", f"{NO_DEADLINE:g}", "--url", url)
    assert_could_not_judge(
        outcome, "http://***@127.0.0.1:", "/echo?key=***", secrets=(password, query_secret)
    )


@pytest.mark.parametrize(
    ("value", "why"),
    [
        (TOKEN + "\n", "contains a line break"),
        (TOKEN + "\u00e9", "contains non-ASCII characters"),
    ],
)
def test_a_header_value_that_cannot_be_sent_is_never_echoed(value: str, why: str) -> None:
    with http_server(BEHAVIOURS) as base:
        outcome = run_toll(
            "weigh",
            "--url",
            base + "/echo",
            "--header",
            "Authorization=Bearer ${MCP_TOKEN}",
            env={"MCP_TOKEN": value},
        )
    assert_could_not_judge(outcome, "header Authorization: its value " + why)
    assert "Illegal header value" not in outcome.output


def test_a_non_ascii_header_name_is_a_clean_usage_error() -> None:
    with http_server(BEHAVIOURS) as base:
        outcome = run_toll("weigh", "--url", base + "/echo", "--header", "Autorisátion=x")
    assert_could_not_judge(outcome, "not a valid HTTP header name")


@pytest.mark.parametrize(
    ("argument", "flag"),
    [
        (f"Authorization: Bearer {TOKEN}", "--header"),
        (f"APIKEYVALUE{TOKEN}", "--env"),
    ],
)
def test_a_malformed_option_never_echoes_its_argument(argument: str, flag: str) -> None:
    with http_server(BEHAVIOURS) as base:
        target = ["--url", base + "/echo"] if flag == "--header" else ["--", "true"]
        outcome = run_toll("weigh", flag, argument, *target)
    assert_could_not_judge(outcome, f"{flag} takes KEY=VALUE", "(not shown)")
