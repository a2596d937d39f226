"""``toll weigh --model M [--exact]``: the claude total in o200k and o200k×scale, and with
``--exact`` what count_tokens says the tools add (with and without them), against a real
count_tokens server on 127.0.0.1."""

from __future__ import annotations

import json
import math
from pathlib import Path

from pytest_toll.calls.catalogues import anthropic_tool
from pytest_toll.calls.native import NativeComparison
from pytest_toll.definitions.tools import normalize_tools
from tests.calls.test_calls_cli import TOOLS
from tests.cli import run_toll as toll
from tests.count_tokens_server import count_tokens_server, counted


def test_weigh_exact_prints_the_native_delta_beside_both_estimates(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    argv = ["weigh", "--tools", "tools.json", "--model", "claude-sonnet-5"]
    with count_tokens_server() as server:
        as_json = toll(*argv, "--exact", "--json", cwd=tmp_path, env=server.environment())
        text = toll(*argv, "--exact", cwd=tmp_path, env=server.environment())
        bodies = server.bodies
    assert as_json.returncode == 0, as_json.stderr
    data = json.loads(as_json.stdout)
    probe = {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": "."}]}
    tools, _ = normalize_tools(TOOLS)
    with_tools = {**probe, "tools": [anthropic_tool(tool) for tool in tools]}
    assert bodies[:2] == [probe, with_tools]
    native = counted(with_tools) - counted(probe)
    claude = data["totals"]["claude"]
    scaled = math.ceil(claude * 1.8)
    model = data["model"]
    assert model["o200k"] == claude
    assert model["scaled"] == {"tokens": scaled, "method": "o200k×1.80"}
    assert model["exact"]["tokens"] == native
    assert model["exact"]["comparisons"]["o200k×1.80"] == NativeComparison(scaled, native).as_dict()
    lines = text.stdout.splitlines()
    assert f"for claude-sonnet-5: claude total {claude:,} (o200k)" in lines
    assert any(line.startswith(f"  {scaled:,} (o200k×1.80; scale measured: ") for line in lines)
    assert (
        f"  exact: the tools add {native:,} native tokens (count_tokens: "
        f"{counted(with_tools):,} with them, {counted(probe):,} without, on a '.' probe message)"
    ) in lines
    assert f"  o200k×1.80: {NativeComparison(scaled, native).describe()}" in lines
    assert f"  o200k: {NativeComparison(claude, native).describe()}" in lines


def test_weigh_exact_needs_an_anthropic_model(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    alone = toll("weigh", "--tools", "tools.json", "--exact", cwd=tmp_path)
    assert alone.returncode == 2 and "name an Anthropic model with --model" in alone.stderr
    openai = toll(
        "weigh", "--tools", "tools.json", "--exact", "--model", "gpt-6.2-sol", cwd=tmp_path
    )
    assert openai.returncode == 2 and "(gpt-6.2-sol is a model of openai)" in openai.stderr
    plain = toll("weigh", "--tools", "tools.json", "--model", "gpt-6.2-sol", cwd=tmp_path)
    assert plain.returncode == 0
    assert "  unscaled (scale ×1.00, measured: o200k_base is the OpenAI tokenizer" in plain.stdout


def test_native_comparison_words() -> None:
    assert NativeComparison(105, 100).describe() == (
        "our estimate reads high by 5 (5.0%) — within 5.0%"
    )
    assert NativeComparison(90, 100).describe() == (
        "our estimate reads low by 10 (10.0%) — beyond 5.0%"
    )
    assert NativeComparison(7, 7).describe() == "our estimate matches the native count"
    assert NativeComparison(3, 0).beyond
