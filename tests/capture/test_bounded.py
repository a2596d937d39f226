"""A capture keeps measurements, not bodies: memory stays flat in the number of requests;
and a body that cannot be measured is a request that "could not judge", never a crash."""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pytest_toll.calls.capture import OPENAI_CHAT, SentRequest, measure_sent
from pytest_toll.capture_hook import Capture
from pytest_toll.core.limits import MAX_NESTING_DEPTH

LLM_SERVER = Path(__file__).with_name("llm_server.py")
REQUESTS = 200
BODY_BYTES = 200_000


@pytest.fixture
def server_url() -> Iterator[str]:
    """The local server in a process of its own, so the bodies it keeps are not counted here."""
    process = subprocess.Popen(
        [sys.executable, str(LLM_SERVER)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert process.stdout is not None
        yield process.stdout.readline().strip()
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(10)


def _body(number: int) -> bytes:
    """A chat request of about BODY_BYTES, different each time (nothing shared or interned)."""
    words = " ".join(f"note{number}-{index}" for index in range(BODY_BYTES // 12))
    body = {"model": "gpt-6.2-sol", "messages": [{"role": "user", "content": words}]}
    return json.dumps(body).encode()


@pytest.mark.slow
def test_memory_is_flat_in_the_number_of_requests(server_url: str) -> None:
    sent = 0
    traced: dict[int, int] = {}
    with Capture() as capture, httpx.Client(base_url=server_url, timeout=60) as client:
        client.post("/v1/chat/completions", content=_body(-1))  # loads the tokenizer
        tracemalloc.start()
        try:
            for number in range(REQUESTS):
                if number in (0, REQUESTS // 4):
                    gc.collect()  # requests and responses httpx left in cycles: not kept
                    traced[number] = tracemalloc.get_traced_memory()[0]
                body = _body(number)
                sent += len(body)
                assert client.post("/v1/chat/completions", content=body).status_code == 200
                del body
            gc.collect()
            traced[REQUESTS] = tracemalloc.get_traced_memory()[0]
        finally:
            tracemalloc.stop()
    report = capture.measure()
    assert len(report.requests) == REQUESTS + 1 and not report.unjudged
    assert sent >= REQUESTS * BODY_BYTES
    grown = traced[REQUESTS] - traced[0]
    # What is kept per request is its measurement: well under a fiftieth of the bodies ...
    assert grown < sent / 50, f"grew {grown:,} bytes over {sent:,} bytes of bodies"
    # ... and the last three quarters of the run add no more per request than a few KB.
    per_request = (traced[REQUESTS] - traced[REQUESTS // 4]) / (REQUESTS - REQUESTS // 4)
    assert per_request < 4096, f"{per_request:,.0f} bytes per request"
    print(f"{grown:,} bytes over {REQUESTS} requests, {sent:,} bytes of bodies")


def _nested(depth: int) -> bytes:
    """A chat body whose content nests ``depth`` lists deep (written as text: too deep for
    json.dumps to write itself)."""
    content = "[" * depth + '"x"' + "]" * depth
    return f'{{"model": "gpt-6.2-sol", "messages": [{{"role": "user", "content": {content}}}]}}'.encode()


def test_a_body_nested_past_the_depth_limit_could_not_be_judged() -> None:
    sent = SentRequest(OPENAI_CHAT, "h", "/v1/chat/completions", _nested(MAX_NESTING_DEPTH + 5))
    [request] = measure_sent([sent]).requests
    assert request.tokens is None
    assert request.error == f"the body nests deeper than {MAX_NESTING_DEPTH} levels; not read"
    # Past what json itself can parse: still could not judge, never a RecursionError.
    sent = SentRequest(OPENAI_CHAT, "h", "/v1/chat/completions", _nested(100_000))
    [request] = measure_sent([sent]).requests
    assert request.tokens is None and "nests deeper" in request.error


NESTED_TESTS = """\
import httpx
import pytest

@pytest.mark.toll(capture=True)
def test_deep_body(server):
    content = "[" * 100_000 + '"x"' + "]" * 100_000
    body = '{"model": "gpt-6.2-sol", "messages": [{"role": "user", "content": ' + content + "}]}"
    httpx.post(server.url + "/v1/chat/completions", content=body.encode())
"""


def test_a_deep_body_is_in_the_summary_as_could_not_judge(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(llm_server=LLM_SERVER.read_text(encoding="utf-8"))
    pytester.makeconftest(
        "import pytest\nfrom llm_server import serving\n\n@pytest.fixture\n"
        "def server():\n    with serving() as running:\n        yield running\n"
    )
    pytester.makepyfile(test_deep=NESTED_TESTS)
    pytester.makefile(".yaml", toll="version: 1\n")
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--toll", "--toll-json", "toll.json"
    )
    result.assert_outcomes(failed=1)
    [entry] = json.loads((pytester.path / "toll.json").read_text())["entries"]
    assert entry["outcome"] == "error" and "nests deeper" in entry["message"]
    assert "RecursionError" not in result.stdout.str()
