"""Bedrock InvokeModel, boto3 ``converse``, a Vertex request and a Gemini request, each
captured and graded by ``@pytest.mark.toll(budget=…, capture=True)`` in a pytester run, the
real clients against the local server."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_toll.report.data import SCHEMA_PATH

pytest_plugins = ["pytester"]

LLM_SERVER = Path(__file__).with_name("llm_server.py")
QUIET = ("-p", "no:hypothesispytest", "-p", "no:cacheprovider", "-p", "no:randomly")

CONFTEST = """\
import os

import pytest
from llm_server import serving

@pytest.fixture
def server(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIDLOCALTEST")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "local-secret-never-recorded")
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with serving() as running:
        yield running
"""

PROVIDER_TESTS = """\
import json

import anthropic
import boto3
import pytest
from google import genai
from google.genai import types

SYSTEM = "You are the notes assistant. Search the notes before you answer."
QUESTION = [{"role": "user", "content": "What changed in the release?"}]

@pytest.mark.toll(budget=500, capture=True)
def test_bedrock_invoke_model(server):
    client = anthropic.AnthropicBedrock(aws_region="us-east-1", base_url=server.url, max_retries=0)
    client.messages.create(
        model="anthropic.claude-sonnet-4-5-20250929-v1:0", max_tokens=50, system=SYSTEM,
        messages=QUESTION,
    )

@pytest.mark.toll(budget=500, capture=True)
def test_boto3_converse(server):
    client = boto3.client("bedrock-runtime", region_name="us-east-1", endpoint_url=server.url)
    client.converse(
        modelId="us.anthropic.claude-sonnet-4-5-20250929-v1:0",
        system=[{"text": SYSTEM}],
        messages=[{"role": "user", "content": [{"text": "What changed in the release?"}]}],
    )

@pytest.mark.toll(budget=500, capture=True)
def test_vertex(server):
    client = anthropic.AnthropicVertex(
        region="us-east5", project_id="notes", access_token="local-token", base_url=server.url,
        max_retries=0,
    )
    client.messages.create(
        model="claude-sonnet-4-5@20250929", max_tokens=50, system=SYSTEM, messages=QUESTION
    )

def gemini(server):
    client = genai.Client(api_key="local-key", http_options=types.HttpOptions(base_url=server.url))
    config = types.GenerateContentConfig(system_instruction=SYSTEM)
    client.models.generate_content(
        model="gemini-2.5-pro", contents="What changed in the release?", config=config
    )

@pytest.mark.toll(budget=500, capture=True)
def test_gemini(server):
    gemini(server)

@pytest.mark.toll(budget=5, capture=True)
def test_gemini_over_budget(server):
    gemini(server)
"""

EXPECTED = {
    "test_bedrock_invoke_model": ("bedrock.invoke_model", "o200k×1.29"),
    "test_boto3_converse": ("bedrock.converse", "o200k×1.29"),
    "test_vertex": ("vertex.anthropic", "o200k×1.29"),
    "test_gemini": ("gemini.generate_content", None),
}


def test_each_provider_is_captured_and_graded(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(llm_server=LLM_SERVER.read_text(encoding="utf-8"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_providers=PROVIDER_TESTS)
    pytester.makefile(".yaml", toll="version: 1\n")
    result = pytester.runpytest_subprocess(*QUIET, "--toll", "--toll-json", "toll.json")
    result.assert_outcomes(passed=4, failed=1)
    report = json.loads((pytester.path / "toll.json").read_text())
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text()))
    entries = {entry["name"].split("::")[-1]: entry for entry in report["entries"]}
    for name, (api, scaled_method) in EXPECTED.items():
        entry = entries[name]
        [request] = entry["capture"]["requests"]
        assert (request["api"], request["scaled_method"]) == (api, scaled_method), name
        assert entry["outcome"] == "new" and entry["budget"] == 500
        assert entry["measured"] == request["tokens"] and request["parts"]["system"] > 0
    over = entries["test_gemini_over_budget"]
    assert over["outcome"] == "over_budget" and over["measured"] > 5
    assert "Gemini's tokenizer is not o200k" in " ".join(
        entries["test_gemini"]["capture"]["requests"][0]["notes"]
    )
    output = result.stdout.str()
    assert "local-secret-never-recorded" not in output and "local-token" not in output
