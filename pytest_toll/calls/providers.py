"""Which LLM API a captured request speaks, and its body as the parts :func:`measure` reads.

Recognised by the end of the URL path (so a gateway's prefix, an Azure deployment path or a
regional endpoint still matches), then read by the body's shape:

- Anthropic Messages, ``…/v1/messages`` (``…/count_tokens`` is not a request to the model);
- OpenAI Chat Completions, ``…/chat/completions``; OpenAI Responses, ``…/v1/responses``
  (``instructions`` is the system part, ``input`` the messages);
- Bedrock InvokeModel, ``…/model/<id>/invoke`` and ``…/invoke-with-response-stream``, with
  an Anthropic body (``anthropic_version`` in it; the model is the path's); a body of any
  other model family (Titan embeddings, Llama) is not an Anthropic call and is left alone;
- Bedrock Converse, ``…/model/<id>/converse`` and ``…/converse-stream``: its ``system``,
  ``messages`` and ``toolConfig.tools`` read as Anthropic-shaped parts (a ``cachePoint``
  marks the block before it as a prompt-caching breakpoint, as Anthropic's
  ``cache_control`` does);
- Vertex AI's Anthropic models, ``…/publishers/anthropic/models/<id>:rawPredict`` and
  ``:streamRawPredict`` (an Anthropic body, the model in the path);
- Gemini, ``…/models/<id>:generateContent`` and ``:streamGenerateContent`` (the Gemini API
  and Vertex AI): ``systemInstruction``, ``contents`` and ``tools[].functionDeclarations``
  are the parts. Gemini's tokenizer is not o200k and no ratio to it has been measured, so
  its figures are o200k, unscaled, and a note on each request says so (unless toll.yaml's
  ``models:`` gives the model a measured scale).

Model ids in a path are mapped to the catalogue's names: a Bedrock id loses its region
prefix (``us.``), its ``anthropic.`` vendor prefix and its ``-v1:0`` version, an ARN its
path, a Vertex id its ``@date``; the id as sent is what the report shows.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from pytest_toll.core.errors import CouldNotJudge, describe_type

ANTHROPIC_MESSAGES = "anthropic.messages"
OPENAI_CHAT = "openai.chat_completions"
OPENAI_RESPONSES = "openai.responses"
BEDROCK_INVOKE = "bedrock.invoke_model"
BEDROCK_CONVERSE = "bedrock.converse"
VERTEX_ANTHROPIC = "vertex.anthropic"
GEMINI = "gemini.generate_content"
APIS = (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    BEDROCK_INVOKE,
    BEDROCK_CONVERSE,
    VERTEX_ANTHROPIC,
    GEMINI,
)
#: The APIs whose model is named in the body (the others name it in the path).
_MODEL_IN_BODY = (ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES)
_PROVIDER = {
    ANTHROPIC_MESSAGES: "anthropic",
    OPENAI_CHAT: "openai",
    OPENAI_RESPONSES: "openai",
    BEDROCK_INVOKE: "anthropic",
    VERTEX_ANTHROPIC: "anthropic",
    GEMINI: "google",
}
UNSCALED_GEMINI = (
    "Gemini's tokenizer is not o200k and no ratio to it is measured: the figures are o200k, "
    "unscaled"
)

_BEDROCK = re.compile(
    r"/model/(?P<id>[^/]+)/(?P<op>invoke|invoke-with-response-stream|converse|converse-stream)$"
)
_VERTEX = re.compile(
    r"/publishers/anthropic/models/(?P<id>[^/:]+):(?P<op>rawPredict|streamRawPredict)$"
)
_GEMINI = re.compile(r"/models/(?P<id>[^/:]+):(?P<op>generateContent|streamGenerateContent)$")
_STREAMING_OPS = {"invoke-with-response-stream", "converse-stream", "streamRawPredict"}
_REGION_PREFIX = re.compile(r"^(us|eu|apac|global|us-gov|jp|au|ca|ap)\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(:\d+)?$")


def recognise(method: str, path: str) -> str | None:
    """The API a request speaks, from its method and URL path; None for any other request."""
    if method != "POST":
        return None
    path = unquote(path.rstrip("/"))
    if path.endswith("/v1/messages"):
        return ANTHROPIC_MESSAGES
    if path.endswith("/chat/completions"):
        return OPENAI_CHAT
    if path.endswith(("/v1/responses", "/openai/responses")):
        return OPENAI_RESPONSES
    bedrock = _BEDROCK.search(path)
    if bedrock is not None:
        return BEDROCK_CONVERSE if bedrock["op"].startswith("converse") else BEDROCK_INVOKE
    vertex = _VERTEX.search(path)
    if vertex is not None and vertex["id"] != "count-tokens":
        return VERTEX_ANTHROPIC
    if _GEMINI.search(path) is not None:
        return GEMINI
    return None


@dataclass(frozen=True)
class WireCall:
    """A request body read as a call: the model as sent, the name to find it under in the
    catalogue, and the parts in the shapes :func:`measure` takes."""

    model: str
    catalogue_name: str
    provider: str | None
    stream: bool
    system: Any
    messages: object
    tools: object
    notes: list[str] = field(default_factory=list)


def read_call(api: str, path: str, body: Mapping[str, Any]) -> WireCall | None:
    """The call a body makes; None when it is not a call measured here (a Bedrock
    InvokeModel body of a model family other than Anthropic's).

    Raises :class:`CouldNotJudge` for a body in the API's shape that cannot be read.
    """
    path = unquote(path.rstrip("/"))
    if api in _MODEL_IN_BODY:
        model = body.get("model")
        if not isinstance(model, str) or not model:
            raise CouldNotJudge("the body names no model")
        stream = body.get("stream") is True
        system, messages, tools, notes = _messages_parts(api, body)
        return WireCall(model, model, _PROVIDER[api], stream, system, messages, tools, notes)
    if api == BEDROCK_INVOKE and "anthropic_version" not in body:
        return None
    found = (_BEDROCK if api in (BEDROCK_INVOKE, BEDROCK_CONVERSE) else _VERTEX).search(path)
    if api == GEMINI:
        found = _GEMINI.search(path)
    if found is None:
        raise CouldNotJudge(f"the path {path} names no model")
    model, op = found["id"], found["op"]
    stream = op in _STREAMING_OPS or op == "streamGenerateContent"
    name = catalogue_name(model)
    if api == BEDROCK_CONVERSE:
        system, messages, tools, notes = converse_parts(body)
        return WireCall(model, name, None, stream, system, messages, tools, notes)
    if api == GEMINI:
        system, messages, tools, notes = gemini_parts(body)
        return WireCall(model, name, _PROVIDER[api], stream, system, messages, tools, notes)
    system, messages, tools, notes = _messages_parts(ANTHROPIC_MESSAGES, body)
    return WireCall(model, name, _PROVIDER[api], stream, system, messages, tools, notes)


def catalogue_name(model_id: str) -> str:
    """A provider's model id as the catalogue names it: ``us.anthropic.claude-sonnet-4-5-
    20250929-v1:0`` and ``claude-sonnet-4-5@20250929`` are ``claude-sonnet-4-5…`` (the
    catalogue itself drops a dated snapshot's date)."""
    name = unquote(model_id).rsplit("/", 1)[-1]
    name = name.removeprefix("models/")
    name = _REGION_PREFIX.sub("", name)
    name = name.removeprefix("anthropic.")
    name = _BEDROCK_VERSION.sub("", name)
    return name.split("@", 1)[0]


def _messages_parts(api: str, body: Mapping[str, Any]) -> tuple[Any, object, object, list[str]]:
    """``(system, messages, tools, notes)`` of an Anthropic or OpenAI body."""
    notes: list[str] = []
    if api == OPENAI_RESPONSES:
        system = body.get("instructions")
        messages: object = responses_messages(body.get("input"))
    else:
        if "messages" not in body:
            raise CouldNotJudge("the body has no 'messages' array")
        system = body.get("system") if api == ANTHROPIC_MESSAGES else None
        messages = body["messages"]
    tools = _defined_tools(body.get("tools"), notes)
    return system, messages, tools, notes


def _defined_tools(tools: object, notes: list[str]) -> object:
    """The tools the body defines; built-in tools (no schema in the body) are left out."""
    if not isinstance(tools, list):
        return tools
    defined: list[Any] = []
    built_in: list[str] = []
    for tool in tools:
        if (
            not isinstance(tool, Mapping)
            or "function" in tool
            or "input_schema" in tool
            or tool.get("type") in (None, "function", "custom")
        ):
            defined.append(tool)
        else:
            built_in.append(str(tool.get("name") or tool.get("type")))
    if built_in:
        notes.append(
            f"built-in tools not counted (the provider defines them): {', '.join(built_in)}"
        )
    return defined or None


def responses_messages(items: object, where: str = "input") -> list[dict[str, Any]]:
    """An OpenAI Responses ``input`` as Chat-shaped messages (which measure() reads).

    A string is one user message; items are messages (``role`` + ``content``), function
    calls (an assistant tool call) and their outputs (a tool message). Other item types
    are not known here and make the request one that could not be judged.
    """
    if items is None:
        return []
    if isinstance(items, str):
        return [{"role": "user", "content": items}]
    if not isinstance(items, list):
        raise CouldNotJudge(
            f"{where}: must be a string or a list of items, not {describe_type(items, 'json')}"
        )
    messages: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        here = f"{where}[{index}]"
        if not isinstance(item, Mapping):
            raise CouldNotJudge(f"{here}: must be an object, not {describe_type(item, 'json')}")
        item_type = item.get("type", "message")
        if item_type == "message":
            messages.append({"role": item.get("role"), "content": item.get("content")})
        elif item_type == "function_call":
            call = {"name": item.get("name"), "arguments": item.get("arguments", "{}")}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": item.get("call_id", ""), "function": call}],
                }
            )
        elif item_type == "function_call_output":
            output = item.get("output", "")
            messages.append(
                {
                    "role": "tool",
                    "tool_call_id": item.get("call_id", ""),
                    "content": output if isinstance(output, str) else json.dumps(output),
                }
            )
        else:
            raise CouldNotJudge(
                f"{here}.type: {item_type!r} is not an input item measured here "
                "(message, function_call, function_call_output)"
            )
    return messages


# --- Bedrock Converse -------------------------------------------------------------------

#: What a ``cachePoint`` becomes: a breakpoint on the block before it.
_BREAKPOINT = {"type": "ephemeral"}


def _objects(value: object, where: str) -> list[Mapping[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise CouldNotJudge(f"{where}: must be an array, not {describe_type(value, 'json')}")
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise CouldNotJudge(
                f"{where}[{index}]: must be an object, not {describe_type(item, 'json')}"
            )
    return value


def _mark_breakpoint(blocks: list[dict[str, Any]], where: str) -> None:
    if not blocks:
        raise CouldNotJudge(f"{where}: a cachePoint with nothing before it")
    blocks[-1]["cache_control"] = dict(_BREAKPOINT)


def _json_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _converse_block(block: Mapping[str, Any], where: str) -> dict[str, Any]:
    if "text" in block:
        return {"type": "text", "text": block["text"]}
    if "toolUse" in block:
        use = block["toolUse"] or {}
        return {
            "type": "tool_use",
            "id": use.get("toolUseId", ""),
            "name": use.get("name", ""),
            "input": use.get("input", {}),
        }
    if "toolResult" in block:
        result = block["toolResult"] or {}
        content = [
            {"type": "text", "text": _json_text(item.get("text", item.get("json", "")))}
            for item in _objects(result.get("content"), f"{where}.toolResult.content")
        ]
        return {
            "type": "tool_result",
            "tool_use_id": result.get("toolUseId", ""),
            "content": content,
        }
    if "reasoningContent" in block:
        reasoning = (block["reasoningContent"] or {}).get("reasoningText") or {}
        return {"type": "thinking", "thinking": reasoning.get("text", "")}
    if "image" in block or "document" in block:
        # Counted as an image: not estimated unless tokens_per_image is set, and said so.
        return {"type": "image", "source": {"type": "base64", "data": ""}}
    known = "text, toolUse, toolResult, reasoningContent, image, document, cachePoint"
    raise CouldNotJudge(f"{where}: a content block measured here has one of {known}")


def converse_parts(body: Mapping[str, Any]) -> tuple[Any, object, object, list[str]]:
    """A Converse body as Anthropic-shaped ``(system, messages, tools, notes)``."""
    notes: list[str] = []
    system: list[dict[str, Any]] = []
    for index, block in enumerate(_objects(body.get("system"), "system")):
        where = f"system[{index}]"
        if "cachePoint" in block:
            _mark_breakpoint(system, where)
        elif "text" in block:
            system.append({"type": "text", "text": block["text"]})
        else:
            raise CouldNotJudge(f"{where}: a system block measured here has text or cachePoint")
    if "messages" not in body:
        raise CouldNotJudge("the body has no 'messages' array")
    messages: list[dict[str, Any]] = []
    for index, message in enumerate(_objects(body["messages"], "messages")):
        content: list[dict[str, Any]] = []
        here = f"messages[{index}].content"
        for number, block in enumerate(_objects(message.get("content"), here)):
            if "cachePoint" in block:
                _mark_breakpoint(content, f"{here}[{number}]")
            else:
                content.append(_converse_block(block, f"{here}[{number}]"))
        messages.append({"role": message.get("role"), "content": content})
    tools: list[dict[str, Any]] = []
    config = body.get("toolConfig") or {}
    if not isinstance(config, Mapping):
        raise CouldNotJudge(f"toolConfig: must be an object, not {describe_type(config, 'json')}")
    for index, tool in enumerate(_objects(config.get("tools"), "toolConfig.tools")):
        where = f"toolConfig.tools[{index}]"
        if "cachePoint" in tool:
            _mark_breakpoint(tools, where)
            continue
        spec = tool.get("toolSpec")
        if not isinstance(spec, Mapping):
            raise CouldNotJudge(f"{where}: a tool measured here has a toolSpec")
        schema = (spec.get("inputSchema") or {}).get("json", {})
        tools.append(
            {
                "name": spec.get("name"),
                "description": spec.get("description"),
                "input_schema": schema,
            }
        )
    return (system or None), messages, (tools or None), notes


# --- Gemini -----------------------------------------------------------------------------

_GEMINI_ROLES = {"user": "user", "model": "assistant", "function": "user", "tool": "user"}
_GEMINI_BUILT_IN = ("googleSearch", "googleSearchRetrieval", "codeExecution", "urlContext")


def _gemini_part(part: Mapping[str, Any], where: str) -> dict[str, Any] | None:
    if "text" in part:
        part_type = "thinking" if part.get("thought") is True else "text"
        return {"type": part_type, part_type: part["text"]}
    if "functionCall" in part:
        call = part["functionCall"] or {}
        name = call.get("name", "")
        return {
            "type": "tool_use",
            "id": call.get("id") or name,
            "name": name,
            "input": call.get("args", {}),
        }
    if "functionResponse" in part:
        answer = part["functionResponse"] or {}
        name = answer.get("name", "")
        text = _json_text(answer.get("response", {}))
        return {"type": "tool_result", "tool_use_id": answer.get("id") or name, "content": text}
    if "inlineData" in part or "fileData" in part:
        return {"type": "image", "source": {"type": "base64", "data": ""}}
    known = "text, functionCall, functionResponse, inlineData, fileData"
    raise CouldNotJudge(f"{where}: a part measured here has one of {known}")


def _gemini_text(content: object, where: str) -> str | None:
    if content is None:
        return None
    if isinstance(content, str):
        return content
    if not isinstance(content, Mapping):
        raise CouldNotJudge(f"{where}: must be an object, not {describe_type(content, 'json')}")
    parts = _objects(content.get("parts"), f"{where}.parts")
    return "\n".join(str(part.get("text", "")) for part in parts)


def gemini_parts(body: Mapping[str, Any]) -> tuple[Any, object, object, list[str]]:
    """A generateContent body as ``(system, messages, tools, notes)``."""
    notes: list[str] = []
    system = _gemini_text(body.get("systemInstruction"), "systemInstruction")
    if "contents" not in body:
        raise CouldNotJudge("the body has no 'contents' array")
    messages: list[dict[str, Any]] = []
    for index, content in enumerate(_objects(body["contents"], "contents")):
        here = f"contents[{index}]"
        role = _GEMINI_ROLES.get(str(content.get("role", "user")))
        if role is None:
            raise CouldNotJudge(f"{here}.role: {content.get('role')!r} is not user or model")
        blocks = [
            _gemini_part(part, f"{here}.parts[{number}]")
            for number, part in enumerate(_objects(content.get("parts"), f"{here}.parts"))
        ]
        messages.append({"role": role, "content": [block for block in blocks if block]})
    tools: list[dict[str, Any]] = []
    built_in: list[str] = []
    for index, tool in enumerate(_objects(body.get("tools"), "tools")):
        where = f"tools[{index}].functionDeclarations"
        for declaration in _objects(tool.get("functionDeclarations"), where):
            parameters = declaration.get("parametersJsonSchema", declaration.get("parameters"))
            function = {
                "name": declaration.get("name"),
                "description": declaration.get("description"),
            }
            if parameters is not None:
                function["parameters"] = parameters
            tools.append({"type": "function", "function": function})
        built_in.extend(name for name in _GEMINI_BUILT_IN if name in tool)
    if built_in:
        notes.append(
            f"built-in tools not counted (the provider defines them): {', '.join(built_in)}"
        )
    return system, messages, (tools or None), notes
