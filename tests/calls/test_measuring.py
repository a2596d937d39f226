"""measure(): parts attributed in stages, scaled, priced and counted exactly."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.calls.measuring import Tuning, count_joined, measure
from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.models import Model, Prices, Scale, Tier, load_models
from tests.calls.calls_data import MESSAGES, SKILLS, SYSTEM, TOOLS, count, stages


def test_openai_model_attribution_is_incremental_and_exact() -> None:
    result = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS, SKILLS)
    s = stages("openai")
    expected = [s[0], s[1] - s[0], s[2] - s[1], s[3] - s[2]]
    assert [
        result.parts[name].tokens for name in ("messages", "system", "skills", "tools")
    ] == expected
    assert result.total.tokens == s[3] == sum(expected)
    assert (result.method, result.tokenizer, result.provider) == ("o200k", "o200k_base", "openai")
    assert result.total.scaled is None
    # $2 / MTok at the short-context tier, uncached.
    assert result.total.cost_usd == pytest.approx(s[3] * 2 / 1_000_000)
    assert result.parts["tools"].cost_usd == pytest.approx(expected[3] * 2 / 1_000_000)
    data = result.as_dict()
    assert data["kind"] == "call"
    assert data["parts"]["tools"] == {
        "tokens": expected[3],
        "source": "estimate",
        "cost_usd": round(expected[3] * 2 / 1_000_000, 10),
    }
    assert data["scale"] == {"factor": 1.0, "measured": True, "source": result.scale.source}
    assert data["probe"] is False
    assert json.loads(json.dumps(data)) == data


def test_claude_model_scales_each_stage_and_sums_exactly() -> None:
    result = measure("claude-sonnet-5", SYSTEM, MESSAGES, TOOLS, SKILLS)
    s = stages("anthropic")
    scaled = [math.ceil(n * 1.80) for n in s]
    assert (result.method, result.scaled_method) == ("o200k", "o200k×1.80")
    assert result.as_dict()["scaled_method"] == "o200k×1.80"
    assert result.total.tokens == s[3]
    assert result.total.scaled == scaled[3]
    assert [result.parts[n].scaled for n in ("messages", "system", "skills", "tools")] == [
        scaled[0],
        scaled[1] - scaled[0],
        scaled[2] - scaled[1],
        scaled[3] - scaled[2],
    ]
    # USD follows the scaled count (what Anthropic bills), at $2 / MTok.
    assert result.total.cost_usd == pytest.approx(scaled[3] * 2 / 1_000_000)
    assert result.window_share == pytest.approx(scaled[3] / 1_000_000)


def test_probe_when_messages_are_missing_or_empty() -> None:
    messages: list[dict[str, str]] | None
    for messages in (None, []):
        result = measure("gpt-6.2-sol", messages=messages)
        assert result.probe is True
        assert result.parts["messages"].tokens == count(".") + 4
        assert result.total.tokens == count(".") + 4
        assert result.as_dict()["probe"] is True


def test_lifted_system_messages_count_in_the_system_part() -> None:
    result = measure(
        "gpt-6.2-sol",
        "Rule two.",
        [{"role": "system", "content": "Rule one."}, {"role": "user", "content": "hi"}],
    )
    assert result.parts["system"].tokens == count("Rule one.\n\nRule two.\n\nhi") - count("hi")


def test_images_are_never_silently_zero() -> None:
    messages = [
        {
            "role": "user",
            "content": [{"type": "image", "source": {"type": "url", "url": "https://x/y.png"}}],
        }
    ]
    unestimated = measure("gpt-6.2-sol", messages=messages)
    assert unestimated.images == 1 and unestimated.images_estimated is False
    assert unestimated.notes == (
        "1 image(s) not estimated: the messages part leaves them out "
        "(set tokens_per_image, or use exact counts)",
    )
    assert unestimated.as_dict()["images"] == {"count": 1, "estimated": False}
    estimated = measure("gpt-6.2-sol", messages=messages, tuning=Tuning(tokens_per_image=765))
    assert estimated.total.tokens == unestimated.total.tokens + 765
    assert estimated.images_estimated is True and estimated.notes == ()


def test_chars_per_token_tuning_is_an_estimate_and_printed() -> None:
    tuning = Tuning(chars_per_token=4.0, tokens_per_message=0)
    result = measure(
        "claude-sonnet-5", "abcdefgh", [{"role": "user", "content": "abcd"}], tuning=tuning
    )
    assert result.method == "estimate"
    assert result.tokenizer == "4 chars/token"
    assert result.total.scaled is None  # a chars estimate is not scaled again
    assert result.parts["messages"].tokens == 1
    assert result.total.tokens == math.ceil(len("abcdefgh\n\nabcd") / 4)
    assert tuning.describe() == "4 chars/token, 0 tokens/message, images not estimated"
    assert Tuning().describe() == "o200k_base, 4 tokens/message, images not estimated"
    with pytest.raises(UsageError):
        Tuning(chars_per_token=0)


def test_unknown_price_leaves_cost_absent_and_zero_is_zero() -> None:
    bare = load_models({"bare": {"provider": "anthropic", "scale": "claude-4.5"}})
    unpriced = measure("bare", messages=[{"role": "user", "content": "hi"}], catalogue=bare)
    assert unpriced.total.cost_usd is None
    assert "cost_usd" not in unpriced.as_dict()["total"]
    assert all("cost_usd" not in part for part in unpriced.as_dict()["parts"].values())
    free = load_models({"local": {"provider": "openai", "prices": {"input": 0}, "scale": "openai"}})
    zero = measure("local", messages=[{"role": "user", "content": "hi"}], catalogue=free)
    assert zero.total.cost_usd == 0.0
    assert zero.as_dict()["total"]["cost_usd"] == 0.0


def test_tier_is_chosen_by_the_whole_request() -> None:
    model = Model(
        name="tiered",
        provider="openai",
        prices=Prices(input=1.0),
        tiers=(Tier(20, Prices(input=10.0)),),
        scale=Scale(1.0, True, "test"),
    )
    small = measure(model, messages=[{"role": "user", "content": "hi"}])
    assert small.total.tokens < 20
    assert small.parts["messages"].cost_usd == pytest.approx(small.total.tokens * 1.0 / 1e6)
    big = measure(model, SYSTEM, MESSAGES, TOOLS)
    assert big.total.tokens >= 20
    # Every part of a request above the line is priced at the upper tier.
    assert big.parts["messages"].cost_usd == pytest.approx(
        big.parts["messages"].tokens * 10.0 / 1e6
    )


def test_exact_for_another_provider_is_an_estimate_with_a_reason() -> None:
    result = measure("gpt-6.2-sol", messages=[{"role": "user", "content": "hi"}], exact=True)
    assert result.source == "estimate"
    assert result.fallback_reason == (
        "exact counts come from Anthropic's count_tokens; openai models have no counting "
        "endpoint here, so these are estimates"
    )
    assert result.as_dict()["exact"] == {
        "requested": True,
        "used": False,
        "reason": result.fallback_reason,
    }


def test_a_model_the_catalogue_lacks_is_measured_unscaled_and_unpriced() -> None:
    messages = [{"role": "user", "content": "Show me setup.py"}]
    result = measure("my-local-llm", "You are careful.", messages)
    known = measure("gpt-6.2-sol", "You are careful.", messages)
    assert result.total.tokens == known.total.tokens  # the same o200k count
    assert (result.provider, result.method, result.window) == ("unknown", "o200k", None)
    assert result.scale.factor == 1.0 and not result.scale.measured
    data = result.as_dict()
    assert data["scale"]["measured"] is False
    assert "cost_usd" not in data["total"]
    assert all("cost_usd" not in part for part in data["parts"].values())
    assert data["notes"] == [
        "my-local-llm is not in the catalogue: no window, no prices; to add my-local-llm, put "
        "it under 'models:' in toll.yaml, e.g. models: {my-local-llm: {provider: openai, "
        "window: 128000, prices: {input: 0.4, output: 1.6}}} (`toll models` lists the "
        "catalogue; `toll calibrate` measures a scale)"
    ]


@settings(max_examples=60, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40), st.text(max_size=40))
def test_parts_always_sum_to_the_total(system: str, user: str, skill: str) -> None:
    result = measure(
        "claude-sonnet-5",
        system,
        [{"role": "user", "content": user}],
        skills=[{"name": "s", "description": skill}],
    )
    assert sum(part.tokens for part in result.parts.values()) == result.total.tokens
    assert sum(part.scaled or 0 for part in result.parts.values()) == result.total.scaled


TRICKY_CHARS = [
    *"ab Zé9 \t\n\r/}'.,-_{",
    "\u00a0",
    "\u2028",
    "\u3000",
    "\x1c",
    "\x85",
    "日",
    "🙂",
    "\u0301",
    "\u200b",
]
TRICKY = st.lists(st.sampled_from([*TRICKY_CHARS, "'s", "本語"]), max_size=8).map("".join)


@settings(max_examples=400, deadline=None)
@given(st.lists(TRICKY, max_size=5))
def test_count_joined_is_exactly_the_count_of_the_joined_text(pieces: list[str]) -> None:
    counter = tokens.O200kCounter()
    assert count_joined(counter, pieces) == count("\n\n".join(pieces))


def test_count_joined_agrees_with_tiktoken_itself(reference_o200k: Any) -> None:
    samples = [
        ["}", "/x"],
        ["a  ", "b"],
        ["x", " y"],
        ["", "a"],
        ["a", ""],
        ["{'a': 1}", "'s it"],
        ["end.", "\u00a0lead"],
        ["日本", "語"],
        ["x\n", "\ny"],
        ["1", "23"],
        ["a/", "/b"],
    ]
    counter = tokens.O200kCounter()
    for pieces in samples:
        assert count_joined(counter, pieces) == len(
            reference_o200k.encode_ordinary("\n\n".join(pieces))
        )


def test_system_as_anthropic_text_blocks() -> None:
    blocks = [{"type": "text", "text": "One."}, {"type": "text", "text": "Two."}]
    assert measure("gpt-6.2-sol", blocks).total == measure("gpt-6.2-sol", "One.\nTwo.").total
    with pytest.raises(CouldNotJudge, match=r"system\[0\]: expected a text part"):
        measure("gpt-6.2-sol", [{"type": "image"}])
