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

import base64
import binascii
import json
import os
import re
import struct
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

try:  # orjson parses a line ~1.6× faster than json when installed; not required
    import orjson

    _loads: Any = orjson.loads
    _JSONError: type[Exception] = orjson.JSONDecodeError
except ImportError:  # optional: parsing is ~2% of a scan (bench/scan.py), json does too
    _loads = json.loads
    _JSONError = ValueError

#: Lines longer than this are counted as unreadable and skipped without being held whole.
MAX_LINE_BYTES = 16 * 1024 * 1024

CLAUDE = "claude"
CODEX = "codex"

# Codex tool names that run a shell command; their calls are shaped like Claude's Bash.
SHELL_TOOLS = frozenset(
    {"bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec"}
)


# --- records -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Image:
    """An image block; ``width``/``height`` are None when the header could not be read."""

    media_type: str
    width: int | None
    height: int | None


@dataclass(frozen=True)
class CallRecord:
    session: str
    call_id: str
    tool: str
    input: Mapping[str, Any]
    cwd: str | None = None


@dataclass(frozen=True)
class ResultRecord:
    session: str
    call_id: str
    text: str
    is_error: bool
    images: tuple[Image, ...] = ()
    #: structured blocks that are neither text nor image (a document, a tool reference, …)
    opaque_blocks: int = 0


@dataclass(frozen=True)
class UsageRecord:
    """One provider-reported turn: ``prompt`` is input + cache read + cache creation."""

    session: str
    model: str
    input: int
    output: int
    cache_read: int
    cache_creation: int
    #: the part of cache_creation written for one hour (priced higher than 5-minute writes)
    cache_creation_1h: int = 0
    #: the provider's message id, when the format has one (to deduplicate across files)
    message_id: str | None = None

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_creation


@dataclass(frozen=True)
class TextRecord:
    """Conversation text that enters the context: kind is user, assistant, thinking or call."""

    session: str
    kind: str
    text: str
    images: tuple[Image, ...] = ()


@dataclass(frozen=True)
class BoundaryRecord:
    """The context was compacted: what came before is no longer in it."""

    session: str


@dataclass(frozen=True)
class BadLine:
    line: int
    reason: str


Record = CallRecord | ResultRecord | UsageRecord | TextRecord | BoundaryRecord | BadLine


# --- reading lines -----------------------------------------------------------------------


def iter_lines(
    path: Path, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` per non-blank line; bytes is None for an oversized line."""
    with path.open("rb", buffering=1 << 20) as stream:
        number = 0
        while True:
            line = stream.readline(max_line_bytes)
            if not line:
                return
            number += 1
            if len(line) == max_line_bytes and not line.endswith(b"\n"):
                # Drain the rest of the line in bounded chunks; never hold it whole.
                while True:
                    chunk = stream.readline(max_line_bytes)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                yield number, None
                continue
            if line.strip():
                yield number, line


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


# --- images ------------------------------------------------------------------------------


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, WebP or JPEG header, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            width = 1 + int.from_bytes(data[24:27], "little")
            height = 1 + int.from_bytes(data[27:30], "little")
            return width, height
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        return None
    if data[:2] == b"\xff\xd8":
        index = 2
        while index + 9 < len(data):
            if data[index] != 0xFF:
                index += 1
                continue
            marker = data[index + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                index += 1 if marker == 0xFF else 2
                continue
            length = int.from_bytes(data[index + 2 : index + 4], "big")
            # SOF markers carry the frame size; C4 (DHT), C8 and CC are not frames.
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[index + 5 : index + 9])
                return width, height
            index += 2 + length
    return None


def _image_from_base64(media_type: str, data: object) -> Image:
    size = None
    if isinstance(data, str):
        # Headers sit at the start, but a JPEG's frame marker can follow a large EXIF block.
        head = data[: 256 * 1024]
        head = head[: len(head) - len(head) % 4]
        try:
            size = image_size(base64.b64decode(head, validate=False))
        except (binascii.Error, ValueError):
            size = None
    if size is None:
        return Image(media_type, None, None)
    return Image(media_type, size[0], size[1])


def _image_block(block: Mapping[str, Any]) -> Image:
    source = block.get("source")
    if isinstance(source, Mapping):
        return _image_from_base64(str(source.get("media_type", "")), source.get("data"))
    url = block.get("image_url")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        header, _, data = url.partition(",")
        return _image_from_base64(header[5:].split(";")[0], data)
    return Image("", None, None)


# --- content blocks ----------------------------------------------------------------------


def _blocks_text(content: object) -> tuple[str, tuple[Image, ...], int]:
    """Text, images and the number of other structured blocks of a content value."""
    if isinstance(content, str):
        return content, (), 0
    if isinstance(content, Mapping):
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
        if not isinstance(block, Mapping):
            other += 1
            continue
        kind = block.get("type")
        text = block.get("text")
        if kind in ("image", "input_image"):
            images.append(_image_block(block))
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
    return _int(split.get("ephemeral_1h_input_tokens")) if isinstance(split, Mapping) else 0


def _claude_records(
    line: Mapping[str, Any], state: _ClaudeState, fallback: str, with_text: bool
) -> Iterator[Record]:
    kind = line.get("type")
    session = _claude_session(line, fallback, state.subagent)
    if kind == "system":
        if line.get("subtype") == "compact_boundary":
            yield BoundaryRecord(session)
        return
    if kind not in ("assistant", "user"):
        return
    message = line.get("message")
    if not isinstance(message, Mapping):
        return
    content = message.get("content")
    if kind == "assistant":
        message_id = message.get("id")
        usage = message.get("usage")
        if isinstance(usage, Mapping) and not (
            isinstance(message_id, str) and message_id in state.seen_messages
        ):
            if isinstance(message_id, str):
                state.seen_messages.add(message_id)
            model = message.get("model")
            record = UsageRecord(
                session,
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
                yield record
        if isinstance(content, str):
            if with_text:
                yield TextRecord(session, "assistant", content)
            return
        if not isinstance(content, list):
            return
        cwd = line.get("cwd")
        for block in content:
            if not isinstance(block, Mapping):
                continue
            block_type = block.get("type")
            if block_type == "tool_use":
                call_id = block.get("id")
                name = block.get("name")
                if not isinstance(call_id, str) or call_id in state.seen_calls:
                    continue
                state.seen_calls.add(call_id)
                arguments = block.get("input")
                arguments = arguments if isinstance(arguments, Mapping) else {}
                tool = name if isinstance(name, str) and name else "unknown"
                yield CallRecord(
                    session, call_id, tool, arguments, cwd if isinstance(cwd, str) else None
                )
                if with_text:
                    yield TextRecord(
                        session, "call", tool + json.dumps(arguments, ensure_ascii=False)
                    )
            elif with_text and block_type == "text" and isinstance(block.get("text"), str):
                yield TextRecord(session, "assistant", block["text"])
            elif with_text and block_type == "thinking" and isinstance(block.get("thinking"), str):
                yield TextRecord(session, "thinking", block["thinking"])
        return
    # user line: tool results and/or the user's own words
    if isinstance(content, str):
        if with_text:
            yield TextRecord(session, "user", content)
        return
    if not isinstance(content, list):
        return
    for block in content:
        if not isinstance(block, Mapping):
            continue
        block_type = block.get("type")
        if block_type == "tool_result":
            call_id = block.get("tool_use_id")
            if not isinstance(call_id, str):
                continue
            text, images, other = _blocks_text(block.get("content"))
            yield ResultRecord(session, call_id, text, block.get("is_error") is True, images, other)
        elif with_text:
            text, images, _ = _blocks_text([block])
            if text or images:
                yield TextRecord(session, "user", text, images)


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
) -> Iterator[Record]:
    kind = line.get("type")
    payload = line.get("payload")
    if not isinstance(payload, Mapping):
        return
    item = payload.get("type")
    session = state.session
    if kind == "session_meta":
        if isinstance(payload.get("id"), str) and payload["id"]:
            state.session = payload["id"]
        return
    if kind == "turn_context":
        if isinstance(payload.get("model"), str):
            state.model = payload["model"]
        return
    if kind == "compacted" or (kind == "event_msg" and item == "context_compacted"):
        yield BoundaryRecord(session)
        return
    if kind == "event_msg" and item == "token_count":
        info = payload.get("info")
        if not isinstance(info, Mapping):
            return
        total = info.get("total_token_usage")
        last = info.get("last_token_usage")
        # Codex re-emits the same count (e.g. after a rate-limit update): one turn, once.
        if not isinstance(last, Mapping) or total == state.last_total:
            return
        state.last_total = total
        cached = _int(last.get("cached_input_tokens"))
        yield UsageRecord(
            session,
            state.model,
            max(_int(last.get("input_tokens")) - cached, 0),
            _int(last.get("output_tokens")),
            cached,
            0,
        )
        return
    if kind != "response_item":
        return
    call_id = payload.get("call_id")
    if item in ("function_call", "custom_tool_call", "local_shell_call"):
        if not isinstance(call_id, str):
            return
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
        yield CallRecord(session, call_id, tool, arguments)
        if with_text:
            yield TextRecord(session, "call", tool + json.dumps(arguments, ensure_ascii=False))
    elif item in ("function_call_output", "custom_tool_call_output", "local_shell_call_output"):
        if not isinstance(call_id, str):
            return
        text, failed, images, other = _codex_output(payload.get("output"))
        yield ResultRecord(session, call_id, text, failed, images, other)
    elif with_text and item == "message":
        role = payload.get("role")
        if role in ("user", "assistant"):
            text, images, _ = _blocks_text(payload.get("content"))
            if text or images:
                yield TextRecord(session, str(role), text, images)
    elif with_text and item == "reasoning":
        text, _, _ = _blocks_text(payload.get("summary"))
        if text:
            yield TextRecord(session, "thinking", text)


_CODEX_KINDS = frozenset(
    {"session_meta", "response_item", "event_msg", "turn_context", "compacted"}
)


def _is_codex(line: Mapping[str, Any]) -> bool:
    kind = line.get("type")
    return isinstance(kind, str) and kind in _CODEX_KINDS and "payload" in line


def read_records(
    path: Path, *, with_text: bool = False, max_line_bytes: int = MAX_LINE_BYTES
) -> Iterator[Record]:
    """Every record of one transcript file, in file order; each bad line a :class:`BadLine`.

    ``with_text`` adds the conversation text (for context and drift); scans leave it off.
    The format is decided per line, so a file of either kind (or a mix) reads correctly.
    """
    fallback = path.stem
    claude = _ClaudeState(subagent=path.stem if is_subagent_file(path) else None)
    codex = _CodexState(session=fallback)
    for number, raw in iter_lines(path, max_line_bytes):
        if raw is None:
            yield BadLine(number, f"line longer than {max_line_bytes:,} bytes, skipped")
            continue
        try:
            line = _loads(raw)
        except (_JSONError, ValueError) as error:
            reason = "invalid UTF-8" if isinstance(error, UnicodeDecodeError) else "not JSON"
            if "utf-8" in str(error).lower() or "utf8" in str(error).lower():
                reason = "invalid UTF-8"
            yield BadLine(number, reason)
            continue
        if not isinstance(line, dict):
            yield BadLine(number, "not a JSON object")
            continue
        try:
            if _is_codex(line):
                yield from _codex_records(line, codex, with_text)
            else:
                yield from _claude_records(line, claude, fallback, with_text)
        except (TypeError, ValueError, AttributeError, KeyError) as error:
            # A record of an unexpected shape is one bad line, never a crashed scan.
            yield BadLine(number, f"unexpected record shape ({type(error).__name__})")


def transcript_format(path: Path) -> str:
    """``codex`` or ``claude``, judged from the first readable line."""
    for _, raw in iter_lines(path):
        if raw is None:
            continue
        try:
            line = _loads(raw)
        except (_JSONError, ValueError):
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
