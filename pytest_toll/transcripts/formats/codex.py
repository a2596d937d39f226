"""OpenAI Codex CLI rollouts: ``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl`` (or under
``$CODEX_HOME``), one ``{"type", "payload"}`` item a line.

``function_call``/``custom_tool_call``/``local_shell_call`` pair with their ``*_output`` on
``call_id``; the session is named by ``session_meta`` and the model by ``turn_context``; usage
comes from ``event_msg`` ``token_count`` whose ``input_tokens`` already include the cached
part. A shell result says it failed by its exit code (a banner, or the older wrapped
``{"output", "metadata": {"exit_code"}}``).

Without conversation text (``toll scan``), a line is decoded typed (:class:`_Line`: the fields
read and no others, so reasoning's encrypted content and messages are skipped undecoded) and
its records built by :func:`_typed_records`; the dict reader (:func:`_line_records`) is the
oracle, and reads any line the schema does not fit.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.jsonlines import EMPTY, Raw, Struct, decoder, subtree, typed_enabled
from pytest_toll.core.parse import ParseError, load_json
from pytest_toll.transcripts.formats.base import (
    NO_RECORDS,
    Home,
    arguments_of,
    blocks_text,
    call_text,
    number,
    object_lines,
    typed_object_lines,
)
from pytest_toll.transcripts.images import Image
from pytest_toll.transcripts.records import (
    BoundaryRecord,
    CallRecord,
    Record,
    ResultRecord,
    SessionRecord,
    TextRecord,
    UsageRecord,
)

NAME = "codex"
TITLE = "Codex"

_LINE_TYPES = frozenset({"session_meta", "response_item", "event_msg", "turn_context", "compacted"})
_EXIT_CODE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)", re.MULTILINE)


def sniff(value: object) -> bool:
    if not isinstance(value, dict):
        return False
    line_type = value.get("type")
    return isinstance(line_type, str) and line_type in _LINE_TYPES and "payload" in value


def folders(home: Home) -> list[Path]:
    return [Path(home.environ.get("CODEX_HOME") or home.path / ".codex") / "sessions"]


class _Lines:
    """What reading a rollout remembers from line to line: the session (named by
    ``session_meta``), the model (``turn_context``) and the last token count."""

    def __init__(self, path: Path, with_text: bool) -> None:
        self.session = path.stem
        self.model = "unknown"
        self.last_total: object = None
        self.with_text = with_text

    def records(self, line: Mapping[str, Any]) -> list[SessionRecord]:
        return _line_records(line, self, self.with_text)

    def typed_records(self, line: _Line) -> list[SessionRecord]:
        return _typed_records(line, self)


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    lines = _Lines(path, with_text)
    if not with_text and typed_enabled():
        return typed_object_lines(path, _decode, lines.typed_records, lines.records, max_line_bytes)
    return object_lines(path, lines.records, max_line_bytes)


def _arguments(value: object) -> Mapping[str, Any]:
    # A JSON text (function_call) or free text (custom_tool_call); any other value has always
    # read as no arguments.
    return arguments_of(value) if isinstance(value, str | dict) else {}


def _output(output: object) -> tuple[str, bool, tuple[Image, ...], int]:
    if isinstance(output, str) and output.startswith('{"output"'):
        # Older rollouts wrap a shell result: {"output": ..., "metadata": {"exit_code": N}}.
        try:
            wrapped = load_json(output, "output")
        except ParseError:
            wrapped = None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            metadata = wrapped.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, dict) else None
            return wrapped["output"], isinstance(code, int) and code != 0, (), 0
    if isinstance(output, dict) and "content" in output and "type" not in output:
        output = output.get("content")
    text, images, other = blocks_text(output)
    match = _EXIT_CODE.search(text[:400])
    failed = match is not None and match.group(1) != "0"
    return text, failed, images, other


def _token_turn(info: object, state: _Lines, session: str) -> list[SessionRecord]:
    """The turn a ``token_count`` event's ``info`` reports, for both readers. Codex re-emits
    the same count (e.g. after a rate-limit update): one turn, once. The count is read before
    ``last_total`` moves, so a count out of range (a bad line) changes nothing."""
    if not isinstance(info, dict):
        return NO_RECORDS
    total = info.get("total_token_usage")
    last = info.get("last_token_usage")
    if not isinstance(last, dict) or total == state.last_total:
        return NO_RECORDS
    cached = number(last.get("cached_input_tokens"))
    input_tokens = max(number(last.get("input_tokens")) - cached, 0)
    output_tokens = number(last.get("output_tokens"))
    state.last_total = total
    return [UsageRecord(session, state.model, input_tokens, output_tokens, cached, 0)]


def _line_records(line: Mapping[str, Any], state: _Lines, with_text: bool) -> list[SessionRecord]:
    line_type = line.get("type")
    payload = line.get("payload")
    if not isinstance(payload, dict):
        return NO_RECORDS
    item = payload.get("type")
    session = state.session
    if line_type == "session_meta":
        if isinstance(payload.get("id"), str) and payload["id"]:
            state.session = payload["id"]
        return NO_RECORDS
    if line_type == "turn_context":
        if isinstance(payload.get("model"), str):
            state.model = payload["model"]
        return NO_RECORDS
    if line_type == "compacted" or (line_type == "event_msg" and item == "context_compacted"):
        return [BoundaryRecord(session)]
    if line_type == "event_msg" and item == "token_count":
        return _token_turn(payload.get("info"), state, session)
    if line_type != "response_item":
        return NO_RECORDS
    call_id = payload.get("call_id")
    if item in ("function_call", "custom_tool_call", "local_shell_call"):
        if not isinstance(call_id, str):
            return NO_RECORDS
        name = payload.get("name")
        tool = name if isinstance(name, str) and name else "local_shell"
        if item == "local_shell_call":
            action = payload.get("action")
            arguments: Mapping[str, Any] = (
                {"command": action.get("command")} if isinstance(action, dict) else {}
            )
        else:
            raw = payload.get("arguments") if item == "function_call" else payload.get("input")
            arguments = _arguments(raw)
        call: SessionRecord = CallRecord(session, call_id, tool, arguments)
        if not with_text:
            return [call]
        return [call, call_text(session, tool, arguments)]
    if item in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        if not isinstance(call_id, str):
            return NO_RECORDS
        text, failed, images, other = _output(payload.get("output"))
        return [ResultRecord(session, call_id, text, failed, images, other)]
    if with_text and item == "message":
        role = payload.get("role")
        if role in ("user", "assistant"):
            text, images, _ = blocks_text(payload.get("content"))
            if text or images:
                return [TextRecord(session, str(role), text, images)]
    elif with_text and item == "reasoning":
        text, _, _ = blocks_text(payload.get("summary"))
        if text:
            return [TextRecord(session, "thinking", text)]
    return NO_RECORDS


# --- the typed path ------------------------------------------------------------------------
# Each field typed as the dict reader accepts it; a value of another type makes the decoder
# give the line up to the dict reader.


class _Payload(Struct, gc=False):
    type: str | None = None
    id: str | None = None
    model: str | None = None
    call_id: str | None = None
    name: str | None = None
    #: values the dict reader takes whole, decoded as it decodes them
    arguments: Raw = EMPTY
    input: Raw = EMPTY
    action: Raw = EMPTY
    output: Raw = EMPTY
    info: Raw = EMPTY


class _Line(Struct, gc=False):
    type: str | None = None
    payload: _Payload | None = None


_decode = decoder(_Line)
_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call"})
_OUTPUTS = frozenset({"function_call_output", "custom_tool_call_output", "local_shell_call_output"})


def _typed_records(line: _Line, state: _Lines) -> list[SessionRecord]:
    """:func:`_line_records` without text, over a typed line; a line given up (a subtree
    that does not decode, a count out of range) has changed no state."""
    line_type = line.type
    payload = line.payload
    if payload is None:
        return NO_RECORDS
    item = payload.type
    session = state.session
    if line_type == "response_item":
        call_id = payload.call_id
        if item in _OUTPUTS:
            if call_id is None:
                return NO_RECORDS
            text, failed, images, other = _output(subtree(payload.output))
            return [ResultRecord(session, call_id, text, failed, images, other)]
        if item in _CALLS:
            if call_id is None:
                return NO_RECORDS
            tool = payload.name or "local_shell"
            if item == "local_shell_call":
                action = subtree(payload.action)
                arguments: Mapping[str, Any] = (
                    {"command": action.get("command")} if isinstance(action, dict) else {}
                )
            else:
                raw = payload.arguments if item == "function_call" else payload.input
                arguments = _arguments(subtree(raw))
            return [CallRecord(session, call_id, tool, arguments)]
        return NO_RECORDS
    if line_type == "session_meta":
        if payload.id:
            state.session = payload.id
        return NO_RECORDS
    if line_type == "turn_context":
        if payload.model is not None:
            state.model = payload.model
        return NO_RECORDS
    if line_type == "compacted" or (line_type == "event_msg" and item == "context_compacted"):
        return [BoundaryRecord(session)]
    if line_type == "event_msg" and item == "token_count":
        return _token_turn(subtree(payload.info), state, session)
    return NO_RECORDS
