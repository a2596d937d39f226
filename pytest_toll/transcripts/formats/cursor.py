"""Cursor agent transcripts: ``~/.cursor/projects/<slug>/agent-transcripts/*.jsonl`` (and
``<id>/<id>.jsonl``), one message a line: ``{"role", "message": {"content": [...]}}`` with
Anthropic-style blocks (``text``, ``tool_use``).

Cursor writes the calls but not, as a rule, what they returned: a call with no result is
counted with the outcome "result not recorded", never "unpaired" (nothing went missing; the
format does not keep it). Where a ``tool_result`` block does appear, it pairs by
``tool_use_id``. Calls without an id get one made from the session and their order.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from pytest_toll.transcripts.formats.base import Home, arguments_of, call_text, json_lines, text_of
from pytest_toll.transcripts.records import BadLine, CallRecord, Record, ResultRecord, TextRecord

NAME = "cursor"
TITLE = "Cursor"


def folders(home: Home) -> list[Path]:
    return [home.path / ".cursor" / "projects"]


def sniff(value: object) -> bool:
    if not isinstance(value, dict) or value.get("role") not in ("user", "assistant"):
        return False
    message = value.get("message")
    return isinstance(message, dict) and "content" in message and "type" not in value


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    session = path.stem
    made = 0
    for number_, line in json_lines(path, max_line_bytes):
        if isinstance(line, BadLine):
            yield line
            continue
        if not isinstance(line, dict):
            yield BadLine(number_, "not a JSON object")
            continue
        role = line.get("role")
        message = line.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else [content]
        for block in blocks:
            if isinstance(block, str):
                if with_text and block and role in ("user", "assistant"):
                    yield TextRecord(session, str(role), block)
                continue
            if not isinstance(block, dict):
                continue
            block_type = block.get("type")
            if block_type == "tool_use" and role == "assistant":
                made += 1
                call_id = block.get("id")
                call_id = call_id if isinstance(call_id, str) and call_id else f"{session}#{made}"
                name = block.get("name")
                tool = name if isinstance(name, str) and name else "unknown"
                arguments = arguments_of(block.get("input"))
                yield CallRecord(session, call_id, tool, arguments)
                if with_text:
                    yield call_text(session, tool, arguments)
            elif block_type == "tool_result" and isinstance(block.get("tool_use_id"), str):
                yield ResultRecord(
                    session,
                    block["tool_use_id"],
                    text_of(block.get("content")),
                    block.get("is_error") is True,
                )
            elif with_text and block_type == "text" and role in ("user", "assistant"):
                text = text_of(block.get("text"))
                if text:
                    yield TextRecord(session, str(role), text)
