"""The capture hook against real HTTP: the official SDK clients, a plain httpx client, respx
and a vcrpy cassette, pointed at a local server on 127.0.0.1 that speaks the APIs' wire
formats. What the server received, measured, is compared with what capture measured as it
was sent (capture keeps measurements, not bodies)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
import respx
import vcr

from pytest_toll.calls.capture import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    MeasuredRequest,
    SentRequest,
    measure_sent,
    recognise,
)
from pytest_toll.capture_hook import Capture, active_captures, patched
from tests.capture.llm_server import REPLY, Server, serving

SECRET = "sk-test-do-not-record-4242"
TOOLS = [
    {
        "name": "search_notes",
        "description": "Search the team's notes by keyword; returns matching titles.",
        "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}},
    }
]


@pytest.fixture
def server() -> Iterator[Server]:
    with serving() as running:
        yield running


@pytest.fixture(autouse=True)
def nothing_left_patched() -> Iterator[None]:
    assert not patched() and active_captures() == 0
    yield
    assert not patched() and active_captures() == 0


def figures(requests: Any) -> list[tuple[object, ...]]:
    """What a measurement says of each request, leaving out where it went."""
    return [
        (r.api, r.model, r.stream, r.tokens, r.as_dict().get("parts"), r.error) for r in requests
    ]


def measured_as_received(server: Server, *paths: str) -> list[tuple[object, ...]]:
    """The bodies the server received on ``paths``, measured as capture measures them."""
    sent = [
        SentRequest(api, "h", path, body)
        for path in paths
        for body in server.log.bodies(path)
        if (api := recognise("POST", path)) is not None
    ]
    return figures(measure_sent(sent).requests)


def captured(capture: Capture) -> list[MeasuredRequest]:
    return list(capture.measure().requests)


def _anthropic(server: Server) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=server.url, api_key=SECRET, max_retries=0)


def _openai(server: Server) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=SECRET, max_retries=0)


def test_nothing_is_patched_until_a_capture_starts_and_after_it_stops() -> None:
    capture = Capture()
    with capture:
        assert patched()
        with capture:  # nested: one capture, not two
            assert active_captures() == 1
        assert patched()
    assert not patched()
    with pytest.raises(RuntimeError), capture:
        raise RuntimeError("the test failed")
    assert not patched()


def test_anthropic_sdk_plain_and_streaming(server: Server) -> None:
    client = _anthropic(server)
    with Capture() as capture:
        reply = client.messages.create(
            model="claude-sonnet-5",
            max_tokens=50,
            system="You answer from the team's notes.",
            messages=[{"role": "user", "content": "What did we decide about the release?"}],
            tools=TOOLS,  # type: ignore[arg-type]
        )
        with client.messages.stream(
            model="claude-sonnet-5",
            max_tokens=50,
            messages=[{"role": "user", "content": "Stream it."}],
        ) as stream:
            streamed = stream.get_final_text()
        client.messages.count_tokens(
            model="claude-sonnet-5", messages=[{"role": "user", "content": "not a model call"}]
        )
    assert reply.content[0].type == "text" and reply.content[0].text == REPLY
    assert streamed == REPLY
    # What was sent, measured, is what the server received; count_tokens is left alone.
    assert figures(captured(capture)) == measured_as_received(server, "/v1/messages")
    report = capture.measure()
    first, second = report.requests
    assert (first.api, first.model, first.stream, second.stream) == (
        ANTHROPIC_MESSAGES,
        "claude-sonnet-5",
        False,
        True,
    )
    assert first.report is not None and first.report.parts["tools"].tokens > 0
    assert first.report.parts["system"].tokens > 0
    assert first.report.scaled_method == "o200k×1.80" and first.report.total.cost_usd is not None
    assert report.largest is first and report.total == (first.tokens or 0) + (second.tokens or 0)
    assert SECRET not in json.dumps(report.as_dict())


def test_openai_sdk_chat_streaming_and_responses(server: Server) -> None:
    client = _openai(server)
    with Capture() as capture:
        chat = client.chat.completions.create(
            model="gpt-6.2-sol",
            messages=[
                {"role": "system", "content": "You answer from the team's notes."},
                {"role": "user", "content": "What did we decide?"},
            ],
        )
        chunks = list(
            client.chat.completions.create(
                model="gpt-6.2-sol",
                messages=[{"role": "user", "content": "Stream it."}],
                stream=True,
            )
        )
        response = client.responses.create(
            model="gpt-6.2-sol", instructions="Be brief.", input="Summarise the notes."
        )
    assert chat.choices[0].message.content == REPLY
    assert chunks[0].choices[0].delta.content == REPLY
    assert response.output_text == REPLY
    received = measured_as_received(server, "/v1/chat/completions", "/v1/responses")
    assert figures(captured(capture)) == received
    report = capture.measure()
    assert [request.api for request in report.requests] == [
        OPENAI_CHAT,
        OPENAI_CHAT,
        OPENAI_RESPONSES,
    ]
    assert [request.stream for request in report.requests] == [False, True, False]
    responses = report.requests[2].report
    assert responses is not None and responses.parts["system"].tokens > 0
    assert responses.scaled_method is None  # o200k is the OpenAI tokenizer itself


def run_agent(client: anthropic.Anthropic, question: str, turns: int = 3) -> list[str]:
    """An agent-like loop: each turn sends the whole conversation so far, plus the tools."""
    messages: list[dict[str, Any]] = []
    answers = []
    for turn in range(turns):
        messages.append({"role": "user", "content": f"{question} (turn {turn + 1})"})
        reply = client.messages.create(
            model="claude-sonnet-5",
            max_tokens=100,
            system="You are the notes assistant. Search before you answer.",
            messages=messages,  # type: ignore[arg-type]
            tools=TOOLS,  # type: ignore[arg-type]
        )
        text = "".join(block.text for block in reply.content if block.type == "text")
        messages.append({"role": "assistant", "content": text})
        answers.append(text)
    return answers


def test_a_growing_conversation_grades_its_largest_request(server: Server) -> None:
    with Capture() as capture:
        assert run_agent(_anthropic(server), "What changed in the release notes?") == [REPLY] * 3
    report = capture.measure()
    tokens = [request.tokens or 0 for request in report.requests]
    assert len(tokens) == 3 and tokens[0] < tokens[1] < tokens[2]
    assert report.largest is report.requests[2] and report.total == sum(tokens)


def test_async_clients(server: Server) -> None:
    async def agent() -> tuple[str, str]:
        claude = anthropic.AsyncAnthropic(base_url=server.url, api_key=SECRET, max_retries=0)
        gpt = openai.AsyncOpenAI(base_url=f"{server.url}/v1", api_key=SECRET, max_retries=0)
        first = await claude.messages.create(
            model="claude-haiku-4-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
        second = await gpt.chat.completions.create(
            model="gpt-6.2-sol", messages=[{"role": "user", "content": "hi"}]
        )
        assert first.content[0].type == "text"
        return first.content[0].text, str(second.choices[0].message.content)

    with Capture() as capture:
        assert asyncio.run(agent()) == (REPLY, REPLY)
    assert [request.api for request in captured(capture)] == [ANTHROPIC_MESSAGES, OPENAI_CHAT]


def test_a_streaming_request_body_is_sent_as_the_same_bytes(server: Server) -> None:
    body = json.dumps(
        {
            "model": "claude-sonnet-5",
            "max_tokens": 5,
            "messages": [{"role": "user", "content": "x"}],
        }
    ).encode()

    def pieces() -> Iterator[bytes]:
        yield body[:10]
        yield body[10:]

    with Capture() as capture, httpx.Client() as client:
        response = client.post(f"{server.url}/v1/messages", content=pieces())
    assert response.status_code == 200
    assert server.log.bodies("/v1/messages") == [body]
    assert figures(captured(capture)) == measured_as_received(server, "/v1/messages")


class GeneratorFailed(Exception):
    """What the code's own body generator raises."""


@pytest.mark.parametrize("asynchronous", [False, True])
def test_the_codes_own_body_generator_error_reaches_the_code(
    server: Server, asynchronous: bool
) -> None:
    def pieces() -> Iterator[bytes]:
        yield b'{"model": "claude-sonnet-5",'
        raise GeneratorFailed("the code's generator broke")

    async def async_pieces() -> Any:
        yield b'{"model": "claude-sonnet-5",'
        raise GeneratorFailed("the code's generator broke")

    async def send_async() -> None:
        async with httpx.AsyncClient() as client:
            await client.post(f"{server.url}/v1/messages", content=async_pieces())

    with Capture() as capture, pytest.raises(GeneratorFailed, match="generator broke"):
        if asynchronous:
            asyncio.run(send_async())
        else:
            with httpx.Client() as client:
                client.post(f"{server.url}/v1/messages", content=pieces())
    assert captured(capture) == [] and server.log.bodies("/v1/messages") == []


def test_other_requests_are_left_alone(server: Server) -> None:
    with Capture() as capture, httpx.Client() as client:
        assert client.get(f"{server.url}/health").json() == {"ok": True}
        assert client.post(f"{server.url}/v1/embeddings", content=b"\x00raw").json() == {"echo": 4}
        assert client.get(f"{server.url}/v1/messages").status_code == 200  # not a POST
    assert captured(capture) == []
    assert [entry.body for entry in server.log.received] == [b"", b"\x00raw", b""]


def test_an_unreadable_body_is_a_request_that_could_not_be_judged(server: Server) -> None:
    with Capture() as capture, httpx.Client() as client:
        client.post(f"{server.url}/v1/chat/completions", content=b"{not json")
        client.post(f"{server.url}/v1/chat/completions", json={"messages": []})
    report = capture.measure()
    assert [request.tokens for request in report.requests] == [None, None]
    assert report.requests[0].error.startswith("the body is not JSON")
    assert report.requests[1].error == "the body names no model"
    assert report.largest is None and report.as_dict()["could_not_judge"] == 2


def test_a_mock_transport_fake_endpoint_is_captured() -> None:
    def endpoint(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json={"seen": len(request.content)})

    body = {"model": "gpt-6.2-sol", "messages": [{"role": "user", "content": "hello"}]}
    with Capture() as capture, httpx.Client(transport=httpx.MockTransport(endpoint)) as client:
        response = client.post("https://api.openai.com/v1/chat/completions", json=body)
    [request] = captured(capture)
    assert response.json()["seen"] == len(json.dumps(body, separators=(",", ":")))
    assert request.host == "api.openai.com" and request.model == "gpt-6.2-sol"
    assert request.tokens is not None


@pytest.mark.parametrize("capture_first", [True, False])
@pytest.mark.parametrize("using", ["httpcore", "httpx"])
def test_respx_routes_compose_with_capture(capture_first: bool, using: str) -> None:
    body = {
        "model": "claude-sonnet-5",
        "max_tokens": 5,
        "messages": [{"role": "user", "content": "hi"}],
    }
    capture = Capture()
    router = respx.mock(using=using, assert_all_called=True)
    route = router.post("https://api.anthropic.com/v1/messages").respond(json={"mocked": True})
    first, second = (capture, router) if capture_first else (router, capture)
    with first, second, httpx.Client() as client:
        response = client.post(
            "https://api.anthropic.com/v1/messages?beta=true",
            json=body,
            headers={"x-api-key": SECRET},
        )
        assert route.called  # respx forgets its calls when it stops
        assert json.loads(route.calls.last.request.content) == body
    assert response.json() == {"mocked": True}
    [sent] = captured(capture)
    assert (sent.host, sent.path) == ("api.anthropic.com", "/v1/messages")  # no query string
    assert figures([sent]) == figures(
        measure_sent(
            [SentRequest(ANTHROPIC_MESSAGES, "h", "/v1/messages", json.dumps(body).encode())]
        ).requests
    )


def test_a_vcr_cassette_replays_under_capture(tmp_path: Path) -> None:
    cassette = str(tmp_path / "agent.yaml")
    recorder = vcr.VCR(record_mode="once", filter_headers=["x-api-key", "authorization"])
    with serving() as server:
        base = server.url
        with recorder.use_cassette(cassette), Capture() as recording:
            recorded = run_agent(_anthropic(server), "What is in the notes?", turns=2)
    # The server is gone: only the cassette can answer now.
    with Capture() as replaying, recorder.use_cassette(cassette) as played:
        client = anthropic.Anthropic(base_url=base, api_key=SECRET, max_retries=0)
        replayed = run_agent(client, "What is in the notes?", turns=2)
    assert replayed == recorded == [REPLY, REPLY] and played.play_count == 2
    assert figures(captured(replaying)) == figures(captured(recording))
    assert SECRET not in Path(cassette).read_text()
