"""A hostile count_tokens endpoint, real on 127.0.0.1: ends at the deadline, in bounded
memory, and never prints the API key (not from an error snippet, a request id, a URL)."""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler

import pytest

from tests.faults.hostile import (
    API_KEY,
    DEADLINE,
    NO_DEADLINE,
    Behaviour,
    assert_could_not_judge,
    drip,
    http_server,
    huge_body,
    run_toll,
    start,
)

COUNT = "/v1/messages/count_tokens"


def echoes_the_key(handler: BaseHTTPRequestHandler) -> None:
    """A 401 whose message and request id both carry the key it was sent."""
    key = handler.headers.get("x-api-key", "")
    body = (
        '{"type": "error", "error": {"type": "authentication_error", '
        f'"message": "invalid x-api-key {key}"}}}}'
    ).encode()
    start(handler, 401, "application/json", request_id=f"req_{key}")
    handler.wfile.write(body)


def deep(handler: BaseHTTPRequestHandler) -> None:
    start(handler, 200, "application/json")
    handler.wfile.write(b'{"input_tokens": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")


def measure_exact(base: str, timeout: float = DEADLINE) -> list[str]:
    return [
        "measure",
        "--model",
        "claude-sonnet-5",
        "--exact",
        "--count-timeout",
        f"{timeout:g}",
        "--base-url",
        base,
    ]


# Each case with the deadline it runs under: only the dripping body must hit one (its
# message names it); the others get one no load can reach first, so on a busy machine a slow
# start is never mistaken for their fault (issue #25: "echoes the key" once missed 2 s).
CASES: dict[str, tuple[Behaviour, float, str]] = {
    "drip": (drip, DEADLINE, "no answer within 2 s"),
    "huge": (huge_body, NO_DEADLINE, "larger than the 1 MiB read limit; cut, nothing counted"),
    "echoes the key": (
        echoes_the_key,
        NO_DEADLINE,
        "invalid x-api-key [secret] (request req_[secret])",
    ),
    "deep": (deep, NO_DEADLINE, "HTTP 200 without an input_tokens count"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_count_endpoint(case: str) -> None:
    behaviour, timeout, expected = CASES[case]
    with http_server({COUNT: behaviour}) as base:
        outcome = run_toll(*measure_exact(base, timeout), env={"ANTHROPIC_API_KEY": API_KEY})
    assert_could_not_judge(outcome, expected)


def test_a_key_with_a_newline_is_refused_unseen() -> None:
    with http_server({COUNT: echoes_the_key}) as base:
        outcome = run_toll(
            *measure_exact(base, NO_DEADLINE),
            env={"ANTHROPIC_API_KEY": API_KEY[:8] + "\n" + API_KEY[8:]},
        )
    assert_could_not_judge(
        outcome, "contains a line break", secrets=(API_KEY, API_KEY[:8], API_KEY[8:])
    )


def test_secrets_in_the_base_url_are_masked() -> None:
    with http_server({COUNT: drip}) as base:
        url = base.replace("http://", "http://gateway:gw-pa55word@")
        outcome = run_toll(*measure_exact(url), env={"ANTHROPIC_API_KEY": API_KEY})
    assert_could_not_judge(
        outcome,
        "at http://***@127.0.0.1:",
        "/v1/messages/count_tokens: no answer within 2 s",
        secrets=(API_KEY, "gw-pa55word"),
    )
