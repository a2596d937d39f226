"""Claude Code sessions: ``~/.claude/projects/<project>/<session>.jsonl``, one line per
content block of a message, and each subagent's own file
(``<session>/subagents/agent-*.jsonl``).

Format facts the reader relies on:

- Claude Code writes one line per content block and repeats the message's ``usage`` on each,
  so usage is emitted once per ``message.id`` (else a turn is counted several times);
- tool results live in ``user`` lines as ``tool_result`` blocks that name their call by
  ``tool_use_id``; the ``toolUseResult`` copy beside them is ignored (it duplicates the text);
- a subagent writes its own file (``agentId`` set); older versions interleave subagent lines in
  the main file with ``isSidechain: true``. Either way the subagent is its own context, so it
  becomes its own session key.

Every line is read on its own (the only state is what was already counted), so a big file is
read in segments side by side; Claude Code claims no file by its content: it reads whatever
JSON object no other format claims.

Without conversation text (``toll scan``), a line is decoded typed (:class:`_Line`, the fields
read and no others: a user line's ``toolUseResult`` copy, a thinking block's signature, a
snapshot are skipped undecoded) and its records built by :func:`_typed_records`; the dict
reader (:func:`_line_records`) is the oracle, and reads any line the schema does not fit.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.jsonlines import EMPTY, Raw, Struct, Whole, decoder, subtree, typed_enabled
from pytest_toll.transcripts.formats.base import (
    NO_RECORDS,
    Home,
    blocks_text,
    call_text,
    number,
    object_lines,
    typed_object_lines,
)
from pytest_toll.transcripts.records import (
    BoundaryRecord,
    CallRecord,
    Record,
    ResultRecord,
    SessionRecord,
    TextRecord,
    UsageRecord,
)

NAME = "claude"
TITLE = "Claude Code"

#: The session a record is made with, until :meth:`_Lines.records` sets it.
_UNSET = ""


def folders(home: Home) -> list[Path]:
    return [home.path / ".claude" / "projects", home.config / "claude" / "projects"]


def is_subagent_file(path: Path) -> bool:
    return path.parent.name == "subagents" or path.name.startswith("agent-")


class _Lines:
    """What reading a file's lines remembers: its subagent, and the turns and calls already
    counted (Claude Code repeats them line after line)."""

    def __init__(self, path: Path, with_text: bool) -> None:
        self.fallback = path.stem
        self.subagent = path.stem if is_subagent_file(path) else None
        self.with_text = with_text
        self.seen_messages: set[str] = set()
        self.seen_calls: set[str] = set()

    def records(self, line: Mapping[str, Any]) -> list[SessionRecord]:
        """The records of one line, their session worked out once they exist: most lines give
        none (progress, snapshots, a thinking block whose turn was already counted)."""
        records = _line_records(line, self, self.with_text)
        if records:
            session = _session(line, self.fallback, self.subagent)
            for record in records:
                record.session = session
        return records

    def typed_records(self, line: _Line) -> list[SessionRecord]:
        """:meth:`records` over a typed line (:func:`_typed_records`)."""
        return _typed_records(line, self)


def read(
    path: Path,
    *,
    with_text: bool,
    max_line_bytes: int,
    document: bool,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Record]:
    """Every record of one file in file order, or of the lines that start in one byte range
    (``start``/``end``): its lines numbered from 1 and its repeated calls and turns dropped
    within it only."""
    lines = _Lines(path, with_text)
    if not with_text and typed_enabled():
        return typed_object_lines(
            path, _decode, lines.typed_records, lines.records, max_line_bytes, start, end
        )
    return object_lines(path, lines.records, max_line_bytes, start, end)


def _session(line: Mapping[str, Any], fallback: str, subagent: str | None) -> str:
    session = line.get("sessionId")
    session = session if isinstance(session, str) and session else fallback
    agent = line.get("agentId")
    if isinstance(agent, str) and agent:
        return session if session.endswith(agent) else f"{session}:agent-{agent}"
    if subagent is not None:
        # A line of a subagent file without agentId still belongs to the subagent's context.
        return session if session.endswith(subagent) else f"{session}:{subagent}"
    if line.get("isSidechain") is True:
        return f"{session}:sidechain"
    return session


def _one_hour_writes(usage: Mapping[str, Any]) -> int:
    split = usage.get("cache_creation")
    return number(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0


def _line_records(line: Mapping[str, Any], state: _Lines, with_text: bool) -> list[SessionRecord]:
    line_type = line.get("type")
    if line_type == "system":
        if line.get("subtype") == "compact_boundary":
            return [BoundaryRecord(_UNSET)]
        return NO_RECORDS
    if line_type != "assistant" and line_type != "user":
        return NO_RECORDS
    message = line.get("message")
    if not isinstance(message, dict):
        return NO_RECORDS
    content = message.get("content")
    records: list[SessionRecord] = []
    if line_type == "assistant":
        message_id = message.get("id")
        usage = message.get("usage")
        if isinstance(usage, dict) and not (
            isinstance(message_id, str) and message_id in state.seen_messages
        ):
            if isinstance(message_id, str):
                state.seen_messages.add(message_id)
            model = message.get("model")
            record = UsageRecord(
                _UNSET,
                model if isinstance(model, str) else "unknown",
                number(usage.get("input_tokens")),
                number(usage.get("output_tokens")),
                number(usage.get("cache_read_input_tokens")),
                number(usage.get("cache_creation_input_tokens")),
                _one_hour_writes(usage),
                message_id if isinstance(message_id, str) else None,
            )
            # Claude Code writes synthetic assistant messages (API errors, interruptions) with
            # an all-zero usage; they were never sent, and would fake a prompt of 0.
            if record.prompt or record.output:
                records.append(record)
        if isinstance(content, str):
            if with_text:
                records.append(TextRecord(_UNSET, "assistant", content))
            return records
        if not isinstance(content, list):
            return records
        cwd = line.get("cwd")
        for block in content:
            if not isinstance(block, dict):
                continue
            block_type = block.get("type")
            if block_type == "tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if not isinstance(call_id, str) or call_id in state.seen_calls:
                    continue
                state.seen_calls.add(call_id)
                arguments = block.get("input")
                arguments = arguments if isinstance(arguments, dict) else {}
                tool = name if isinstance(name, str) and name else "unknown"
                records.append(
                    CallRecord(
                        _UNSET, call_id, tool, arguments, cwd if isinstance(cwd, str) else None
                    )
                )
                if with_text:
                    records.append(call_text(_UNSET, tool, arguments))
            elif with_text and block_type == "text" and isinstance(block.get("text"), str):
                records.append(TextRecord(_UNSET, "assistant", block["text"]))
            elif with_text and block_type == "thinking" and isinstance(block.get("thinking"), str):
                records.append(TextRecord(_UNSET, "thinking", block["thinking"]))
        return records
    # user line: tool results and/or the user's own words
    if isinstance(content, str):
        if with_text:
            records.append(TextRecord(_UNSET, "user", content))
        return records
    if not isinstance(content, list):
        return records
    for block in content:
        if not isinstance(block, dict):
            continue
        block_type = block.get("type")
        if block_type == "tool_result":
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str):
                continue
            text, images, other = blocks_text(block.get("content"))
            records.append(
                ResultRecord(_UNSET, call_id, text, block.get("is_error") is True, images, other)
            )
        elif with_text:
            text, images, _ = blocks_text([block])
            if text or images:
                records.append(TextRecord(_UNSET, "user", text, images))
    return records


# --- the typed path ------------------------------------------------------------------------
# Each field typed as the dict reader accepts it; a value of another type makes the decoder
# give the line up to the dict reader. ``gc=False``: these hold no cycles.


class _CacheSplit(Struct, gc=False):
    ephemeral_1h_input_tokens: Whole | None = None


class _Usage(Struct, gc=False):
    input_tokens: Whole | None = None
    output_tokens: Whole | None = None
    cache_read_input_tokens: Whole | None = None
    cache_creation_input_tokens: Whole | None = None
    cache_creation: _CacheSplit | None = None


class _Block(Struct, gc=False):
    type: str | None = None
    id: str | None = None
    name: str | None = None
    tool_use_id: str | None = None
    is_error: bool | None = None
    #: a call's arguments and a result's content, decoded as the dict reader decodes them
    input: Raw = EMPTY
    content: Raw = EMPTY


class _Message(Struct, gc=False):
    id: str | None = None
    model: str | None = None
    usage: _Usage | None = None
    content: str | list[_Block] | None = None


class _Line(Struct, gc=False):
    type: str | None = None
    subtype: str | None = None
    sessionId: str | None = None
    agentId: str | None = None
    isSidechain: bool | None = None
    cwd: str | None = None
    message: _Message | None = None


_decode = decoder(_Line)


def _typed_session(line: _Line, fallback: str, subagent: str | None) -> str:
    session = line.sessionId or fallback
    agent = line.agentId
    if agent:
        return session if session.endswith(agent) else f"{session}:agent-{agent}"
    if subagent is not None:
        return session if session.endswith(subagent) else f"{session}:{subagent}"
    if line.isSidechain is True:
        return f"{session}:sidechain"
    return session


def _typed_records(line: _Line, state: _Lines) -> list[SessionRecord]:
    """:func:`_line_records` without text, over a typed line. Everything that can fail (a
    subtree's decoding, a count out of range) is done before the state changes, so a line
    given up to the dict reader leaves nothing behind."""
    line_type = line.type
    if line_type == "system":
        if line.subtype == "compact_boundary":
            return _in_session([BoundaryRecord(_UNSET)], line, state)
        return NO_RECORDS
    if line_type != "assistant" and line_type != "user":
        return NO_RECORDS
    message = line.message
    if message is None:
        return NO_RECORDS
    content = message.content
    if line_type == "user":
        if not isinstance(content, list):
            return NO_RECORDS
        results: list[SessionRecord] = []
        for block in content:
            if block.type == "tool_result" and block.tool_use_id is not None:
                text, images, other = blocks_text(subtree(block.content))
                results.append(
                    ResultRecord(
                        _UNSET, block.tool_use_id, text, block.is_error is True, images, other
                    )
                )
        return _in_session(results, line, state)
    usage_record = None
    message_id = message.id
    usage = message.usage
    if usage is not None and not (message_id is not None and message_id in state.seen_messages):
        split = usage.cache_creation
        usage_record = UsageRecord(
            _UNSET,
            message.model if message.model is not None else "unknown",
            number(usage.input_tokens),
            number(usage.output_tokens),
            number(usage.cache_read_input_tokens),
            number(usage.cache_creation_input_tokens),
            number(split.ephemeral_1h_input_tokens) if split is not None else 0,
            message_id,
        )
    calls: list[tuple[str, str, Any]] = []
    if isinstance(content, list):
        for block in content:
            if block.type == "tool_use":
                # Every call's arguments decoded before any is kept (see the docstring).
                arguments = subtree(block.input)
                if block.id is not None:
                    calls.append((block.id, block.name or "unknown", arguments))
    # No failure past this point: the state changes.
    records: list[SessionRecord] = []
    if usage_record is not None:
        if message_id is not None:
            state.seen_messages.add(message_id)
        if usage_record.prompt or usage_record.output:
            records.append(usage_record)
    cwd = line.cwd
    for call_id, tool, arguments in calls:
        if call_id in state.seen_calls:
            continue
        state.seen_calls.add(call_id)
        records.append(
            CallRecord(_UNSET, call_id, tool, arguments if isinstance(arguments, dict) else {}, cwd)
        )
    return _in_session(records, line, state)


def _in_session(records: list[SessionRecord], line: _Line, state: _Lines) -> list[SessionRecord]:
    """The records, their session set (worked out only for a line that has some)."""
    if records:
        session = _typed_session(line, state.fallback, state.subagent)
        for record in records:
            record.session = session
    return records
