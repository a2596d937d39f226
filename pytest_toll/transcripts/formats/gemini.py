"""Gemini CLI sessions: ``~/.gemini/tmp/<project>/chats/session-*.jsonl`` and ``.json``, and
the files that carry a whole context as a list of Gemini API ``Content``: ``/chat save``
checkpoints (``checkpoint-<tag>.json``) and the client's error reports
(``gemini-client-error-*.json``).

- JSON lines (newer): a metadata line (``sessionId``, ``projectHash``, ``startTime``, no
  ``type``), message lines (``id``, ``type``: user, gemini, info, error…) and ``{"$set": …}``
  patches. A message is appended again under the same id as it grows (a reply streaming, its
  tool calls finishing): the last line of an id wins. A ``$set`` of ``messages`` rewrites the
  whole history (a resumed or compressed session): what came before it is replaced.
- JSON (older): one object, ``sessionId`` and a ``messages`` list of the same messages.
- A ``Content`` list: ``[{"role": "user"|"model", "parts": [...]}]``, whole (a checkpoint),
  under ``history`` (a newer checkpoint) or under ``context`` beside the ``error`` (a report).
  A ``functionResponse`` pairs with the ``functionCall`` of its id when a waiting call
  carries that id; otherwise with the oldest waiting call of its name (the session flagged as
  paired by order). The model's calls often carry no id while the CLI gives each response
  one it made up, so a real file pairs mostly by order.

A ``gemini`` message holds its calls and their results together (``toolCalls[]``: ``id``,
``name``, ``args``, ``result`` as ``functionResponse`` parts, ``status``), and its usage in
``tokens`` (``input`` includes ``cached``; ``thoughts`` are output; ``tool`` is prompt).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, TypeGuard

from pytest_toll.transcripts.formats import qwen
from pytest_toll.transcripts.formats.base import (
    Home,
    OrderPairing,
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
    CallRecord,
    Record,
    ResultRecord,
    SessionRecord,
    TextRecord,
)

NAME = "gemini"
TITLE = "Gemini CLI"
#: The names the CLI gives its whole-document files (as @google/gemini-cli-core 0.61.0 writes
#: them: core/logger.js, utils/errorReporting.js, and sessions before JSON lines).
DOCUMENT_NAMES = ("checkpoint-*.json", "gemini-client-error-*.json", "session-*.json")
_MESSAGE_TYPES = frozenset({"user", "gemini", "info", "error", "warning"})


def is_metadata_line(line: Mapping[str, Any]) -> bool:
    return isinstance(line.get("sessionId"), str) and "projectHash" in line and "type" not in line


def folders(home: Home) -> list[Path]:
    return [home.path / ".gemini" / "tmp"]


def writer(path: Path) -> str:
    """Qwen Code's older sessions are in Gemini CLI's format (Qwen Code is its fork): the
    content says the format, the folder which of the two agents wrote it."""
    return qwen.NAME if ".qwen" in path.parts else NAME


def sniff(value: object) -> bool:
    """A Gemini CLI session (its metadata line, or the whole JSON object), a checkpoint or an
    error report."""
    if isinstance(value, dict):
        if is_metadata_line(value):
            return True
        patch = value.get("$set")
        if isinstance(patch, dict) and ("lastUpdated" in patch or "messages" in patch):
            return True
        if isinstance(value.get("messages"), list) and "projectHash" in value:
            return True
    return _contents(value) is not None


def _parts_result(parts: object) -> tuple[str, bool]:
    """The text a tool's ``functionResponse`` parts gave back, and whether it was an error."""
    texts: list[str] = []
    failed = False
    items = parts if isinstance(parts, list) else [parts]
    for part in items:
        if not isinstance(part, dict):
            if isinstance(part, str):
                texts.append(part)
            continue
        response = part.get("functionResponse")
        if isinstance(response, dict):
            body = response.get("response")
            if isinstance(body, dict) and "error" in body:
                failed = True
                texts.append(text_of(body.get("error")))
            elif isinstance(body, dict) and "output" in body:
                texts.append(text_of(body.get("output")))
            elif body is not None:
                texts.append(text_of(body))
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
    return "\n".join(texts), failed


def message_records(
    message: Mapping[str, Any], session: str, with_text: bool
) -> list[SessionRecord]:
    """The records of one chat-recording message (shared with Qwen's older layout)."""
    message_type = message.get("type")
    records: list[SessionRecord] = []
    if message_type == "user":
        if with_text:
            text = text_of(message.get("content"))
            if text:
                records.append(TextRecord(session, "user", text))
        return records
    if message_type != "gemini":
        return records
    message_id = message.get("id")
    tokens = message.get("tokens")
    if isinstance(tokens, dict):
        turn = usage(
            session,
            message.get("model"),
            prompt_with_cache=number(tokens.get("input")) + number(tokens.get("tool")),
            output=number(tokens.get("output")) + number(tokens.get("thoughts")),
            cache_read=number(tokens.get("cached")),
            message_id=f"{session}/{message_id}" if isinstance(message_id, str) else None,
        )
        if turn is not None:
            records.append(turn)
    if with_text:
        for thought in items(message.get("thoughts")):
            if isinstance(thought, dict):
                text = text_of(thought.get("description"))
                if text:
                    records.append(TextRecord(session, "thinking", text))
        text = text_of(message.get("content"))
        if text:
            records.append(TextRecord(session, "assistant", text))
    for call in items(message.get("toolCalls")):
        if not isinstance(call, dict) or not isinstance(call.get("id"), str):
            continue
        name = call.get("name")
        tool = name if isinstance(name, str) and name else "unknown"
        arguments = arguments_of(call.get("args"))
        records.append(CallRecord(session, call["id"], tool, arguments))
        if with_text:
            records.append(call_text(session, tool, arguments))
        status = call.get("status")
        if "result" not in call or call.get("result") is None:
            if status in ("error", "cancelled"):
                text = text_of(call.get("resultDisplay"))
                records.append(ResultRecord(session, call["id"], text, True))
            continue  # still running when the session ended: unpaired
        text, failed = _parts_result(call.get("result"))
        records.append(
            ResultRecord(session, call["id"], text, failed or status in ("error", "cancelled"))
        )
    return records


def _jsonl(path: Path, with_text: bool, max_line_bytes: int) -> Iterator[Record]:
    # Pass one finds where each message id is written last and the last full rewrite; pass
    # two yields each message from that line only. Both stream: only ids and numbers are held.
    last_line: dict[str, int] = {}
    rewrite = 0
    for number_, line in json_lines(path, max_line_bytes):
        if not isinstance(line, dict):
            continue
        patch = line.get("$set")
        if isinstance(patch, dict) and isinstance(patch.get("messages"), list):
            rewrite = number_
            for message in patch["messages"]:
                if isinstance(message, dict) and isinstance(message.get("id"), str):
                    last_line[message["id"]] = number_
        elif isinstance(line.get("id"), str) and line.get("type") in _MESSAGE_TYPES:
            last_line[line["id"]] = number_
    session = path.stem
    for number_, line in json_lines(path, max_line_bytes):
        if isinstance(line, BadLine):
            yield line
            continue
        if not isinstance(line, dict):
            yield BadLine(number_, "not a JSON object")
            continue
        if is_metadata_line(line):
            session = line["sessionId"] or session
            continue
        patch = line.get("$set")
        if isinstance(patch, dict):
            if number_ == rewrite:
                for message in patch["messages"]:
                    if not isinstance(message, dict):
                        continue
                    message_id = message.get("id")
                    if not isinstance(message_id, str) or last_line.get(message_id) == number_:
                        yield from message_records(message, session, with_text)
            continue
        if number_ < rewrite:
            continue
        message_id = line.get("id")
        if isinstance(message_id, str) and last_line.get(message_id) != number_:
            continue  # written again further on: the last one wins
        yield from message_records(line, session, with_text)


def _contents(value: object) -> list[Any] | None:
    """The ``Content`` list a document holds: a checkpoint's own list, a newer checkpoint's
    ``history``, an error report's ``context`` (the request that failed); else None."""
    if isinstance(value, dict):
        for key in ("history", "context"):
            inner = value.get(key)
            if is_contents(inner):
                return inner
        return None
    return value if is_contents(value) else None


def is_contents(value: object) -> TypeGuard[list[Any]]:
    """A list of Gemini API ``Content`` (its first a ``role`` with ``parts``)."""
    if not isinstance(value, list) or not value or not isinstance(value[0], dict):
        return False
    first = value[0]
    return first.get("role") in ("user", "model") and isinstance(first.get("parts"), list)


def _checkpoint(contents: list[Any], session: str, with_text: bool) -> Iterator[Record]:
    # Every call waits, under its own id when it has one: a response naming a waiting id
    # answers it; any other (no id, or an id no call carried: the CLI gives a response the id
    # it made up when the model's call had none) answers the oldest waiting call of its name.
    order = OrderPairing()
    called: set[str] = set()  # a second response to an answered call is not a result
    for content in contents:
        if not isinstance(content, dict):
            continue
        role = content.get("role")
        for part in items(content.get("parts")):
            if not isinstance(part, dict):
                continue
            call = part.get("functionCall")
            response = part.get("functionResponse")
            if isinstance(call, dict):
                name = call.get("name")
                tool = name if isinstance(name, str) and name else "unknown"
                arguments = arguments_of(call.get("args"))
                call_id = call.get("id")
                if isinstance(call_id, str) and call_id:
                    called.add(call_id)
                    order.expect(session, call_id, tool)
                    yield CallRecord(session, call_id, tool, arguments)
                else:
                    yield order.call(session, tool, arguments)
                if with_text:
                    yield call_text(session, tool, arguments)
            elif isinstance(response, dict):
                text, failed = _parts_result([part])
                response_id = response.get("id")
                if isinstance(response_id, str) and order.settle(session, response_id):
                    yield ResultRecord(session, response_id, text, failed)
                    continue
                name = response.get("name")
                answered = order.answer(session, name if isinstance(name, str) else None)
                if answered is not None:
                    yield from order.flag(session)
                    yield ResultRecord(session, answered, text, failed)
                elif isinstance(response_id, str) and response_id not in called:
                    yield ResultRecord(session, response_id, text, failed)  # its call not kept
            elif with_text and isinstance(part.get("text"), str) and part["text"]:
                source = (
                    "thinking"
                    if part.get("thought") is True
                    else ("user" if role == "user" else "assistant")
                )
                yield TextRecord(session, source, part["text"])


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    if not document:
        yield from _jsonl(path, with_text, max_line_bytes)
        return
    value, bad = document_or_bad_line(path)
    if bad is not None:
        yield bad
        return
    contents = _contents(value)
    if contents is not None:
        yield from _checkpoint(contents, path.stem, with_text)
        return
    if not isinstance(value, dict):
        return
    session = value.get("sessionId")
    session = session if isinstance(session, str) and session else path.stem
    messages = [m for m in items(value.get("messages")) if isinstance(m, dict)]
    last = {m["id"]: index for index, m in enumerate(messages) if isinstance(m.get("id"), str)}
    for index, message in enumerate(messages):
        if isinstance(message.get("id"), str) and last[message["id"]] != index:
            continue
        yield from message_records(message, session, with_text)
