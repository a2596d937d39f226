"""Cline (and Roo Code) tasks: VS Code global storage ``…/tasks/<taskId>/`` holds
``api_conversation_history.json`` (the Anthropic messages sent) and ``ui_messages.json``
(what the panel showed).

- The API history pairs ``tool_use.id`` with ``tool_result.tool_use_id`` where a task's
  results are ``tool_result`` blocks. Older tasks wrote calls as XML in the assistant's text
  (``<read_file><path>…</path></read_file>``), and results as user text headed
  ``[read_file for '…'] Result:``; tasks with native ``tool_use`` calls get their results
  back in that same text. A text result answers the oldest waiting call of the tool it names
  (else the oldest waiting call), by order: the session is flagged so.
- ``ui_messages.json`` alone (no API history beside it): its ``tool`` entries (a JSON text
  with the tool and its output) and ``command`` entries (followed by their
  ``command_output``) are calls with their results, by order.
- Usage comes from ``ui_messages.json``'s ``api_req_started`` entries (``tokensIn``,
  ``tokensOut``, ``cacheReads``, ``cacheWrites``), read beside either file.
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
    document_or_bad_line,
    number,
    text_of,
)
from pytest_toll.transcripts.records import (
    CallRecord,
    Record,
    ResultRecord,
    TextRecord,
    UsageRecord,
)

NAME = "cline"
TITLE = "Cline/Roo Code"
#: VS Code and its forks whose global storage may hold Cline or Roo Code tasks.
VSCODE_VARIANTS = ("Code", "Code - Insiders", "VSCodium", "Cursor", "Windsurf")
#: The extensions whose tasks are Cline-format transcripts.
CLINE_EXTENSIONS = ("saoudrizwan.claude-dev", "rooveterinaryinc.roo-cline")
UI_MESSAGES = "ui_messages.json"
API_HISTORY = "api_conversation_history.json"
#: Cline's and Roo Code's XML tools (calls written in the assistant's text).
XML_TOOLS = (
    "execute_command", "read_file", "write_to_file", "replace_in_file", "apply_diff",
    "search_files", "list_files", "list_code_definition_names", "browser_action",
    "use_mcp_tool", "access_mcp_resource", "insert_content", "search_and_replace",
    "codebase_search", "fetch_instructions", "web_fetch",
)  # fmt: skip
_XML_CALL = re.compile(rf"<({'|'.join(XML_TOOLS)})>(.*?)</\1>", re.DOTALL)
_XML_PARAMETER = re.compile(r"<(\w+)>(.*?)</\1>", re.DOTALL)
#: A result in text: ``[tool for '<what>'] Result:``; what it names may hold brackets (a path
#: such as ``app/[id]/page.tsx``), so the head ends at the first ``] Result:``.
_RESULT_HEAD = re.compile(r"^\[(\w+)(?: for .*?)?\] Result:", re.DOTALL)
_FAILED = ("The tool execution failed", "<error>", "Error executing")


def _vscode_user_folders(home: Home) -> list[Path]:
    if home.platform == "darwin":
        base = home.path / "Library" / "Application Support"
    elif home.platform.startswith("win"):
        base = Path(home.environ.get("APPDATA") or home.path / "AppData" / "Roaming")
    else:
        base = home.config
    folders = [base / variant / "User" for variant in VSCODE_VARIANTS]
    folders += [
        home.path / ".vscode-server" / "data" / "User",
        home.path / ".cursor-server" / "data" / "User",
    ]
    return folders


def folders(home: Home) -> list[Path]:
    found = [home.path / ".cline" / "data" / "tasks"]
    for user in _vscode_user_folders(home):
        for extension in CLINE_EXTENSIONS:
            found.append(user / "globalStorage" / extension / "tasks")
    return found


def session_name(path: Path) -> str:
    """A task's folder names it (its files' names are the same for every task)."""
    return path.parent.name


def session_files(path: Path) -> list[Path]:
    """A task's file and its ui_messages.json, where its usage is read from."""
    return [path, path.parent / UI_MESSAGES]


def sniff(value: object) -> bool:
    """An API history (Anthropic messages) or a ui_messages list (``ts`` and say/ask)."""
    if not isinstance(value, list) or not value or not isinstance(value[0], dict):
        return False
    first = value[0]
    if isinstance(first.get("ts"), (int, float)) and first.get("type") in ("say", "ask"):
        return True
    return (
        first.get("role") in ("user", "assistant")
        and isinstance(first.get("content"), (list, str))
        and "message" not in first
    )


def is_ui_messages(value: list[Any]) -> bool:
    return bool(value) and isinstance(value[0], dict) and "ts" in value[0]


def _usage_of(entries: list[Any], session: str) -> Iterator[UsageRecord]:
    for entry in entries:
        if not isinstance(entry, dict) or entry.get("say") != "api_req_started":
            continue
        try:
            info = load_json(entry.get("text") or "", "api_req_started")
        except (TypeError, ParseError):
            continue
        if not isinstance(info, dict):
            continue
        record = UsageRecord(
            session,
            str(info.get("modelId") or info.get("model") or "unknown"),
            number(info.get("tokensIn")),
            number(info.get("tokensOut")),
            number(info.get("cacheReads")),
            number(info.get("cacheWrites")),
            0,
            f"{session}/{entry.get('ts')}",
        )
        if record.prompt or record.output:
            yield record


def _api_history(messages: list[Any], session: str, with_text: bool) -> Iterator[Record]:
    order = OrderPairing()
    for message in messages:
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        content = message.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        result: tuple[str, list[str]] | None = None  # an XML-era result being gathered
        for block in blocks if isinstance(blocks, list) else []:
            if not isinstance(block, dict):
                continue
            block_type = block.get("type")
            if block_type == "tool_use" and isinstance(block.get("id"), str):
                tool = str(block.get("name") or "unknown")
                arguments = arguments_of(block.get("input"))
                # It waits under its own id: a tool_result names it, a result in text
                # ("[tool for '…'] Result:") answers it by its tool's name and order.
                order.expect(session, block["id"], tool)
                yield CallRecord(session, block["id"], tool, arguments)
                if with_text:
                    yield call_text(session, tool, arguments)
            elif block_type == "tool_result" and isinstance(block.get("tool_use_id"), str):
                order.settle(session, block["tool_use_id"])
                text = text_of(block.get("content"))
                yield ResultRecord(
                    session, block["tool_use_id"], text, block.get("is_error") is True
                )
            elif block_type == "text" and isinstance(block.get("text"), str):
                text = block["text"]
                head = _RESULT_HEAD.match(text) if role == "user" else None
                if head is not None or (result is not None and not text.startswith("<environment")):
                    if head is not None:
                        yield from _xml_result(result, order, session)
                        result = (head.group(1), [text[head.end() :].strip()])
                    elif result is not None:
                        result[1].append(text)
                    continue
                yield from _xml_result(result, order, session)
                result = None
                if role == "assistant":
                    for call in _XML_CALL.finditer(text):
                        arguments = {
                            name: value.strip()
                            for name, value in _XML_PARAMETER.findall(call.group(2))
                        }
                        yield order.call(session, call.group(1), arguments)
                if with_text and text:
                    yield TextRecord(session, "assistant" if role == "assistant" else "user", text)
        yield from _xml_result(result, order, session)


def _xml_result(
    result: tuple[str, list[str]] | None, order: OrderPairing, session: str
) -> Iterator[Record]:
    if result is None:
        return
    tool, texts = result
    call_id = order.answer(session, tool) or order.answer(session)
    if call_id is None:
        return
    text = "\n".join(part for part in texts if part)
    yield from order.flag(session)
    yield ResultRecord(session, call_id, text, text.startswith(_FAILED))


def _ui_messages(entries: list[Any], session: str, with_text: bool) -> Iterator[Record]:
    order = OrderPairing()
    output: list[str] | None = None  # a command's output, gathered until the next entry

    def close() -> Iterator[Record]:
        nonlocal output
        if output is not None:
            call_id = order.answer(session)
            if call_id is not None:
                yield from order.flag(session)
                yield ResultRecord(session, call_id, "".join(output), False)
        output = None

    for entry in entries:
        if not isinstance(entry, dict):
            continue
        what = entry.get("ask") or entry.get("say")
        raw = entry.get("text")
        text = raw if isinstance(raw, str) else ""
        if what == "command_output":
            if output is not None:
                output.append(text)
            continue
        if what == "error" and output is not None:
            yield from close()
            continue
        yield from close()
        if what == "command" and text:
            arguments: Mapping[str, Any] = {"command": text}
            yield order.call(session, "execute_command", arguments)
            output = []
        elif what == "tool" and text:
            try:
                detail = load_json(text, "tool")
            except (TypeError, ParseError):
                continue
            if not isinstance(detail, dict):
                continue
            tool = str(detail.get("tool") or "unknown")
            arguments = {
                key: value for key, value in detail.items() if key not in ("tool", "content")
            }
            call = order.call(session, tool, arguments)
            yield call
            if with_text:
                yield call_text(session, tool, arguments)
            order.answer(session)
            yield from order.flag(session)
            yield ResultRecord(session, call.call_id, text_of(detail.get("content")), False)
        elif with_text and what in ("text", "completion_result", "user_feedback") and text:
            yield TextRecord(session, "user" if what == "user_feedback" else "assistant", text)
    yield from close()


def read_instead(path: Path) -> Path | None:
    """A task's ui_messages.json is read from its API history, where the task kept one."""
    return path.parent / API_HISTORY if path.name == UI_MESSAGES else None


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    value, bad = document_or_bad_line(path)
    if bad is not None:
        yield bad
        return
    if not isinstance(value, list):
        return
    session = path.parent.name
    if is_ui_messages(value):
        yield from _ui_messages(value, session, with_text)
        yield from _usage_of(value, session)
        return
    yield from _api_history(value, session, with_text)
    beside = path.parent / UI_MESSAGES
    if beside.is_file():
        entries, _ = document_or_bad_line(beside)
        if isinstance(entries, list):
            yield from _usage_of(entries, session)
