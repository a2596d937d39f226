"""measure(), diff(), compaction and deferred tools, with exact expected values."""

from __future__ import annotations

import copy
import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.calls.measuring import (
    Tuning,
    compact_schema,
    compact_tools,
    deferred_tools,
    diff,
    measure,
    normalize_messages,
    render_messages,
)
from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.models import Model, Prices, Scale, Tier, load_models
from pytest_toll.definitions.serialize import serialize_claude, serialize_openai
from pytest_toll.definitions.tools import normalize_tools

count = tokens.count

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file and return its text. Use it to look at source code.",
        "inputSchema": {
            "type": "object",
            "title": "ReadFileArgs",
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {
                "path": {
                    "type": "string",
                    "title": "Path",
                    "description": "  The file\n  to read. ",
                },
                "title": {"type": "string", "description": "A property named title stays."},
            },
            "required": ["path"],
        },
    },
    {
        "name": "write_file",
        "description": "Write text to a file, replacing it. Returns the bytes written.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        },
    },
]
SYSTEM = "You are a careful coding assistant."
SKILLS = [{"name": "pdf", "description": "Fill and read PDF forms. Use it for any .pdf file."}]
MESSAGES = [
    {"role": "user", "content": "Show me setup.py"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "setup.py"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print('hi')"}],
    },
]
MESSAGES_TEXT = (
    'Show me setup.py\n\nReading it.\n{"name":"read_file","input":{"path":"setup.py"}}'
    "\n\nprint('hi')"
)


def stages(provider: str, tools: list[dict[str, Any]] = TOOLS) -> list[int]:
    """The four cumulative stage counts, built by hand from the documented rendering."""
    normalized, _ = normalize_tools(tools)
    tools_text = (
        serialize_claude(normalized) if provider == "anthropic" else serialize_openai(normalized)
    )
    catalogue = "pdf: Fill and read PDF forms. Use it for any .pdf file."
    overhead = 4 * 3
    return [
        count(MESSAGES_TEXT) + overhead,
        count(f"{SYSTEM}\n\n{MESSAGES_TEXT}") + overhead,
        count(f"{catalogue}\n\n{SYSTEM}\n\n{MESSAGES_TEXT}") + overhead,
        count(f"{catalogue}\n\n{SYSTEM}\n\n{tools_text}\n\n{MESSAGES_TEXT}") + overhead,
    ]


def test_messages_render_as_documented() -> None:
    assert render_messages(normalize_messages(MESSAGES)) == MESSAGES_TEXT


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
    for messages in (None, []):
        result = measure("gpt-6.2-sol", messages=messages)
        assert result.probe is True
        assert result.parts["messages"].tokens == count(".") + 4
        assert result.total.tokens == count(".") + 4
        assert result.as_dict()["probe"] is True


def test_openai_shaped_messages_are_normalised() -> None:
    conversation = normalize_messages(
        [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in a.png?"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "look", "arguments": '{"x": 1}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "a cat"},
            {"role": "tool", "tool_call_id": "c2", "content": "a hat"},
        ]
    )
    assert conversation.system_texts == ("Be brief.",)
    assert conversation.images == 1
    assert conversation.probe is False
    assert list(conversation.messages) == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in a.png?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"},
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "c1", "name": "look", "input": {"x": 1}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "c1", "content": "a cat"},
                {"type": "tool_result", "tool_use_id": "c2", "content": "a hat"},
            ],
        },
    ]


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
    unpriced = measure("claude-sonnet-4-6", messages=[{"role": "user", "content": "hi"}])
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


def test_compact_schema_does_exactly_what_it_says() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "Args",
        "type": "object",
        "properties": {
            "title": {"type": "string", "title": "Title", "description": " a\n\n  b "},
            "once": {"$ref": "#/$defs/Once", "description": "kept sibling"},
            "twice_a": {"$ref": "#/$defs/Twice"},
            "twice_b": {"$ref": "#/$defs/Twice"},
            "tree": {"$ref": "#/$defs/Node"},
        },
        "$defs": {
            "Once": {"type": "integer", "title": "Once", "description": "from defs"},
            "Twice": {"type": "string", "enum": ["x", "y"]},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}},
            "Unused": {"type": "null"},
        },
    }
    original = copy.deepcopy(schema)
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "a b"},
            "once": {"type": "integer", "description": "kept sibling"},
            "twice_a": {"$ref": "#/$defs/Twice"},
            "twice_b": {"$ref": "#/$defs/Twice"},
            "tree": {"$ref": "#/$defs/Node"},
        },
        "$defs": {
            "Twice": {"type": "string", "enum": ["x", "y"]},
            "Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}},
        },
    }
    assert schema == original


def test_compact_defs_chain_collapses_fully() -> None:
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/definitions/A"}},
        "definitions": {
            "A": {"type": "array", "items": {"$ref": "#/definitions/B"}},
            "B": {"type": "string"},
        },
    }
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {"a": {"type": "array", "items": {"type": "string"}}},
    }


def test_compact_measurement_leaves_the_originals_alone() -> None:
    before = copy.deepcopy(TOOLS)
    full = measure("gpt-6.2-sol", tools=TOOLS)
    compact = measure("gpt-6.2-sol", tools=TOOLS, tool_schemas="compact")
    assert before == TOOLS
    assert compact.tool_schemas == "compact"
    normalized, _ = normalize_tools(TOOLS)
    compact_text = serialize_openai(compact_tools(normalized))
    # The probe message is "." and the tools block sits before it.
    assert compact.parts["tools"].tokens == count(compact_text + "\n\n.") - count(".")
    assert compact.parts["tools"].tokens < full.parts["tools"].tokens
    with pytest.raises(UsageError, match="tool_schemas must be 'full' or 'compact'"):
        measure("gpt-6.2-sol", tools=TOOLS, tool_schemas="tiny")


def test_diff_is_signed_and_prices_only_when_both_sides_are_priced() -> None:
    before = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS)
    after = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS[:1])
    result = diff(before, after)
    assert (
        result.parts["tools"].delta
        == after.parts["tools"].tokens - before.parts["tools"].tokens
        < 0
    )
    assert result.parts["system"].delta == 0
    assert result.total.delta == after.total.tokens - before.total.tokens
    assert result.total.cost_usd == pytest.approx(after.total.cost_usd - before.total.cost_usd)  # type: ignore[operator]
    assert result.notes == ()
    # From JSON reports too (what `toll diff` reads).
    again = diff(json.loads(json.dumps(before.as_dict())), json.loads(json.dumps(after.as_dict())))
    assert again.as_dict() == result.as_dict()
    unpriced = measure("claude-sonnet-4-6", SYSTEM, MESSAGES, TOOLS[:1])
    mixed = diff(before, unpriced)
    assert mixed.total.cost_usd is None
    assert "cost_usd" not in mixed.as_dict()["total"]
    assert mixed.notes == ("different models: gpt-6.2-sol before, claude-sonnet-4-6 after",)
    compacted = diff(
        before, measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS, tool_schemas="compact")
    )
    assert compacted.notes == ("tool schemas measured full before, compact after",)
    with pytest.raises(CouldNotJudge, match="before: not a call report"):
        diff({"kind": "tools"}, after)


def test_deferred_tools_saving() -> None:
    many = [
        {
            "name": f"tool_{i}",
            "description": f"Tool number {i} does a thing with files and returns text.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for i in range(20)
    ]
    report = deferred_tools("gpt-6.2-sol", many, core=["tool_0", "tool_1"])
    normalized, _ = normalize_tools(many)
    from pytest_toll.calls.measuring import DEFAULT_META_TOOLS

    meta, _ = normalize_tools(list(DEFAULT_META_TOOLS))
    names = ", ".join(f"tool_{i}" for i in range(2, 20))
    expected_deferred = count(
        serialize_openai([*normalized[:2], *meta])
        + "\n\nDeferred tools (find with a tool search): "
        + names
    )
    assert report.eager.tokens == count(serialize_openai(normalized))
    assert report.deferred.tokens == expected_deferred
    assert report.saved == report.eager.tokens - expected_deferred > 0
    assert report.saved_usd == pytest.approx(report.saved * 2 / 1e6)
    assert report.as_dict()["deferred_tools"] == [f"tool_{i}" for i in range(2, 20)]
    with pytest.raises(CouldNotJudge, match="core tools not in the catalogue: nope"):
        deferred_tools("gpt-6.2-sol", many, core=["nope"])


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


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ({"role": "user"}, "messages: must be a list of messages, not dict"),
        ([{"role": "robot", "content": "x"}], "messages[0].role: must be user, assistant"),
        (
            [{"role": "user", "content": [{"type": "video"}]}],
            "messages[0].content[0].type: unknown content block 'video'",
        ),
        (
            [{"role": "user", "content": 5}],
            "messages[0].content: must be a string or a list of blocks, not int",
        ),
        (
            [{"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{"}}]}],
            "messages[0].tool_calls[0].function.arguments: not valid JSON",
        ),
    ],
)
def test_bad_messages_name_the_field(messages: object, message: str) -> None:
    with pytest.raises(CouldNotJudge) as caught:
        measure("gpt-6.2-sol", messages=messages)
    assert str(caught.value).startswith(message)


def test_unknown_model_is_a_usage_error() -> None:
    with pytest.raises(UsageError, match="unknown model 'gpt-0'"):
        measure("gpt-0")


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "role",
                    "content",
                    "type",
                    "text",
                    "tool_calls",
                    "function",
                    "name",
                    "arguments",
                    "image_url",
                ]
            ),
            children,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(max_examples=150, deadline=None)
@given(JSON)
def test_untrusted_messages_never_crash(messages: object) -> None:
    try:
        conversation = normalize_messages(messages)
    except CouldNotJudge:
        return
    assert conversation.messages
    render_messages(conversation)


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


def test_diff_reports_render_and_increase_percent() -> None:
    from pytest_toll.calls.measuring import diff_reports

    before = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS[:1]).as_dict()
    after = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS).as_dict()
    result = diff_reports(before, after, before_name="old.json", after_name="new.json")
    grown = after["total"]["tokens"] - before["total"]["tokens"]
    assert result.increase_percent == pytest.approx(100 * grown / before["total"]["tokens"])
    lines = result.render().splitlines()
    assert lines[0] == "call gpt-6.2-sol → gpt-6.2-sol"
    assert lines[1].split() == ["part", "old.json", "new.json", "delta", "USD"]
    assert lines[2].split()[:4] == [
        "messages",
        f"{before['parts']['messages']['tokens']:,}",
        f"{after['parts']['messages']['tokens']:,}",
        "+0",
    ]
    assert lines[-1].split()[3] == f"{grown:+,}"


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
    from pytest_toll.calls.measuring import count_joined

    counter = tokens.O200kCounter()
    assert count_joined(counter, pieces) == count("\n\n".join(pieces))


def test_count_joined_agrees_with_tiktoken_itself(reference_o200k: Any) -> None:
    from pytest_toll.calls.measuring import count_joined

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


def test_skills_from_a_folder_are_their_metadata_lines(tmp_path: Any) -> None:
    from pytest_toll.calls.measuring import skills_catalogue

    for name, description in (
        ("alpha", "Does alpha things. Use it for alpha."),
        ("beta", "Beta helper."),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\n# {name}\nBody.\n",
            encoding="utf-8",
        )
    catalogue = skills_catalogue(str(tmp_path))
    assert catalogue == "alpha: Does alpha things. Use it for alpha.\nbeta: Beta helper."
    assert skills_catalogue("plain catalogue text") == "plain catalogue text"
    result = measure(
        "gpt-6.2-sol", messages=[{"role": "user", "content": "hi"}], skills=str(tmp_path)
    )
    assert result.parts["skills"].tokens == count(f"{catalogue}\n\nhi") - count("hi")


SCHEMA_KEYS = st.sampled_from(
    [
        "type",
        "title",
        "$schema",
        "description",
        "properties",
        "items",
        "anyOf",
        "$defs",
        "definitions",
        "$ref",
        "enum",
        "required",
        "A",
        "B",
        "title ",
    ]
)
REFS = st.sampled_from(["#/$defs/A", "#/$defs/B", "#/definitions/A", "#/$defs/missing", "#/x"])
SCHEMAS = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5) | REFS,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(SCHEMA_KEYS, children, max_size=4)
    ),
    max_leaves=15,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(SCHEMA_KEYS, SCHEMAS, max_size=5))
def test_compaction_of_untrusted_schemas(schema: dict[str, Any]) -> None:
    original = copy.deepcopy(schema)
    compacted = compact_schema(schema)
    assert schema == original
    json.dumps(compacted)
    assert compact_schema(compacted) == compacted


def test_a_ledger_call_entry_is_measured_from_files(tmp_path: Any) -> None:
    from pytest_toll.calls.measuring import measure_entry

    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "system.md").write_text(SYSTEM, encoding="utf-8")
    (tmp_path / "chat.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    entry = {
        "system": "prompts/system.md",
        "messages": "chat.json",
        "tools": "tools.json",
        "budget": 9000,
        "pin": 1,
    }
    result = measure_entry(entry, root=tmp_path, where="calls.support", default_model="gpt-6.2-sol")
    assert result.as_dict() == measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS).as_dict()
    compact = measure_entry(
        {**entry, "model": "claude-sonnet-5", "tool_schemas": "compact"},
        root=tmp_path,
        where="calls.support",
    )
    assert compact.model == "claude-sonnet-5" and compact.tool_schemas == "compact"


@pytest.mark.parametrize(
    ("entry", "error", "message"),
    [
        ({}, UsageError, "calls.x.model: name the model"),
        ({"model": "gpt-0"}, UsageError, "calls.x.model: unknown model 'gpt-0'"),
        (
            {"model": "gpt-6.2-sol", "tools": 5},
            UsageError,
            "calls.x.tools: must be a path (a string), not 5",
        ),
        (
            {"model": "gpt-6.2-sol", "tool_schemas": "small"},
            UsageError,
            "calls.x.tool_schemas: must be full or compact",
        ),
        (
            {"model": "gpt-6.2-sol", "messages": "nope.json"},
            CouldNotJudge,
            "nope.json: no such file",
        ),
    ],
)
def test_bad_ledger_call_entries_name_the_key(
    tmp_path: Any, entry: dict[str, Any], error: type[Exception], message: str
) -> None:
    from pytest_toll.calls.measuring import measure_entry

    with pytest.raises(error) as caught:
        measure_entry(entry, root=tmp_path, where="calls.x")
    assert str(caught.value).endswith(message) or str(caught.value).startswith(message)


def test_a_bad_messages_file_is_named(tmp_path: Any) -> None:
    from pytest_toll.calls.measuring import measure_entry

    (tmp_path / "chat.json").write_text('[{"role": "robot"}]', encoding="utf-8")
    with pytest.raises(CouldNotJudge) as caught:
        measure_entry(
            {"model": "gpt-6.2-sol", "messages": "chat.json"}, root=tmp_path, where="calls.x"
        )
    assert str(caught.value).startswith(f"{tmp_path / 'chat.json'}: messages[0].role: must be user")
