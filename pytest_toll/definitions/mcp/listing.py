"""The MCP protocol flow, whatever the transport: handshake, ``tools/list`` through every page.

The handshake is tried first (``initialize`` offering 2025-11-25, accepting what the server
negotiates among the handshake revisions). A server that rejects ``initialize`` is asked
again on a fresh connection in the 2026-07-28 style: a bare ``tools/list`` carrying the
per-request ``_meta`` envelope. The transports (``stdio``, ``http``) open a ``Session``;
this module speaks through it and returns one ``Listing``.

Every fault is a ``CouldNotJudge`` naming the server.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_toll._version import __version__
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.inert import inert
from pytest_toll.core.limits import MAX_TIMEOUT
from pytest_toll.core.secrets import cut

LATEST_HANDSHAKE_VERSION = "2025-11-25"
#: Revisions reached through ``initialize``; ``tools/list`` means the same in all of them.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MODERN_VERSION = "2026-07-28"
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_INFO = {"name": "pytest-toll", "version": __version__}

#: A server that pages forever without repeating a cursor is still stopped here.
MAX_PAGES = 10_000
_NOISE_SAMPLES = 5

METHOD_NOT_FOUND = -32601


class RpcError(CouldNotJudge):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, message: str, code: int | None, rpc_message: str) -> None:
        super().__init__(message)
        self.code = code
        self.rpc_message = rpc_message


@dataclass
class Noise:
    """Lines on a stdio server's stdout that are not JSON-RPC (rule E116)."""

    count: int = 0
    samples: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.count += 1
        if len(self.samples) < _NOISE_SAMPLES:
            self.samples.append(cut(line, 200))


@dataclass(frozen=True)
class Listing:
    """What a server advertised: its tools elements (all pages, in order) and instructions."""

    target: str
    transport: str
    tools: tuple[Mapping[str, Any], ...]
    instructions: str | None
    protocol_version: str
    server_name: str | None
    pages: int
    noise_count: int = 0
    noise_samples: tuple[str, ...] = ()


class Session(Protocol):
    """One connection to a server; ``request`` returns the JSON-RPC ``result``.

    ``transport`` names it in the ``Listing`` (``stdio`` or ``http``); a stdio session also
    has a ``noise`` (its stdout lines that were not JSON-RPC).
    """

    target: str
    transport: str
    protocol_version: str | None

    def request(self, method: str, params: Mapping[str, Any] | None) -> Any: ...

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None: ...

    def close(self) -> None: ...


def _modern_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = {
        PROTOCOL_VERSION_META_KEY: MODERN_VERSION,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: CLIENT_INFO,
    }
    return {**(params or {}), "_meta": meta}


def client_capabilities(session: Session) -> dict[str, Any]:
    """What the handshake declares: ``roots`` where the session can answer ``roots/list``
    (stdio), as Claude Code and Gemini CLI declare it (``core/hosts.py``); a server that
    lists a tool only for a client with roots then lists what those hosts see."""
    return {"roots": {"listChanged": False}} if getattr(session, "answers_roots", False) else {}


def describe_rpc_error(error: object) -> tuple[int | None, str]:
    if isinstance(error, dict):
        code = error.get("code")
        return (code if isinstance(code, int) else None), inert(error.get("message", ""))
    return None, inert(error)


def list_tools(open_session: Callable[[], Session], *, modern_only: bool = False) -> Listing:
    """Handshake (or the 2026-07-28 fallback), then ``tools/list`` through every page."""
    session = open_session()
    try:
        if modern_only:
            return _list_pages(session, modern=True, instructions=None, server_name=None)
        try:
            initialized = session.request(
                "initialize",
                {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": client_capabilities(session),
                    "clientInfo": CLIENT_INFO,
                },
            )
        except RpcError as refused:
            # A 2026-07-28 server has no handshake: it refuses initialize (unknown method or
            # unsupported version). Ask again, bare, on a connection that never saw it.
            session.close()
            session = open_session()
            try:
                return _list_pages(session, modern=True, instructions=None, server_name=None)
            except RpcError as also:
                raise RpcError(
                    f"{also} (initialize was refused too: {refused.rpc_message})",
                    also.code,
                    also.rpc_message,
                ) from None
        if not isinstance(initialized, dict):
            raise CouldNotJudge(
                f"{session.target}: initialize result is not an object: {clip(initialized)}"
            )
        version = initialized.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise CouldNotJudge(
                f"{session.target}: server negotiated protocol version {version!r}; "
                f"toll speaks {', '.join(HANDSHAKE_VERSIONS)} and {MODERN_VERSION}"
            )
        session.protocol_version = version
        session.notify("notifications/initialized")
        instructions = initialized.get("instructions")
        info = initialized.get("serverInfo")
        name = info.get("name") if isinstance(info, dict) else None
        return _list_pages(
            session,
            modern=False,
            instructions=instructions if isinstance(instructions, str) else None,
            server_name=name if isinstance(name, str) else None,
        )
    finally:
        session.close()


def _list_pages(
    session: Session, *, modern: bool, instructions: str | None, server_name: str | None
) -> Listing:
    if modern:
        session.protocol_version = MODERN_VERSION
    tools: list[Mapping[str, Any]] = []
    seen_cursors: set[str] = set()
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        result = session.request("tools/list", _modern_params(params) if modern else params)
        pages += 1
        where = f"{session.target}: tools/list page {pages}"
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            raise CouldNotJudge(f"{where}: result is not a tools list: {clip(result)}")
        for index, element in enumerate(result["tools"]):
            if not isinstance(element, dict):
                raise CouldNotJudge(f"{where}: tools[{index}] is not an object: {clip(element)}")
        tools.extend(result["tools"])
        next_cursor = result.get("nextCursor")
        if next_cursor is None or next_cursor == "":
            break
        if not isinstance(next_cursor, str):
            raise CouldNotJudge(f"{where}: nextCursor must be a string, not {clip(next_cursor)}")
        if next_cursor in seen_cursors:
            raise CouldNotJudge(
                f"{where}: nextCursor {clip(next_cursor)} was already returned by an earlier "
                "page; the server loops on its cursor"
            )
        if pages >= MAX_PAGES:
            raise CouldNotJudge(f"{where}: still paging after {MAX_PAGES} pages; gave up")
        seen_cursors.add(next_cursor)
        cursor = next_cursor
    noise = getattr(session, "noise", None)
    return Listing(
        target=session.target,
        transport=session.transport,
        tools=tuple(tools),
        instructions=instructions,
        protocol_version=session.protocol_version or "",
        server_name=server_name,
        pages=pages,
        noise_count=noise.count if isinstance(noise, Noise) else 0,
        noise_samples=tuple(noise.samples) if isinstance(noise, Noise) else (),
    )


def clip(value: object, limit: int = 120) -> str:
    """A server's answer (or part of one) for a message: scrubbed, then cut, then inert."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return inert(cut(text, limit))


def check_timeout(timeout: float) -> None:
    """A usable deadline: positive, finite and at most ``MAX_TIMEOUT`` (``.nan``, ``.inf`` and
    ``1e300`` are usage errors, not measurements that never end)."""
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise UsageError(f"timeout must be a number of seconds, not {timeout!r}")
    if not 0 < timeout <= MAX_TIMEOUT:
        raise UsageError(
            f"timeout must be a positive number of seconds up to {MAX_TIMEOUT:g}, not {timeout}"
        )
