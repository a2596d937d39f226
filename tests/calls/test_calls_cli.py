"""``toll measure`` and ``toll calibrate`` run as real processes."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pytest_toll.calls.measuring import measure
from pytest_toll.core import tokens
from pytest_toll.definitions.serialize import serialize_claude
from pytest_toll.definitions.tools import normalize_tools
from tests.cli import run_toll as toll

SERVERS = Path(__file__).parents[1] / "servers"
TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file.",
        "inputSchema": {
            "type": "object",
            "title": "Args",
            "properties": {"path": {"type": "string"}},
        },
    }
]


def write(tmp_path: Path) -> None:
    (tmp_path / "system.txt").write_text("You are careful.", encoding="utf-8")
    (tmp_path / "messages.json").write_text(
        json.dumps([{"role": "user", "content": "Show me setup.py"}]), encoding="utf-8"
    )
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")


def test_measure_json_matches_the_library(tmp_path: Path) -> None:
    write(tmp_path)
    result = toll(
        "measure",
        "--model",
        "claude-sonnet-5",
        "--system",
        "system.txt",
        "--messages",
        "messages.json",
        "--tools",
        "tools.json",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    expected = measure(
        "claude-sonnet-5",
        "You are careful.",
        [{"role": "user", "content": "Show me setup.py"}],
        TOOLS,
    ).as_dict()
    assert report == expected
    assert report["kind"] == "call"
    assert set(report["parts"]) == {"messages", "system", "skills", "tools"}


def test_measure_text_table(tmp_path: Path) -> None:
    write(tmp_path)
    result = toll("measure", "--model", "gpt-6.2-sol", "--tools", "tools.json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    normalized, _ = normalize_tools(TOOLS)
    lines = result.stdout.splitlines()
    assert lines[0] == "call gpt-6.2-sol (openai) — o200k — probe message '.'"
    assert lines[1].split() == ["part", "o200k_base", "USD"]
    messages = tokens.count(".") + 4
    assert lines[2].split() == ["messages", str(messages), f"${messages * 2 / 1e6:,.6f}"]
    assert "tuning: o200k_base, 4 tokens/message, images not estimated" in lines
    assert serialize_claude(normalized)  # the claude block is not what an OpenAI model sees


def test_request_body_file_and_compact_and_budget(tmp_path: Path) -> None:
    body = {
        "model": "x",
        "system": [{"type": "text", "text": "Sys."}],
        "messages": [{"role": "user", "content": "hi"}],
        "tools": TOOLS,
    }
    (tmp_path / "body.json").write_text(json.dumps(body), encoding="utf-8")
    result = toll(
        "measure",
        "--model",
        "gpt-6.2-sol",
        "--messages",
        "body.json",
        "--compact",
        "--json",
        "--budget",
        "10",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    expected = measure(
        "gpt-6.2-sol", "Sys.", [{"role": "user", "content": "hi"}], TOOLS, tool_schemas="compact"
    )
    assert report["total"] == expected.as_dict()["total"]
    assert report["tool_schemas"] == "compact"
    assert report["budget"] == {"tokens": 10, "over": True}


def test_measure_a_stdio_server(tmp_path: Path) -> None:
    result = toll(
        "measure",
        "--model",
        "gpt-6.2-sol",
        "--server",
        f"{sys.executable} {SERVERS / 'raw_server.py'} noise",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    ping = [
        {
            "name": "ping",
            "description": "Check that the server is alive.",
            "inputSchema": {"type": "object"},
        }
    ]
    assert (
        json.loads(result.stdout)["parts"]["tools"]
        == measure("gpt-6.2-sol", tools=ping).as_dict()["parts"]["tools"]
    )


def test_measure_errors_are_exit_2(tmp_path: Path) -> None:
    write(tmp_path)
    missing = toll("measure", "--model", "gpt-6.2-sol", "--messages", "nope.json", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (2, "toll: error: nope.json: no such file\n")
    (tmp_path / "bad.json").write_text('[{"role": "robot"}]', encoding="utf-8")
    bad = toll("measure", "--model", "gpt-6.2-sol", "--messages", "bad.json", cwd=tmp_path)
    assert bad.returncode == 2
    assert bad.stderr.startswith("toll: error: bad.json: messages[0].role: must be user, assistant")
    nokey = toll("measure", "--model", "claude-sonnet-5", "--exact", cwd=tmp_path)
    assert nokey.returncode == 2
    assert "ANTHROPIC_API_KEY is not set" in nokey.stderr


def test_exact_for_openai_says_why(tmp_path: Path) -> None:
    result = toll("measure", "--model", "gpt-6.2-sol", "--exact", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (
        "note: exact counts come from Anthropic's count_tokens; openai models have no counting "
        "endpoint here, so these are estimates"
    ) in result.stdout.splitlines()


def test_calibrate_with_given_counts(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello world, this is a sample", encoding="utf-8")
    (tmp_path / "b.txt").write_text("def f(x):\n    return x * 2\n", encoding="utf-8")
    a = tokens.count("hello world, this is a sample") - tokens.count(".")
    b = tokens.count("def f(x):\n    return x * 2\n") - tokens.count(".")
    result = toll(
        "calibrate",
        "--model",
        "claude-sonnet-5",
        f"a.txt={a * 2}",
        f"b.txt={b + 1}",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["samples"] == [
        {"path": "a.txt", "o200k": a, "provider": a * 2, "ratio": 2.0},
        {"path": "b.txt", "o200k": b, "provider": b + 1, "ratio": round((b + 1) / b, 4)},
    ]
    assert report["max_ratio"] == 2.0
    assert report["factor"] == 2.0
    assert report["current"]["factor"] == 1.80
    text = toll("calibrate", "--model", "claude-sonnet-5", f"a.txt={a * 2}", cwd=tmp_path)
    assert "max ratio 2.0000, mean 2.0000 over 1 sample(s)" in text.stdout
    missing = toll("calibrate", "--model", "claude-sonnet-5", "a.txt", cwd=tmp_path)
    assert missing.returncode == 2
    assert (
        missing.stderr == "toll: error: a.txt: no provider count; give PATH=TOKENS or use --exact\n"
    )
    other = toll("calibrate", "--model", "gpt-6.2-sol", "--exact", "a.txt", cwd=tmp_path)
    assert other.returncode == 2
    assert other.stderr == (
        "toll: error: --exact calibrates with Anthropic's count_tokens; "
        "gpt-6.2-sol is a model of openai\n"
    )


def test_server_instructions_count_in_system_and_deferred_comparison(tmp_path: Path) -> None:
    command = f"{sys.executable} {SERVERS / 'sdk_server.py'} --extra 5"
    result = toll(
        "measure",
        "--model",
        "gpt-6.2-sol",
        "--server",
        command,
        "--core",
        "read_file",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    instructions = "Use read_file before write_file. Paths are relative to the project root."
    # The probe message is "." and the instructions are the whole system prompt.
    assert report["parts"]["system"]["tokens"] == tokens.count(
        f"{instructions}\n\n."
    ) - tokens.count(".")
    assert report["notes"] == ["the server's instructions are counted in the system part"]
    deferred = report["deferred"]
    assert deferred["kind"] == "deferred-tools"
    assert deferred["core"] == ["read_file"]
    assert len(deferred["deferred_tools"]) == 7  # write_file, search and five generated tools
    assert (
        deferred["saved"]["tokens"] == deferred["eager"]["tokens"] - deferred["deferred"]["tokens"]
    )
    from pytest_toll.calls.deferred import deferred_tools
    from pytest_toll.calls.render import render_deferred

    alone = deferred_tools("gpt-6.2-sol", TOOLS, core=[])
    line = render_deferred(alone)
    assert line.startswith(f"deferred tools: all 1 tools advertised: {alone.eager.tokens} o200k;")
    assert alone.saved_usd is not None and alone.saved < 0
    assert line.endswith(
        f"deferring costs {-alone.saved:,} o200k more tokens, ${-alone.saved_usd:,.6f} per "
        "request, before any tool is loaded"
    )


def test_toll_diff_of_two_call_reports(tmp_path: Path) -> None:
    bare = measure("gpt-6.2-sol").as_dict()
    with_tools = measure("gpt-6.2-sol", tools=TOOLS).as_dict()
    (tmp_path / "before.json").write_text(json.dumps(bare), encoding="utf-8")
    (tmp_path / "after.json").write_text(json.dumps(with_tools), encoding="utf-8")
    grown = with_tools["parts"]["tools"]["tokens"]
    result = toll("diff", "before.json", "after.json", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kind"] == "call-diff"
    assert report["parts"]["tools"] == {
        "before": 0,
        "after": grown,
        "delta": grown,
        "cost_usd": round(grown * 2 / 1e6, 10),
    }
    gate = toll("diff", "before.json", "after.json", "--allow-increase", "5", cwd=tmp_path)
    assert gate.returncode == 1
    assert gate.stdout.splitlines()[-1].startswith("gate: FAIL — total changed +")
