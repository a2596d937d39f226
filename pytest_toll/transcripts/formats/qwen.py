"""Qwen Code sessions: ``~/.qwen/projects/<project>/chats/<id>.jsonl``, one record a line.

Lines carry ``type`` (user, assistant, tool_result, system), ``sessionId``, ``uuid`` and a
Gemini-style ``message`` (``role``, ``parts``). An assistant line's ``functionCall`` parts are
the calls (``id``, ``name``, ``args``) and its ``usageMetadata`` the turn's usage
(``promptTokenCount`` includes ``cachedContentTokenCount``); a ``tool_result`` line answers
one call by ``toolCallResult.callId`` (its ``status``: success, error, cancelled) with the
``functionResponse`` the model reads. The older Gemini-fork layout (``~/.qwen/tmp/…/chats``)
is Gemini CLI's own and read by :mod:`~pytest_toll.transcripts.formats.gemini`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.transcripts.formats.base import (
    Home,
    arguments_of,
    call_text,
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

NAME = "qwen"
TITLE = "Qwen Code"


def folders(home: Home) -> list[Path]:
    return [home.path / ".qwen" / "projects", home.path / ".qwen" / "tmp"]


def sniff(value: object) -> bool:
    if not isinstance(value, dict) or not isinstance(value.get("sessionId"), str):
        return False
    message = value.get("message")
    if isinstance(message, dict) and isinstance(message.get("parts"), list):
        return value.get("type") in ("user", "assistant", "tool_result", "system")
    return value.get("type") == "system" and "systemPayload" in value


def _result(line: Mapping[str, Any], session: str) -> ResultRecord | None:
    outcome = line.get("toolCallResult")
    outcome = outcome if isinstance(outcome, dict) else {}
    message = line.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    texts: list[str] = []
    failed = outcome.get("status") in ("error", "cancelled")
    call_id = outcome.get("callId")
    for part in parts if isinstance(parts, list) else []:
        response = part.get("functionResponse") if isinstance(part, dict) else None
        if not isinstance(response, dict):
            continue
        if not isinstance(call_id, str):
            call_id = response.get("id")
        body = response.get("response")
        if isinstance(body, dict) and "error" in body:
            failed = True
            texts.append(text_of(body["error"]))
        elif isinstance(body, dict) and "output" in body:
            texts.append(text_of(body["output"]))
        elif body is not None:
            texts.append(text_of(body))
    if not isinstance(call_id, str):
        return None
    return ResultRecord(session, call_id, "\n".join(texts), failed)


def _records(line: Mapping[str, Any], fallback: str, with_text: bool) -> list[SessionRecord]:
    session = line.get("sessionId")
    session = session if isinstance(session, str) and session else fallback
    line_type = line.get("type")
    if line_type == "tool_result":
        result = _result(line, session)
        return [result] if result is not None else []
    if line_type == "system":
        subtype = line.get("subtype")
        compressed = isinstance(subtype, str) and "compression" in subtype
        return [BoundaryRecord(session)] if compressed else []
    message = line.get("message")
    parts = message.get("parts") if isinstance(message, dict) else None
    records: list[SessionRecord] = []
    if line_type == "assistant":
        metadata = line.get("usageMetadata")
        if isinstance(metadata, dict):
            uuid = line.get("uuid")
            turn = usage(
                session,
                line.get("model"),
                prompt_with_cache=number(metadata.get("promptTokenCount")),
                output=number(metadata.get("candidatesTokenCount"))
                + number(metadata.get("thoughtsTokenCount")),
                cache_read=number(metadata.get("cachedContentTokenCount")),
                message_id=uuid if isinstance(uuid, str) else None,
            )
            if turn is not None:
                records.append(turn)
    for part in parts if isinstance(parts, list) else []:
        if not isinstance(part, dict):
            continue
        call = part.get("functionCall")
        if line_type == "assistant" and isinstance(call, dict) and isinstance(call.get("id"), str):
            name = call.get("name")
            tool = name if isinstance(name, str) and name else "unknown"
            arguments = arguments_of(call.get("args"))
            records.append(CallRecord(session, call["id"], tool, arguments))
            if with_text:
                records.append(call_text(session, tool, arguments))
        elif with_text and isinstance(part.get("text"), str) and part["text"]:
            role = "user" if line_type == "user" else "assistant"
            records.append(
                TextRecord(
                    session, "thinking" if part.get("thought") is True else role, part["text"]
                )
            )
    return records


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    seen_calls: set[str] = set()
    for number_, line in json_lines(path, max_line_bytes):
        if isinstance(line, BadLine):
            yield line
        elif not isinstance(line, dict):
            yield BadLine(number_, "not a JSON object")
        else:
            for record in _records(line, path.stem, with_text):
                if type(record) is CallRecord:
                    if record.call_id in seen_calls:
                        continue
                    seen_calls.add(record.call_id)
                yield record
