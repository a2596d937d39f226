"""Google Antigravity conversations: ``~/.gemini/antigravity/brain/<id>/…/transcript.jsonl``,
one step a line: ``{"step_index", "source", "type", "status", "created_at", "content", …}``.

A ``PLANNER_RESPONSE`` step (source ``MODEL``) holds the model's ``tool_calls`` (``name``,
``args``, each argument value a JSON-encoded string); the action steps that follow it
(``RUN_COMMAND``, ``VIEW_FILE``, ``LIST_DIRECTORY``…) are their results, by order: the format
names no call. A step that lists ``truncated_fields`` was cut short by the agent. A
``CHECKPOINT`` step resumes from a compaction. Steps may carry ``usage``
(``input_tokens``/``prompt_token_count`` including the cached count, and the output).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.parse import ParseError, load_json
from pytest_toll.transcripts.formats.base import (
    Home,
    OrderPairing,
    call_text,
    items,
    json_lines,
    number,
    text_of,
    usage,
)
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CutResult,
    Record,
    ResultRecord,
    TextRecord,
)

NAME = "antigravity"
TITLE = "Antigravity"
#: Steps that are neither a call's result nor a tool call.
_NOT_RESULTS = frozenset(
    {"USER_INPUT", "PLANNER_RESPONSE", "CONVERSATION_HISTORY", "CHECKPOINT", "SYSTEM_MESSAGE",
     "EPHEMERAL_MESSAGE", "KNOWLEDGE_ARTIFACTS", "GENERATE_RESPONSE", "USER_MESSAGE"}
)  # fmt: skip
_FAILED = frozenset({"ERROR", "FAILED", "CANCELED", "CANCELLED"})
#: The model a user picked, as the agent writes it into the next user input.
_MODEL_PICKED = re.compile(r"setting `Model Selection` from .*? to (.+?)(?:\. |\.?\n|\.?$)")


def sniff(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    step_type = value.get("type")
    return (
        isinstance(step_type, str)
        and step_type.isupper()
        and value.get("source") in ("USER_EXPLICIT", "MODEL", "SYSTEM", "USER")
        and ("step_index" in value or "created_at" in value)
    )


def _arguments(value: object) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        return {}
    decoded: dict[str, Any] = {}
    for key, raw in value.items():
        try:
            decoded[key] = load_json(raw, key) if isinstance(raw, str) else raw
        except ParseError:
            decoded[key] = raw  # not every value is encoded: keep it as written
    return decoded


def folders(home: Home) -> list[Path]:
    gemini = home.path / ".gemini"
    return [
        gemini / name / "brain" for name in ("antigravity", "antigravity-cli", "antigravity-ide")
    ]


def session_name(path: Path) -> str:
    """The conversation id: the ``brain/<id>`` folder the transcript sits in."""
    parts = path.parts
    for index, part in enumerate(parts[:-1]):
        if part == "brain":
            return parts[index + 1]
    return path.parent.name if path.stem == "transcript" else path.stem


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    session = session_name(path)
    order = OrderPairing()
    model: object = None
    for number_, step in json_lines(path, max_line_bytes):
        if isinstance(step, BadLine):
            yield step
            continue
        if not isinstance(step, dict):
            yield BadLine(number_, "not a JSON object")
            continue
        step_type = step.get("type") if isinstance(step.get("type"), str) else ""
        if step_type == "USER_INPUT" and isinstance(step.get("content"), str):
            picked = _MODEL_PICKED.search(step["content"])
            model = picked.group(1).strip() if picked else model
        step_usage = step.get("usage")
        if isinstance(step_usage, dict):
            turn = usage(
                session,
                step.get("model") or model,
                prompt_with_cache=number(step_usage.get("input_tokens"))
                or number(step_usage.get("prompt_token_count")),
                output=number(step_usage.get("output_tokens"))
                or number(step_usage.get("candidates_token_count")),
                cache_read=number(step_usage.get("cached_content_token_count")),
                message_id=f"{session}/{step.get('step_index', number_)}",
            )
            if turn is not None:
                yield turn
        if step_type == "CHECKPOINT":
            yield BoundaryRecord(session)
        elif step_type == "USER_INPUT":
            if with_text and text_of(step.get("content")):
                yield TextRecord(session, "user", text_of(step.get("content")))
        elif step_type == "PLANNER_RESPONSE":
            if with_text:
                if text_of(step.get("thinking")):
                    yield TextRecord(session, "thinking", text_of(step.get("thinking")))
                if text_of(step.get("content")):
                    yield TextRecord(session, "assistant", text_of(step.get("content")))
            for call in items(step.get("tool_calls")):
                if not isinstance(call, dict):
                    continue
                name = call.get("name")
                tool = name.removeprefix("default_api:") if isinstance(name, str) else ""
                arguments = _arguments(call.get("args"))
                yield order.call(session, tool or "unknown", arguments)
                if with_text:
                    yield call_text(session, tool or "unknown", arguments)
        elif step_type not in _NOT_RESULTS and order.waiting(session):
            call_id = order.answer(session)
            if call_id is None:
                continue
            yield from order.flag(session)
            text = text_of(step.get("content"))
            status = step.get("status")
            failed = (isinstance(status, str) and status in _FAILED) or "error" in step
            if not text and "error" in step:
                text = text_of(step.get("error"))
            cut = step.get("truncated_fields")
            record = CutResult if cut and not failed else ResultRecord
            yield record(session, call_id, text, failed)
