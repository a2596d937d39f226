"""Bedrock, Vertex and Gemini captured through their real clients (the Anthropic SDK's
Bedrock and Vertex clients, boto3's ``bedrock-runtime``, google-genai), and LiteLLM and
LangChain captured through the SDKs they call, all against the local server on 127.0.0.1.
Each request is compared with what the server received, measured the same way."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from typing import Any

import anthropic
import boto3
import pytest
from botocore.parsers import ResponseParserError
from google import genai
from google.genai import types
from pydantic import SecretStr

from pytest_toll import capture_botocore
from pytest_toll.calls.capture import (
    BEDROCK_CONVERSE,
    BEDROCK_INVOKE,
    GEMINI,
    VERTEX_ANTHROPIC,
    MeasuredRequest,
    SentRequest,
    measure_sent,
    recognise,
)
from pytest_toll.calls.providers import UNSCALED_GEMINI, catalogue_name
from pytest_toll.capture_hook import Capture, active_captures, patched
from pytest_toll.core.models import load_models
from tests.capture.llm_server import REPLY, Server, serving

SYSTEM = "You are the notes assistant. Search the notes before you answer."
QUESTION = "What changed in the release?"
SCHEMA = {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}
BEDROCK_CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


@pytest.fixture
def server() -> Iterator[Server]:
    with serving() as running:
        yield running


@pytest.fixture(autouse=True)
def dummy_aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Credentials botocore signs with (the local server checks nothing); no profile read."""
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLOCALTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local-secret-never-recorded")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    assert not patched() and active_captures() == 0
    yield
    assert not patched() and active_captures() == 0


def received(server: Server) -> list[tuple[object, ...]]:
    """Every LLM request the server received, measured as capture measures a request."""
    sent = []
    for entry in server.log.received:
        path = entry.path.split("?")[0]
        api = recognise(entry.method, path)
        if api is not None:
            sent.append(SentRequest(api, "h", path, entry.body))
    return figures(measure_sent(sent).requests)


def figures(requests: Any) -> list[tuple[object, ...]]:
    return [
        (r.api, r.model, r.stream, r.tokens, r.as_dict().get("parts"), r.error) for r in requests
    ]


def captured(capture: Capture) -> list[MeasuredRequest]:
    return list(capture.measure().requests)


def _boto3_client(server: Server) -> Any:
    return boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=server.url)


def test_model_ids_map_to_the_catalogue() -> None:
    assert catalogue_name("us.anthropic.claude-sonnet-4-5-20250929-v1:0") == (
        "claude-sonnet-4-5-20250929"
    )
    assert catalogue_name("anthropic.claude-haiku-4-5-20251001-v1%3A0") == (
        "claude-haiku-4-5-20251001"
    )
    arn = "arn:aws:bedrock:us-east-1:123:inference-profile/eu.anthropic.claude-opus-4-5-v1:0"
    assert catalogue_name(arn) == "claude-opus-4-5"
    assert catalogue_name("claude-sonnet-4-5@20250929") == "claude-sonnet-4-5"
    assert (
        recognise(
            "POST", "/projects/p/locations/l/publishers/anthropic/models/count-tokens:rawPredict"
        )
        is None
    )
    assert recognise("POST", "/v1beta/models/gemini-2.5-pro:countTokens") is None


def test_anthropic_bedrock_client_invoke_and_stream(server: Server) -> None:
    client = anthropic.AnthropicBedrock(aws_region="us-east-1", base_url=server.url, max_retries=0)
    tool = {"name": "search_notes", "description": "Search the notes.", "input_schema": SCHEMA}
    with Capture() as capture:
        reply = client.messages.create(
            model=BEDROCK_CLAUDE,
            max_tokens=50,
            system=SYSTEM,
            messages=[{"role": "user", "content": QUESTION}],
            tools=[tool],  # type: ignore[list-item]
        )
        with client.messages.stream(
            model=BEDROCK_CLAUDE, max_tokens=50, messages=[{"role": "user", "content": QUESTION}]
        ) as stream:
            streamed = stream.get_final_text()
    assert reply.content[0].type == "text" and streamed == REPLY
    first, second = captured(capture)
    assert figures([first, second]) == received(server)
    assert (first.api, first.stream, second.api, second.stream) == (
        BEDROCK_INVOKE,
        False,
        BEDROCK_INVOKE,
        True,
    )
    assert first.report is not None and first.report.parts["tools"].tokens > 0
    assert first.report.parts["system"].tokens > 0
    # The Bedrock id is priced and scaled as the catalogue's Claude Sonnet 4.5.
    assert first.report.scaled_method == "o200k×1.29" and first.report.total.cost_usd
    assert f"{BEDROCK_CLAUDE} measured as the catalogue's claude-sonnet-4-5" in first.notes


def test_boto3_converse_invoke_and_their_streams(server: Server) -> None:
    early = _boto3_client(server)  # made before the capture: watched by hand
    with Capture() as capture:
        client = _boto3_client(server)
        answer = client.converse(
            modelId=BEDROCK_CLAUDE,
            system=[{"text": SYSTEM}, {"cachePoint": {"type": "default"}}],
            messages=[{"role": "user", "content": [{"text": QUESTION}]}],
            toolConfig={
                "tools": [
                    {
                        "toolSpec": {
                            "name": "search_notes",
                            "description": "Search the notes.",
                            "inputSchema": {"json": SCHEMA},
                        }
                    }
                ]
            },
        )
        events = list(
            client.converse_stream(
                modelId="amazon.nova-pro-v1:0",
                messages=[{"role": "user", "content": [{"text": QUESTION}]}],
            )["stream"]
        )
        body = {
            "anthropic_version": "bedrock-2023-05-31",
            "max_tokens": 50,
            "system": SYSTEM,
            "messages": [{"role": "user", "content": QUESTION}],
        }
        invoked = json.loads(
            client.invoke_model(modelId=BEDROCK_CLAUDE, body=json.dumps(body))["body"].read()
        )
        chunks = list(
            client.invoke_model_with_response_stream(modelId=BEDROCK_CLAUDE, body=json.dumps(body))[
                "body"
            ]
        )
        # Not an Anthropic body (an embedding): not a call measured here, left alone.
        client.invoke_model(modelId="amazon.titan-embed-text-v2:0", body=b'{"inputText": "x"}')
        early.converse(
            modelId=BEDROCK_CLAUDE, messages=[{"role": "user", "content": [{"text": "unwatched"}]}]
        )
        capture.watch(early)
        early.converse(
            modelId=BEDROCK_CLAUDE, messages=[{"role": "user", "content": [{"text": "watched"}]}]
        )
    assert answer["output"]["message"]["content"] == [{"text": REPLY}]
    assert (
        events[0] == {"messageStart": {"role": "assistant"}}
        and invoked["content"][0]["text"] == REPLY
    )
    assert len(chunks) == 6
    requests = captured(capture)
    assert [(r.api, r.stream) for r in requests] == [
        (BEDROCK_CONVERSE, False),
        (BEDROCK_CONVERSE, True),
        (BEDROCK_INVOKE, False),
        (BEDROCK_INVOKE, True),
        (BEDROCK_CONVERSE, False),  # the early client, once watched
    ]
    everything = received(server)
    unwatched = everything.pop(4)  # sent by the early client before it was watched
    assert figures(requests) == everything and unwatched[3] is not None
    converse = requests[0]
    assert converse.report is not None and converse.report.parts["tools"].tokens > 0
    assert converse.model == BEDROCK_CLAUDE and converse.path.endswith("-v1:0/converse")
    # The cachePoint after the system block is a breakpoint: tools + system are cacheable.
    prefix = converse.as_dict()["cacheable_prefix"]
    parts = converse.report.parts
    assert 0 < prefix < (converse.tokens or 0)
    assert abs(prefix - parts["tools"].tokens - parts["system"].tokens) <= 2
    nova = requests[1].as_dict()
    assert nova["scaled"] is None and "not in the model catalogue" in nova["notes"][0]
    # Once the capture stops, nothing records (the handler stays on the clients, idle).
    client.converse(
        modelId=BEDROCK_CLAUDE, messages=[{"role": "user", "content": [{"text": "after"}]}]
    )
    assert len(captured(capture)) == 5


def test_anthropic_vertex_client(server: Server) -> None:
    client = anthropic.AnthropicVertex(
        region="us-east5",
        project_id="notes-project",
        access_token="ya29.local-token-never-recorded",
        base_url=server.url,
        max_retries=0,
    )
    with Capture() as capture:
        reply = client.messages.create(
            model="claude-sonnet-4-5@20250929",
            max_tokens=50,
            system=SYSTEM,
            messages=[{"role": "user", "content": QUESTION}],
        )
        with client.messages.stream(
            model="claude-sonnet-4-5@20250929",
            max_tokens=50,
            messages=[{"role": "user", "content": QUESTION}],
        ) as stream:
            assert stream.get_final_text() == REPLY
    assert reply.content[0].type == "text"
    requests = captured(capture)
    assert [(r.api, r.stream) for r in requests] == [
        (VERTEX_ANTHROPIC, False),
        (VERTEX_ANTHROPIC, True),
    ]
    assert figures(requests) == received(server)
    assert requests[0].report is not None and requests[0].report.parts["system"].tokens > 0
    assert "local-token" not in json.dumps([r.as_dict() for r in requests])


def test_gemini_through_google_genai(server: Server) -> None:
    client = genai.Client(api_key="local-key", http_options=types.HttpOptions(base_url=server.url))
    search = types.FunctionDeclaration(
        name="search_notes", description="Search the notes.", parameters_json_schema=SCHEMA
    )
    config = types.GenerateContentConfig(
        system_instruction=SYSTEM, tools=[types.Tool(function_declarations=[search])]
    )
    with Capture() as capture:
        reply = client.models.generate_content(
            model="gemini-2.5-pro", contents=QUESTION, config=config
        )
        streamed = [
            chunk.text
            for chunk in client.models.generate_content_stream(
                model="gemini-2.5-pro", contents=QUESTION
            )
        ]
    assert reply.text == REPLY and streamed == [REPLY]
    first, second = captured(capture)
    assert figures([first, second]) == received(server)
    assert (first.api, first.stream, second.stream) == (GEMINI, False, True)
    assert first.report is not None
    parts = first.report.parts
    assert parts["system"].tokens > 0 and parts["tools"].tokens > 0 and parts["messages"].tokens > 0
    # Unscaled, and labelled so; priced from the catalogue's Gemini row.
    assert first.report.total.scaled is None and UNSCALED_GEMINI in first.notes
    assert first.report.total.cost_usd is not None


def test_litellm_and_langchain_are_captured_through_the_sdks_they_call(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch when it loads
    litellm = pytest.importorskip("litellm")
    from langchain_anthropic import ChatAnthropic
    from langchain_openai import ChatOpenAI

    question = [{"role": "user", "content": QUESTION}]
    with Capture() as capture:
        via_litellm = [
            litellm.completion(
                model="anthropic/claude-sonnet-5",
                api_base=server.url,
                api_key="sk-local",
                messages=question,
                max_tokens=20,
            ),
            litellm.completion(
                model="openai/gpt-6.2-sol",
                api_base=f"{server.url}/v1",
                api_key="sk-local",
                messages=question,
            ),
        ]
        via_langchain = [
            ChatAnthropic(  # type: ignore[call-arg]
                model="claude-sonnet-5",
                base_url=server.url,
                api_key=SecretStr("sk-local"),
                max_retries=0,
            ).invoke(QUESTION),
            ChatOpenAI(
                model="gpt-6.2-sol",
                base_url=f"{server.url}/v1",
                api_key=SecretStr("sk-local"),
                max_retries=0,
            ).invoke(QUESTION),
        ]
    assert [reply.choices[0].message.content for reply in via_litellm] == [REPLY, REPLY]
    assert [message.content for message in via_langchain] == [REPLY, REPLY]
    requests = captured(capture)
    assert [(r.api, r.model) for r in requests] == [
        ("anthropic.messages", "claude-sonnet-5"),
        ("openai.chat_completions", "gpt-6.2-sol"),
    ] * 2
    assert figures(requests) == received(server)
    assert all(request.tokens for request in requests)


def test_without_botocore_the_rest_of_capture_works(
    server: Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "botocore", None)  # as if it were not installed
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-local", max_retries=0)
    with Capture() as capture:
        assert not capture_botocore.available() and not capture_botocore.wrapped()
        client.messages.create(
            model="claude-sonnet-5", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert [request.api for request in captured(capture)] == ["anthropic.messages"]


def test_other_aws_requests_are_left_alone(server: Server) -> None:
    with Capture() as capture:
        client = _boto3_client(server)
        assert client.meta.events  # watched: its before-send sees this request too
        sts = boto3.client("sts", region_name="us-east-1", endpoint_url=server.url)
        with pytest.raises(ResponseParserError):  # the local server speaks no STS
            sts.get_caller_identity()
    assert captured(capture) == []


def test_a_gemini_model_given_a_measured_scale_is_scaled_and_not_labelled_unscaled() -> None:
    body = {"contents": [{"role": "user", "parts": [{"text": QUESTION}]}]}
    sent = [
        SentRequest(
            GEMINI, "h", "/v1beta/models/gemini-2.5-pro:generateContent", json.dumps(body).encode()
        )
    ]
    [plain] = measure_sent(sent).requests
    assert UNSCALED_GEMINI in plain.notes and plain.as_dict()["scaled"] is None
    catalogue = load_models({"gemini-2.5-pro": {"scale": 1.25}})
    [scaled] = measure_sent(sent, catalogue).requests
    assert UNSCALED_GEMINI not in scaled.notes
    assert scaled.as_dict()["scaled_method"] == "o200k×1.25"
