"""The messages of a call: normalised to the Anthropic shape, and rendered as the text an
estimate counts.

Messages may be Anthropic-shaped (content blocks, ``tool_use``/``tool_result``) or
OpenAI-shaped (``tool_calls``, ``role: tool``, ``image_url`` parts, ``system``/``developer``
messages, which are lifted into the system part). Empty or omitted messages are replaced by
one user message ``"."`` and the conversation is flagged ``probe``.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, describe_type
from pytest_toll.core.parse import ParseError, load_json

PROBE_MESSAGE: dict[str, Any] = {"role": "user", "content": "."}
#: What joins the texts of a call (its parts, and its messages) for counting.
SEPARATOR = "\n\n"


@dataclass(frozen=True)
class Conversation:
    """Messages normalised to the Anthropic shape, plus what was lifted out of them."""

    messages: tuple[Mapping[str, Any], ...]
    system_texts: tuple[str, ...]
    images: int
    probe: bool


def _text_of(content: object, where: str) -> str:
    """The text of a system content: a string, or text parts / blocks joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for index, part in enumerate(content):
            if not isinstance(part, Mapping) or not isinstance(part.get("text"), str):
                raise CouldNotJudge(f"{where}[{index}]: expected a text part")
            texts.append(part["text"])
        return "\n".join(texts)
    raise CouldNotJudge(
        f"{where}: must be a string or a list of parts, not {describe_type(content, 'python')}"
    )


def system_text(system: object) -> str | None:
    """A system prompt as one text: a string, or Anthropic text blocks on their own lines."""
    if system is None or isinstance(system, str):
        return system
    return _text_of(system, "system")


_DATA_URL = re.compile(r"data:([\w/+.-]+);base64,(.*)", re.S)


def _image_block(url: str) -> dict[str, Any]:
    match = _DATA_URL.fullmatch(url)
    if match:
        return {
            "type": "image",
            "source": {"type": "base64", "media_type": match.group(1), "data": match.group(2)},
        }
    return {"type": "image", "source": {"type": "url", "url": url}}


_ANTHROPIC_BLOCKS = {
    "text",
    "image",
    "document",
    "tool_use",
    "tool_result",
    "thinking",
    "redacted_thinking",
    "server_tool_use",
    "web_search_tool_result",
}


def _block(part: object, where: str) -> dict[str, Any]:
    if not isinstance(part, Mapping):
        raise CouldNotJudge(f"{where}: must be an object, not {describe_type(part, 'python')}")
    block_type = part.get("type")
    if block_type in ("text", "input_text", "output_text"):
        text = part.get("text")
        if not isinstance(text, str):
            raise CouldNotJudge(
                f"{where}.text: must be a string, not {describe_type(text, 'python')}"
            )
        return {"type": "text", "text": text}
    if block_type in ("image_url", "input_image"):
        image = part.get("image_url")
        url = image.get("url") if isinstance(image, Mapping) else image
        if not isinstance(url, str):
            raise CouldNotJudge(f"{where}.image_url: must hold a url string")
        return _image_block(url)
    if block_type in _ANTHROPIC_BLOCKS:
        return dict(part)
    raise CouldNotJudge(
        f"{where}.type: unknown content block {block_type!r} "
        "(expected text, image, image_url, tool_use, tool_result, thinking)"
    )


def _tool_use(call: object, where: str) -> dict[str, Any]:
    if not isinstance(call, Mapping):
        raise CouldNotJudge(f"{where}: must be an object, not {describe_type(call, 'python')}")
    function = call.get("function")
    if not isinstance(function, Mapping) or not isinstance(function.get("name"), str):
        raise CouldNotJudge(f"{where}.function: must be an object with a name")
    arguments = function.get("arguments", "{}")
    if isinstance(arguments, str):
        try:
            parsed = load_json(arguments or "{}", f"{where}.function.arguments")
        except ParseError as error:
            raise CouldNotJudge(f"{error.name}: {error.why}") from None
    else:
        parsed = arguments
    return {
        "type": "tool_use",
        "id": str(call.get("id", "")),
        "name": function["name"],
        "input": parsed if isinstance(parsed, dict) else {"value": parsed},
    }


def normalize_messages(messages: object, where: str = "messages") -> Conversation:
    """Anthropic- or OpenAI-shaped messages as Anthropic messages; errors name the field."""
    if messages is None:
        messages = []
    if not isinstance(messages, list | tuple):
        raise CouldNotJudge(
            f"{where}: must be a list of messages, not {describe_type(messages, 'python')}"
        )
    system_texts: list[str] = []
    normalized: list[dict[str, Any]] = []
    for index, message in enumerate(messages):
        here = f"{where}[{index}]"
        if not isinstance(message, Mapping):
            raise CouldNotJudge(
                f"{here}: must be an object, not {describe_type(message, 'python')}"
            )
        role = message.get("role")
        content = message.get("content")
        if role in ("system", "developer"):
            system_texts.append(_text_of(content, f"{here}.content"))
            continue
        blocks: list[dict[str, Any]]
        if role == "tool":
            result = content if isinstance(content, str) else _text_of(content, f"{here}.content")
            blocks = [
                {
                    "type": "tool_result",
                    "tool_use_id": str(message.get("tool_call_id", "")),
                    "content": result,
                }
            ]
            role = "user"
        elif role in ("user", "assistant"):
            if isinstance(content, str):
                blocks = [{"type": "text", "text": content}]
            elif content is None:
                blocks = []
            elif isinstance(content, list):
                blocks = [_block(part, f"{here}.content[{i}]") for i, part in enumerate(content)]
            else:
                raise CouldNotJudge(
                    f"{here}.content: must be a string or a list of blocks, not {describe_type(content, 'python')}"
                )
            calls = message.get("tool_calls") or []
            if not isinstance(calls, list):
                raise CouldNotJudge(f"{here}.tool_calls: must be a list")
            blocks += [_tool_use(call, f"{here}.tool_calls[{i}]") for i, call in enumerate(calls)]
        else:
            raise CouldNotJudge(
                f"{here}.role: must be user, assistant, system, developer or tool, not {role!r}"
            )
        if normalized and normalized[-1]["role"] == role:
            # Anthropic wants roles to alternate: consecutive turns (several OpenAI tool
            # results in a row) are one message there.
            normalized[-1]["content"] = [*normalized[-1]["content"], *blocks]
        else:
            normalized.append({"role": role, "content": blocks})
    probe = not normalized
    if probe:
        normalized = [copy.deepcopy(PROBE_MESSAGE)]
    images = sum(_count_images(message["content"]) for message in normalized)
    return Conversation(tuple(normalized), tuple(system_texts), images, probe)


def _count_images(content: object) -> int:
    if not isinstance(content, list):
        return 0
    total = 0
    for block in content:
        if isinstance(block, Mapping):
            if block.get("type") in ("image", "document"):
                total += 1
            elif block.get("type") == "tool_result":
                total += _count_images(block.get("content"))
    return total


def _minified(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _render_content(content: object) -> list[str]:
    if isinstance(content, str):
        return [content]
    texts: list[str] = []
    for block in content if isinstance(content, list) else []:
        block_type = block.get("type")
        if block_type == "text":
            texts.append(block.get("text", ""))
        elif block_type in ("tool_use", "server_tool_use"):
            texts.append(_minified({"name": block.get("name"), "input": block.get("input", {})}))
        elif block_type == "tool_result" or block_type == "web_search_tool_result":
            texts.extend(_render_content(block.get("content", "")))
        elif block_type == "thinking":
            texts.append(block.get("thinking", ""))
        elif block_type == "redacted_thinking":
            texts.append(block.get("data", ""))
        # image and document blocks have no text: they are counted per image, or reported.
    return texts


def render_message_texts(conversation: Conversation) -> list[str]:
    """Each message's text: its block texts joined by newlines, tool calls as JSON."""
    return ["\n".join(_render_content(message["content"])) for message in conversation.messages]


def render_messages(conversation: Conversation) -> str:
    """The text an estimate counts for the messages: the message texts, blank-line separated."""
    return SEPARATOR.join(render_message_texts(conversation))
