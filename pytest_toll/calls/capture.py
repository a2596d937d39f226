"""LLM requests captured while a test ran: recognised by path, measured like a request body.

The pytest adapter's hook (:mod:`pytest_toll.capture_hook`) hands over what was sent as a
:class:`SentRequest` (the endpoint and the body bytes, never a header); this module decides
which API the request speaks, reads its body and measures it with :func:`measure` exactly as
``toll measure --messages body.json`` measures a request body: parts messages, system,
skills and tools, o200k (what budgets grade) and the model's scaled figure, USD when the
model is priced. The model is the body's own ``model``.

Three APIs are recognised, by the end of the path (so a gateway's prefix or an Azure
deployment path still matches) and then by the body's shape:

- Anthropic Messages, ``…/v1/messages`` (``…/v1/messages/count_tokens`` is not a request
  to the model and is left alone);
- OpenAI Chat Completions, ``…/chat/completions``;
- OpenAI Responses, ``…/v1/responses`` (``instructions`` is the system part, ``input`` the
  messages).

A body that cannot be read or measured is a request that "could not judge", with the
reason, never a request dropped. Built-in tools a provider runs itself (web search, code
execution) have no definition in the body to count: they are left out and a note says so.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_toll.calls.measuring import PARTS, CallReport, measure
from pytest_toll.core.errors import CouldNotJudge, UsageError, describe_type
from pytest_toll.core.models import Catalogue, Model, load_models
from pytest_toll.core.tokens import O200K

ANTHROPIC_MESSAGES = "anthropic.messages"
OPENAI_CHAT = "openai.chat_completions"
OPENAI_RESPONSES = "openai.responses"
APIS = (ANTHROPIC_MESSAGES, OPENAI_CHAT, OPENAI_RESPONSES)
_PROVIDER = {ANTHROPIC_MESSAGES: "anthropic", OPENAI_CHAT: "openai", OPENAI_RESPONSES: "openai"}


def recognise(method: str, path: str) -> str | None:
    """The API a request speaks, from its method and URL path; None for any other request."""
    if method != "POST":
        return None
    path = path.rstrip("/")
    if path.endswith("/v1/messages"):
        return ANTHROPIC_MESSAGES
    if path.endswith("/chat/completions"):
        return OPENAI_CHAT
    if path.endswith(("/v1/responses", "/openai/responses")):
        return OPENAI_RESPONSES
    return None


@dataclass(frozen=True)
class SentRequest:
    """One request as it was sent: where to (no query string, no header) and its body.

    ``body`` is None when it could not be read, and ``read_error`` says why.
    """

    api: str
    host: str
    path: str
    body: bytes | None
    read_error: str = ""


@dataclass(frozen=True)
class MeasuredRequest:
    """One captured request, measured, or the reason it could not be."""

    number: int
    api: str
    host: str
    path: str
    model: str | None = None
    stream: bool = False
    report: CallReport | None = None
    error: str = ""
    notes: tuple[str, ...] = ()

    @property
    def tokens(self) -> int | None:
        """The graded figure: the o200k total of the request, None when not judged."""
        return None if self.report is None else self.report.graded_tokens

    def describe(self) -> str:
        """``#2 anthropic.messages claude-sonnet-5 (stream)``: which request this is."""
        model = f" {self.model}" if self.model else ""
        return f"#{self.number} {self.api}{model}{' (stream)' if self.stream else ''}"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "number": self.number,
            "api": self.api,
            "host": self.host,
            "path": self.path,
            "model": self.model,
            "stream": self.stream,
            "tokens": self.tokens,
            "method": O200K if self.report is not None else None,
        }
        report = self.report
        if report is not None:
            data["parts"] = {name: report.parts[name].tokens for name in PARTS}
            data["scaled"] = report.total.scaled
            data["scaled_method"] = report.scaled_method
            data["cost_usd"] = report.as_dict()["total"].get("cost_usd")
        else:
            data["error"] = self.error
        data["notes"] = [*self.notes, *(report.notes if report is not None else ())]
        return data


@dataclass(frozen=True)
class CaptureReport:
    """Every request a test sent while capturing, and the figure its budget grades."""

    requests: tuple[MeasuredRequest, ...] = ()

    @property
    def judged(self) -> list[MeasuredRequest]:
        return [request for request in self.requests if request.report is not None]

    @property
    def unjudged(self) -> list[MeasuredRequest]:
        return [request for request in self.requests if request.report is None]

    @property
    def largest(self) -> MeasuredRequest | None:
        """The heaviest request (the first of equals): the per-call context a budget is about."""
        judged = self.judged
        return max(judged, key=lambda request: request.tokens or 0) if judged else None

    @property
    def total(self) -> int:
        return sum(request.tokens or 0 for request in self.judged)

    def as_dict(self) -> dict[str, Any]:
        largest = self.largest
        return {
            "count": len(self.requests),
            "largest": None if largest is None else largest.tokens,
            "largest_number": None if largest is None else largest.number,
            "sum": self.total,
            "could_not_judge": len(self.unjudged),
            "requests": [request.as_dict() for request in self.requests],
        }


def measure_sent(sent: Sequence[SentRequest], catalogue: Catalogue | None = None) -> CaptureReport:
    """Measure every captured request, numbered from 1 in the order they were sent."""
    catalogue = catalogue or load_models()
    return CaptureReport(
        tuple(_measure_one(index, request, catalogue) for index, request in enumerate(sent, 1))
    )


def _measure_one(number: int, sent: SentRequest, catalogue: Catalogue) -> MeasuredRequest:
    request = MeasuredRequest(number, sent.api, sent.host, sent.path)
    if sent.body is None:
        return replace(request, error=f"the body could not be read: {sent.read_error}")
    try:
        body = json.loads(sent.body)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        return replace(request, error=f"the body is not JSON: {error}")
    if not isinstance(body, dict):
        kind = describe_type(body, "json")
        return replace(request, error=f"the body must be a JSON object, not {kind}")
    model_name = body.get("model")
    request = replace(request, stream=body.get("stream") is True)
    if not isinstance(model_name, str) or not model_name:
        return replace(request, error="the body names no model")
    request = replace(request, model=model_name)
    try:
        system, messages, tools, notes = _parts_of(sent.api, body)
        model = _model(model_name, _PROVIDER[sent.api], catalogue, notes)
        report = measure(model, system, messages, tools, catalogue=catalogue)
    except (CouldNotJudge, UsageError) as error:
        return replace(request, error=str(error))
    return replace(request, report=report, notes=tuple(notes))


def _model(name: str, provider: str, catalogue: Catalogue, notes: list[str]) -> Model:
    """The catalogue's row for the body's model; a stand-in (no scale, no price) otherwise,
    so a model the catalogue does not know is still measured, and says so."""
    found = catalogue.find(name)
    if found is not None:
        return found
    notes.append(
        f"{name} is not in the model catalogue: unscaled and unpriced "
        "(add it under models: in toll.yaml)"
    )
    return Model(name=name, provider=provider)


def _parts_of(api: str, body: Mapping[str, Any]) -> tuple[Any, object, object, list[str]]:
    """``(system, messages, tools, notes)`` of a request body, in the shapes measure() takes."""
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
        kind = item.get("type", "message")
        if kind == "message":
            messages.append({"role": item.get("role"), "content": item.get("content")})
        elif kind == "function_call":
            call = {"name": item.get("name"), "arguments": item.get("arguments", "{}")}
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [{"id": item.get("call_id", ""), "function": call}],
                }
            )
        elif kind == "function_call_output":
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
                f"{here}.type: {kind!r} is not an input item measured here "
                "(message, function_call, function_call_output)"
            )
    return messages
