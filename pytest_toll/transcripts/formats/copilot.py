"""GitHub Copilot CLI sessions: ``~/.copilot/session-state/<id>.jsonl`` or
``<id>/events.jsonl``, one event a line: ``{"type", "data", "id", "timestamp", "parentId"}``.

``tool.execution_start`` (``toolCallId``, ``toolName``, ``arguments``) is a call and
``tool.execution_complete`` (``toolCallId``, ``success``, ``result.content`` — what the model
reads; ``detailedContent`` is for the screen — or ``error``) its result, by ``toolCallId``.
An ``assistant.message``'s ``toolRequests`` name calls too (kept when no start event
follows). ``assistant.usage`` is one turn (``inputTokens`` includes ``cacheReadTokens``).

Older versions kept each session as one JSON document in ``~/.copilot/history-session-state``
(``session_<id>_<time>.json``): ``sessionId``, ``startTime`` and ``chatMessages``, the
OpenAI-style messages sent (an assistant's ``tool_calls[]``: ``id``, ``function.name``,
``function.arguments`` as a JSON string; a ``tool`` message's ``tool_call_id`` and
``content``, failed when a command's output ends ``<exited with exit code N>``, N not
0), paired by id. ``COPILOT_HOME`` moves the whole folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.transcripts.formats.base import (
    Home,
    arguments_of,
    call_text,
    document_or_bad_line,
    items,
    json_lines,
    number,
    text_of,
    usage,
)
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    Record,
    ResultRecord,
    SessionRecord,
    TextRecord,
)

NAME = "copilot"
#: How the shell tool ends its output; the messages carry no failure flag, so a command's
#: non-zero exit is read from it.
_EXIT = re.compile(r"<exited with exit code (-?\d+)>\s*$")
TITLE = "Copilot CLI"


def folders(home: Home) -> list[Path]:
    root = Path(home.environ.get("COPILOT_HOME") or home.path / ".copilot")
    return [root / "session-state", root / "history-session-state"]


def session_name(path: Path) -> str:
    """A session's folder names it when its file is ``<id>/events.jsonl``."""
    return path.parent.name if path.stem == "events" else path.stem


def is_history(value: object) -> bool:
    """An older version's session document: its id and the chat messages it sent."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("sessionId"), str)
        and isinstance(value.get("chatMessages"), list)
    )


def sniff(value: object) -> bool:
    if is_history(value):
        return True
    if not isinstance(value, dict) or not isinstance(value.get("data"), dict):
        return False
    event_type = value.get("type")
    return isinstance(event_type, str) and event_type.startswith(
        ("session.", "tool.execution_", "assistant.", "user.message")
    )


def _call(data: Mapping[str, Any], name_key: str, session: str) -> CallRecord | None:
    call_id = data.get("toolCallId")
    if not isinstance(call_id, str):
        return None
    name = data.get(name_key)
    tool = name if isinstance(name, str) and name else "unknown"
    return CallRecord(session, call_id, tool, arguments_of(data.get("arguments")))


def _records(
    event_type: object, data: Mapping[str, Any], event_id: object, session: str, with_text: bool
) -> list[SessionRecord]:
    if event_type == "tool.execution_start":
        call = _call(data, "toolName", session)
        return [call] if call is not None else []
    if event_type == "tool.execution_complete":
        call_id = data.get("toolCallId")
        if not isinstance(call_id, str):
            return []
        result = data.get("result")
        text = text_of(result.get("content") if isinstance(result, dict) else result)
        error = data.get("error")
        if not text and error is not None:
            text = text_of(error.get("message") if isinstance(error, dict) else error)
        return [ResultRecord(session, call_id, text, data.get("success") is False)]
    if event_type == "assistant.usage":
        turn = usage(
            session,
            data.get("model"),
            prompt_with_cache=number(data.get("inputTokens")),
            output=number(data.get("outputTokens")),
            cache_read=number(data.get("cacheReadTokens")),
            cache_write=number(data.get("cacheWriteTokens")),
            message_id=event_id if isinstance(event_id, str) else None,
        )
        return [turn] if turn is not None else []
    if event_type == "session.compaction_complete":
        return [BoundaryRecord(session)]
    if event_type == "assistant.message":
        records: list[SessionRecord] = []
        for request in items(data.get("toolRequests")):
            call = _call(request, "name", session) if isinstance(request, dict) else None
            if call is not None:
                records.append(call)
        if with_text and text_of(data.get("content")):
            records.append(TextRecord(session, "assistant", text_of(data.get("content"))))
        return records
    if with_text and event_type == "user.message" and text_of(data.get("content")):
        return [TextRecord(session, "user", text_of(data.get("content")))]
    if with_text and event_type == "assistant.reasoning" and text_of(data.get("content")):
        return [TextRecord(session, "thinking", text_of(data.get("content")))]
    return []


def _history(value: Mapping[str, Any], session: str, with_text: bool) -> Iterator[Record]:
    for message in items(value.get("chatMessages")):
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "tool" and isinstance(message.get("tool_call_id"), str):
            text = text_of(message.get("content"))
            exited = _EXIT.search(text[-64:])
            failed = exited is not None and exited.group(1) != "0"
            yield ResultRecord(session, message["tool_call_id"], text, failed)
            continue
        if with_text and role in ("user", "assistant") and text_of(message.get("content")):
            yield TextRecord(session, role, text_of(message.get("content")))
        if role != "assistant":
            continue
        for call in items(message.get("tool_calls")):
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                continue
            function = call.get("function")
            function = function if isinstance(function, dict) else {}
            name = function.get("name")
            tool = name if isinstance(name, str) and name else "unknown"
            arguments = arguments_of(function.get("arguments"))
            yield CallRecord(session, call["id"], tool, arguments)
            if with_text:
                yield call_text(session, tool, arguments)


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    if document:
        # One JSON document: an older version's session, or an events file of one line.
        value, bad = document_or_bad_line(path)
        if bad is not None:
            yield bad
            return
        if is_history(value):
            yield from _history(value, value["sessionId"] or path.stem, with_text)
            return
    # <id>/events.jsonl names its session by its folder; <id>.jsonl by its own name.
    session = path.parent.name if path.stem == "events" else path.stem
    seen_calls: set[str] = set()
    for number_, line in json_lines(path, max_line_bytes):
        if isinstance(line, BadLine):
            yield line
            continue
        if not isinstance(line, dict):
            yield BadLine(number_, "not a JSON object")
            continue
        data = line.get("data")
        if not isinstance(data, dict):
            continue
        event_type = line.get("type")
        if event_type == "session.start" and isinstance(data.get("sessionId"), str):
            session = data["sessionId"] or session
            continue
        for record in _records(event_type, data, line.get("id"), session, with_text):
            if type(record) is CallRecord:
                if record.call_id in seen_calls:
                    continue
                seen_calls.add(record.call_id)
                if with_text:
                    yield call_text(session, record.tool, record.input)
            yield record
