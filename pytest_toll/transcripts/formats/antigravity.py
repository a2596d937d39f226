"""Google Antigravity conversations: ``~/.gemini/antigravity/brain/<id>/…/transcript.jsonl``
(and ``antigravity-cli``, ``antigravity-ide``), one step a line: ``{"step_index", "source",
"type", "status", "created_at", "content", …}``. Beside it, ``transcript_full.jsonl`` holds
every step when ``transcript.jsonl`` was cut at a checkpoint: the full one is read, the
other is not (it would count its steps twice).

A ``PLANNER_RESPONSE`` step (source ``MODEL``) holds the model's ``tool_calls`` (``name``,
``args`` or ``arguments``, each argument value a JSON-encoded string); the action steps that
follow it (``RUN_COMMAND``, ``VIEW_FILE``, ``LIST_DIRECTORY``…) are their results, by order:
the format names no call. A command sent to the background leaves a ``RUNNING`` step that
names its task (``background task with task id: <id>``); its output arrives later in a
``SYSTEM_MESSAGE`` (``Task id "<id>" finished with result: …``), which is the call's result
(the log file it points to is never opened). A step that lists ``truncated_fields`` was cut
short by the agent. A ``CHECKPOINT`` step resumes from a compaction.

Usage: a ``PLANNER_RESPONSE`` carries ``input_tokens`` (without the cached count),
``cache_read_tokens`` and ``output_tokens``; older steps a ``usage`` object
(``input_tokens``/``prompt_token_count`` including the cached count, and the output). No
line names its model: the user's ``Model Selection`` change, written into a user input,
does.
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
    arguments_of,
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
    UsageRecord,
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
#: A command sent to the background, and the message that brings its output.
_TASK_STARTED = re.compile(r"background task with task id:\s*(\S+)")
_TASK_FINISHED = re.compile(r'Task id "([^"]+)" finished with result:')
FULL = "transcript_full.jsonl"


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
    if isinstance(value, str):  # the whole arguments as one JSON string
        value = arguments_of(value)
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


def _task_output(rest: str) -> str:
    """A finished task's output: what follows its head, without the closing tag and the
    ``Log: file://…`` line that points to its full log (string operations: no regular
    expression runs over output a hostile file may fill with whitespace)."""
    rest = rest.strip()
    rest = rest.removesuffix("</SYSTEM_MESSAGE>").rstrip()
    last = rest.rfind("\n")
    if rest[last + 1 :].startswith("Log: file://"):
        rest = rest[: max(last, 0)].rstrip()
    return rest


def read_instead(path: Path) -> Path | None:
    """A ``transcript.jsonl`` is read from ``transcript_full.jsonl``, where that is beside it."""
    return path.parent / FULL if path.name == "transcript.jsonl" else None


def _usage(
    step: Mapping[str, Any], session: str, model: object, number_: int
) -> UsageRecord | None:
    message_id = f"{session}/{step.get('step_index', number_)}"
    name = step.get("model") or model
    if any(key in step for key in ("input_tokens", "output_tokens", "cache_read_tokens")):
        cached = number(step.get("cache_read_tokens"))
        return usage(
            session,
            name,
            prompt_with_cache=number(step.get("input_tokens")) + cached,
            output=number(step.get("output_tokens")),
            cache_read=cached,
            message_id=message_id,
        )
    step_usage = step.get("usage")
    if not isinstance(step_usage, dict):
        return None
    return usage(
        session,
        name,
        prompt_with_cache=number(step_usage.get("input_tokens"))
        or number(step_usage.get("prompt_token_count")),
        output=number(step_usage.get("output_tokens"))
        or number(step_usage.get("candidates_token_count")),
        cache_read=number(step_usage.get("cached_content_token_count")),
        message_id=message_id,
    )


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    session = session_name(path)
    order = OrderPairing()
    model: object = None
    #: background tasks still running: their task id -> the call they answer
    running: dict[str, str] = {}
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
        turn = _usage(step, session, model, number_)
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
                arguments = _arguments(call.get("args", call.get("arguments")))
                yield order.call(session, tool or "unknown", arguments)
                if with_text:
                    yield call_text(session, tool or "unknown", arguments)
        elif step_type == "SYSTEM_MESSAGE" and running:
            message = text_of(step.get("content"))
            finished = _TASK_FINISHED.search(message)
            call_id = running.pop(finished.group(1), None) if finished else None
            if finished is not None and call_id is not None:
                yield ResultRecord(session, call_id, _task_output(message[finished.end() :]), False)
        elif step_type not in _NOT_RESULTS and order.waiting(session):
            call_id = order.answer(session)
            if call_id is None:
                continue
            yield from order.flag(session)
            text = text_of(step.get("content"))
            started = _TASK_STARTED.search(text) if step.get("status") == "RUNNING" else None
            if started is not None:
                running[started.group(1)] = call_id  # its result comes with the task's end
                continue
            status = step.get("status")
            failed = (isinstance(status, str) and status in _FAILED) or "error" in step
            if not text and "error" in step:
                text = text_of(step.get("error"))
            cut = step.get("truncated_fields")
            record = CutResult if cut and not failed else ResultRecord
            yield record(session, call_id, text, failed)
