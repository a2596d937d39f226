"""Readers for agent transcripts: Claude Code JSONL and OpenAI Codex CLI rollouts.

Both formats become one stream of common records (a tool call, a tool result, a usage turn,
conversation text, a compaction boundary, an unreadable line). The readers stream a file line
by line and never hold more than one line; a line longer than ``max_line_bytes`` is skipped in
bounded chunks and counted, as is any line that is not a JSON object (malformed, truncated,
invalid UTF-8). Nothing here tokenizes: measurement belongs to
:mod:`pytest_toll.transcripts.summary`.

Known format facts the readers rely on:

- Claude Code writes one line per content block and repeats the message's ``usage`` on each,
  so usage is emitted once per ``message.id`` (else a turn is counted several times);
- tool results live in ``user`` lines as ``tool_result`` blocks that name their call by
  ``tool_use_id``; the ``toolUseResult`` copy beside them is ignored (it duplicates the text);
- a subagent writes its own file (``<session>/subagents/agent-*.jsonl``, ``agentId`` set);
  older versions interleave subagent lines in the main file with ``isSidechain: true``.
  Either way the subagent is its own context, so it becomes its own session key;
- Codex rollouts pair ``function_call``/``custom_tool_call``/``local_shell_call`` with their
  ``*_output`` on ``call_id``; usage comes from ``event_msg`` ``token_count`` whose
  ``input_tokens`` already include the cached part.
"""

from __future__ import annotations

import itertools
import json
import os
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.limits import MAX_TRANSCRIPT_LINE_BYTES
from pytest_toll.transcripts.images import Image, image_block
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    Record,
    ResultRecord,
    SessionRecord,
    TextRecord,
    UsageRecord,
)


def json_parser() -> tuple[Callable[[bytes], Any], str]:
    """orjson's ``loads`` (a dependency: 2-3× the standard module's speed on these lines), or
    the standard module's where orjson cannot be installed; and the parser's name."""
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency; this keeps a broken
        return json.loads, "json"  # install working, only slower
    return orjson.loads, "orjson"


CLAUDE = "claude"
CODEX = "codex"

# Codex tool names that run a shell command; their calls are shaped like Claude's Bash.
SHELL_TOOLS = frozenset(
    {"bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec"}
)


#: What a line that gives no record returns (most lines): shared, never appended to.
_NONE: list[SessionRecord] = []


# --- reading lines -----------------------------------------------------------------------


def iter_lines(
    path: Path,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    start: int = 0,
    end: int | None = None,
    buffer_bytes: int = 1 << 20,
) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` per non-blank line; bytes is None for an oversized line.

    With ``start``/``end`` (line starts, as :func:`segment_bounds` gives them) only the lines
    that start in that byte range are read, numbered from 1 within it."""
    with path.open("rb", buffering=buffer_bytes) as stream:
        if start:
            stream.seek(start)
        position = start
        number = 0
        while end is None or position < end:
            line = stream.readline(max_line_bytes)
            if not line:
                return
            position += len(line)
            number += 1
            if len(line) == max_line_bytes and not line.endswith(b"\n"):
                # Drain the rest of the line in bounded chunks; never hold it whole.
                while True:
                    chunk = stream.readline(max_line_bytes)
                    position += len(chunk)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                yield number, None
                continue
            if not line.isspace():  # (strip would copy every line)
                yield number, line


def segment_bounds(path: Path, size: int, segment_bytes: int) -> list[tuple[int, int]]:
    """The file cut into byte ranges of about ``segment_bytes``, each starting at a line start.

    Cut ``k`` is the first line start at or after ``k × segment_bytes``: it depends only on the
    bytes before it, so appending to a file leaves every earlier cut where it was."""
    cuts = [0]
    with path.open("rb") as stream:
        for nominal in range(segment_bytes, size, segment_bytes):
            stream.seek(nominal - 1)
            # The line that holds byte nominal - 1 ends at the next newline (bounded reads).
            while True:
                chunk = stream.readline(1 << 20)
                if not chunk or chunk.endswith(b"\n"):
                    break
            cut = stream.tell()
            if cut >= size:
                break
            if cut > cuts[-1]:
                cuts.append(cut)
    cuts.append(size)
    return list(itertools.pairwise(cuts))


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# --- content blocks ----------------------------------------------------------------------
# Parsed JSON objects are dicts: ``isinstance(x, dict)`` on the per-line path, where the
# Mapping ABC's check measured a tenth of a scan's reading time.


def _blocks_text(content: object) -> tuple[str, tuple[Image, ...], int]:
    """Text, images and the number of other structured blocks of a content value."""
    if isinstance(content, str):
        return content, (), 0
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return "", (), 0 if content is None else 1
    texts: list[str] = []
    images: list[Image] = []
    other = 0
    for block in content:
        if isinstance(block, str):
            texts.append(block)
            continue
        if not isinstance(block, dict):
            other += 1
            continue
        kind = block.get("type")
        text = block.get("text")
        if kind in ("image", "input_image"):
            images.append(image_block(block))
        elif isinstance(text, str):
            texts.append(text)
        else:
            other += 1
    return "\n".join(texts), tuple(images), other


# --- Claude Code -------------------------------------------------------------------------


@dataclass
class _ClaudeState:
    subagent: str | None = None
    seen_messages: set[str] = field(default_factory=set)
    seen_calls: set[str] = field(default_factory=set)


def _claude_session(line: Mapping[str, Any], fallback: str, subagent: str | None) -> str:
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
    return _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0


def _claude_records(
    line: Mapping[str, Any], state: _ClaudeState, fallback: str, with_text: bool
) -> list[SessionRecord]:
    """The records of one Claude Code line, their session worked out once they exist: most
    lines give none (progress, snapshots, a thinking block whose turn was already counted)."""
    records = _claude_line(line, state, with_text)
    if records:
        session = _claude_session(line, fallback, state.subagent)
        for record in records:
            record.session = session
    return records


#: The session a Claude Code record is made with, until _claude_records sets it.
_UNSET = ""


def _claude_line(
    line: Mapping[str, Any], state: _ClaudeState, with_text: bool
) -> list[SessionRecord]:
    kind = line.get("type")
    if kind == "system":
        if line.get("subtype") == "compact_boundary":
            return [BoundaryRecord(_UNSET)]
        return _NONE
    if kind != "assistant" and kind != "user":
        return _NONE
    message = line.get("message")
    if not isinstance(message, dict):
        return _NONE
    content = message.get("content")
    records: list[SessionRecord] = []
    if kind == "assistant":
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
                _int(usage.get("input_tokens")),
                _int(usage.get("output_tokens")),
                _int(usage.get("cache_read_input_tokens")),
                _int(usage.get("cache_creation_input_tokens")),
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
                    records.append(
                        TextRecord(_UNSET, "call", tool + json.dumps(arguments, ensure_ascii=False))
                    )
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
            text, images, other = _blocks_text(block.get("content"))
            records.append(
                ResultRecord(_UNSET, call_id, text, block.get("is_error") is True, images, other)
            )
        elif with_text:
            text, images, _ = _blocks_text([block])
            if text or images:
                records.append(TextRecord(_UNSET, "user", text, images))
    return records


# --- Codex CLI ---------------------------------------------------------------------------

_EXIT_CODE = re.compile(r"^(?:Exit code:|Process exited with code) (-?\d+)", re.MULTILINE)


@dataclass
class _CodexState:
    session: str
    model: str = "unknown"
    last_total: object = None


def _codex_arguments(value: object) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError:
            return {"input": value}
        return parsed if isinstance(parsed, Mapping) else {"input": value}
    return {}


def _codex_output(output: object) -> tuple[str, bool, tuple[Image, ...], int]:
    if isinstance(output, str) and output.startswith('{"output"'):
        # Older rollouts wrap a shell result: {"output": ..., "metadata": {"exit_code": N}}.
        try:
            wrapped = json.loads(output)
        except ValueError:
            wrapped = None
        if isinstance(wrapped, Mapping) and isinstance(wrapped.get("output"), str):
            metadata = wrapped.get("metadata")
            code = metadata.get("exit_code") if isinstance(metadata, Mapping) else None
            return wrapped["output"], isinstance(code, int) and code != 0, (), 0
    if isinstance(output, Mapping) and "content" in output and "type" not in output:
        output = output.get("content")
    text, images, other = _blocks_text(output)
    match = _EXIT_CODE.search(text[:400])
    failed = match is not None and match.group(1) != "0"
    return text, failed, images, other


def _codex_records(
    line: Mapping[str, Any], state: _CodexState, with_text: bool
) -> list[SessionRecord]:
    kind = line.get("type")
    payload = line.get("payload")
    if not isinstance(payload, dict):
        return _NONE
    item = payload.get("type")
    session = state.session
    if kind == "session_meta":
        if isinstance(payload.get("id"), str) and payload["id"]:
            state.session = payload["id"]
        return _NONE
    if kind == "turn_context":
        if isinstance(payload.get("model"), str):
            state.model = payload["model"]
        return _NONE
    if kind == "compacted" or (kind == "event_msg" and item == "context_compacted"):
        return [BoundaryRecord(session)]
    if kind == "event_msg" and item == "token_count":
        info = payload.get("info")
        if not isinstance(info, dict):
            return _NONE
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        # Codex re-emits the same count (e.g. after a rate-limit update): one turn, once.
        if not isinstance(last, dict) or total == state.last_total:
            return _NONE
        state.last_total = total
        cached = _int(last.get("cached_input_tokens"))
        input_tokens = max(_int(last.get("input_tokens")) - cached, 0)
        output_tokens = _int(last.get("output_tokens"))
        return [UsageRecord(session, state.model, input_tokens, output_tokens, cached, 0)]
    if kind != "response_item":
        return _NONE
    call_id = payload.get("call_id")
    if item in ("function_call", "custom_tool_call", "local_shell_call"):
        if not isinstance(call_id, str):
            return _NONE
        name = payload.get("name")
        tool = name if isinstance(name, str) and name else "local_shell"
        if item == "local_shell_call":
            action = payload.get("action")
            arguments: Mapping[str, Any] = (
                {"command": action.get("command")} if isinstance(action, Mapping) else {}
            )
        else:
            raw = payload.get("arguments") if item == "function_call" else payload.get("input")
            arguments = _codex_arguments(raw)
        call: SessionRecord = CallRecord(session, call_id, tool, arguments)
        if not with_text:
            return [call]
        return [call, TextRecord(session, "call", tool + json.dumps(arguments, ensure_ascii=False))]
    if item in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        if not isinstance(call_id, str):
            return _NONE
        text, failed, images, other = _codex_output(payload.get("output"))
        return [ResultRecord(session, call_id, text, failed, images, other)]
    if with_text and item == "message":
        role = payload.get("role")
        if role in ("user", "assistant"):
            text, images, _ = _blocks_text(payload.get("content"))
            if text or images:
                return [TextRecord(session, str(role), text, images)]
    elif with_text and item == "reasoning":
        text, _, _ = _blocks_text(payload.get("summary"))
        if text:
            return [TextRecord(session, "thinking", text)]
    return _NONE


_CODEX_KINDS = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def _is_codex(line: Mapping[str, Any]) -> bool:
    kind = line.get("type")
    return isinstance(kind, str) and kind in _CODEX_KINDS and "payload" in line


def read_records(
    path: Path,
    *,
    with_text: bool = False,
    max_line_bytes: int = MAX_TRANSCRIPT_LINE_BYTES,
    start: int = 0,
    end: int | None = None,
) -> Iterator[Record]:
    """Every record of one transcript file, in file order; each bad line a :class:`BadLine`.

    ``with_text`` adds the conversation text (for context and drift); scans leave it off. The
    format is decided per line, so a file of either kind (or a mix) reads correctly. ``start``/``end``
    read one segment (:func:`segment_bounds`), its lines numbered from 1 and its duplicate
    calls and turns dropped within it only.
    """
    loads, _ = json_parser()
    fallback = path.stem
    claude = _ClaudeState(subagent=path.stem if is_subagent_file(path) else None)
    codex = _CodexState(session=fallback)
    for number, raw in iter_lines(path, max_line_bytes, start, end):
        if raw is None:
            yield BadLine(number, f"line longer than {max_line_bytes:,} bytes, skipped")
            continue
        try:
            line = loads(raw)
        except ValueError as error:
            yield BadLine(number, _unreadable(error))
            continue
        if type(line) is not dict:
            yield BadLine(number, "not a JSON object")
            continue
        try:
            if _is_codex(line):
                records = _codex_records(line, codex, with_text)
            else:
                records = _claude_records(line, claude, fallback, with_text)
        except (TypeError, ValueError, AttributeError, KeyError) as error:
            # A record of an unexpected shape is one bad line, never a crashed scan.
            yield BadLine(number, f"unexpected record shape ({type(error).__name__})")
            continue
        if records:
            yield from records


def _unreadable(error: ValueError) -> str:
    said = str(error).lower()
    if isinstance(error, UnicodeDecodeError) or "utf-8" in said or "utf8" in said:
        return "invalid UTF-8"
    return "not JSON"


def transcript_format(path: Path) -> str:
    """``codex`` or ``claude``, judged from the first readable line."""
    loads, _ = json_parser()
    # A small buffer: only the first lines are wanted (a megabyte's buffer per file cost 0.14 s
    # over the 611 files of bench/scan.py's 1 GB history, by cProfile).
    for _, raw in iter_lines(path, buffer_bytes=1 << 16):
        if raw is None:
            continue
        try:
            line = loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict):
            return CODEX if _is_codex(line) else CLAUDE
    return CLAUDE


# --- where transcripts live --------------------------------------------------------------

ENVIRONMENT_VARIABLE = "TOLL_TRANSCRIPTS"
DEFAULT_ROOTS = ("~/.claude/projects", "~/.config/claude/projects", "~/.codex/sessions")


def default_roots(environ: Mapping[str, str] | None = None) -> list[Path]:
    """``TOLL_TRANSCRIPTS`` (an os.pathsep list) if set, else the agents' default folders."""
    environ = os.environ if environ is None else environ
    value = environ.get(ENVIRONMENT_VARIABLE, "")
    if value.strip():
        return [Path(part).expanduser() for part in value.split(os.pathsep) if part.strip()]
    return [Path(root).expanduser() for root in DEFAULT_ROOTS]


def discover(roots: list[Path]) -> list[Path]:
    """Every ``*.jsonl`` file under the roots (files are taken as given), deduplicated."""
    found: dict[str, Path] = {}
    for root in roots:
        if root.is_file():
            found.setdefault(str(root.resolve()), root)
        elif root.is_dir():
            for path in root.rglob("*.jsonl"):
                if path.is_file():
                    found.setdefault(str(path.resolve()), path)
    return sorted(found.values())


def is_subagent_file(path: Path) -> bool:
    return path.parent.name == "subagents" or path.name.startswith("agent-")
