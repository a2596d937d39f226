"""Messages normalised to the Anthropic shape and rendered, with exact expected values."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.calls.measuring import measure
from pytest_toll.calls.messages import normalize_messages, render_messages
from pytest_toll.core.errors import CouldNotJudge
from tests.calls.calls_data import MESSAGES, MESSAGES_TEXT


def test_messages_render_as_documented() -> None:
    assert render_messages(normalize_messages(MESSAGES)) == MESSAGES_TEXT


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
