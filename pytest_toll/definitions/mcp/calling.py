"""``tools/call`` of the tools a ledger entry names, with sample arguments, and nothing else.

The same client as ``tools/list`` (:mod:`pytest_toll.definitions.mcp.listing`): the same
transports, handshake (with the 2026-07-28 fallback) and one deadline for the whole
connection. The tools are listed first, so a tool the server does not offer is an error
naming it, never a call; then each sample is one ``tools/call`` of the tool the entry named.
Calling a tool can act (write, send, delete): only a person writes which tool is called with
what, and nothing here ever calls a tool on its own.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_TIMEOUT
from pytest_toll.core.secrets import redact_url
from pytest_toll.definitions.mcp.http import HttpSession
from pytest_toll.definitions.mcp.listing import (
    CLIENT_INFO,
    HANDSHAKE_VERSIONS,
    LATEST_HANDSHAKE_VERSION,
    Noise,
    RpcError,
    Session,
    _list_pages,
    _modern_params,
    check_timeout,
    clip,
)
from pytest_toll.definitions.mcp.stdio import StdioSession


@dataclass(frozen=True)
class Sample:
    """One ``tools/call``: the arguments sent and the ``result`` object the server answered."""

    arguments: Mapping[str, Any]
    result: Mapping[str, Any]


@dataclass(frozen=True)
class Called:
    """A tool's definition as the server listed it, and each sample's result in order."""

    target: str
    tool: Mapping[str, Any]
    samples: tuple[Sample, ...]


def _handshake(open_session: Callable[[], Session]) -> tuple[Session, bool]:
    """An open session past ``initialize`` (or a fresh one in the 2026-07-28 style), and
    whether it speaks that style (every request then carries the ``_meta`` envelope)."""
    session = open_session()
    try:
        initialized = session.request(
            "initialize",
            {
                "protocolVersion": LATEST_HANDSHAKE_VERSION,
                "capabilities": {},
                "clientInfo": CLIENT_INFO,
            },
        )
    except RpcError:
        session.close()
        return open_session(), True
    except BaseException:
        session.close()
        raise
    version = initialized.get("protocolVersion") if isinstance(initialized, dict) else None
    if version not in HANDSHAKE_VERSIONS:
        session.close()
        raise CouldNotJudge(
            f"{session.target}: server negotiated protocol version {version!r}; "
            f"toll speaks {', '.join(HANDSHAKE_VERSIONS)}"
        )
    session.protocol_version = version
    session.notify("notifications/initialized")
    return session, False


def call_tools(
    open_session: Callable[[], Session], calls: Sequence[tuple[str, Sequence[Mapping[str, Any]]]]
) -> list[Called]:
    """List the tools, then call each named tool once per sample of its arguments, all on one
    connection; a tool the server does not list stops before anything is called."""
    session, modern = _handshake(open_session)
    try:
        listing = _list_pages(session, modern=modern, instructions=None, server_name=None)
        listed = {str(tool.get("name")): tool for tool in listing.tools}
        for tool, _ in calls:
            if tool not in listed:
                offered = ", ".join(sorted(listed)[:20])
                raise CouldNotJudge(
                    f"{session.target}: no tool named {clip(tool)} in its tools/list "
                    f"(it lists: {offered or 'none'}); nothing was called"
                )
        made: list[Called] = []
        for tool, samples in calls:
            answered: list[Sample] = []
            for arguments in samples:
                params: dict[str, Any] = {"name": tool, "arguments": dict(arguments)}
                result = session.request("tools/call", _modern_params(params) if modern else params)
                if not isinstance(result, dict):
                    raise CouldNotJudge(
                        f"{session.target}: tools/call {clip(tool)}: result is not an object: "
                        f"{clip(result)}"
                    )
                answered.append(Sample(dict(arguments), result))
            made.append(Called(session.target, listed[tool], tuple(answered)))
        return made
    finally:
        session.close()


def call_server(
    calls: Sequence[tuple[str, Sequence[Mapping[str, Any]]]],
    *,
    command: Sequence[str] | None = None,
    url: str | None = None,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[Called]:
    """Call each ``(tool, samples)`` of a stdio server (``command``) or an HTTP one (``url``)
    under one deadline of ``timeout`` seconds for the whole connection, as ``tools/list``."""
    check_timeout(timeout)
    deadline = time.monotonic() + timeout
    if command is not None:
        noise = Noise()

        def open_stdio() -> Session:
            return StdioSession(
                command, deadline=deadline, timeout=timeout, env=env, cwd=cwd, noise=noise
            )

        return call_tools(open_stdio, calls)
    if url is None:
        raise CouldNotJudge("a server needs a command or a url to call a tool")
    if not url.startswith(("http://", "https://")):
        raise CouldNotJudge(f"{redact_url(url)}: not an http:// or https:// URL")

    def open_http() -> Session:
        return HttpSession(url, deadline=deadline, timeout=timeout, headers=headers)

    return call_tools(open_http, calls)
