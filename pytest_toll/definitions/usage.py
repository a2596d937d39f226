"""Cost per use: what each MCP tool costs on every request, per host, set beside how often
the transcripts call it, and rule E131 for what is paid and never used.

A tool a host sends eagerly is paid on every request of that host; a deferred one only when
the model looks it up. The per-host figures arrive here as plain numbers (the gate computes
them from the hosts table as the fixed cost does); this module only judges them:

- E131 (warn) a tool, or a whole server, that costs on every request of some host and was
  not called in the newest ``unused_after_sessions`` sessions found (default
  :data:`DEFAULT_SESSIONS`), with the saving per 1,000 requests. A warning by default: an
  unused tool may still be the one a rare task needs, so it never fails a gate unless a
  ledger raises it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_toll.core.findings import WARN, Finding, RuleOverrides

RULE_IDS = ("E131",)
#: How many of the newest sessions a tool must go uncalled in: enough sessions that an
#: unused tool is a pattern, few enough that the answer follows what a team does now.
DEFAULT_SESSIONS = 50
#: The savings are said per this many requests.
PER_REQUESTS = 1000


@dataclass(frozen=True)
class ToolUse:
    """One tool: its definition's tokens, what each host pays for it on every request, and
    the calls the transcripts made to it in the sessions considered."""

    server: str
    tool: str
    #: The bare claude line, as ``toll weigh`` and a ``servers:`` entry count it.
    tokens: int
    #: Host name -> tokens paid on every request (0: the host defers the tool).
    per_request: Mapping[str, int]
    calls: int
    sessions: int
    #: The name a transcript and a finding show (``mcp__notes__delete_note``).
    name: str = ""

    @property
    def paying_hosts(self) -> list[str]:
        return [host for host, tokens in self.per_request.items() if tokens > 0]

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "tool": self.tool,
            "name": self.name,
            "tokens": self.tokens,
            "per_request": dict(self.per_request),
            "calls": self.calls,
            "sessions": self.sessions,
            "saving_per_1000_requests": {
                host: tokens * PER_REQUESTS for host, tokens in self.per_request.items()
            },
        }


@dataclass(frozen=True)
class ServerUse:
    """One server: its tools' sum per request per host, and the calls to any of them."""

    server: str
    per_request: Mapping[str, int]
    calls: int
    sessions: int

    def as_dict(self) -> dict[str, Any]:
        return {
            "server": self.server,
            "per_request": dict(self.per_request),
            "calls": self.calls,
            "sessions": self.sessions,
        }


@dataclass(frozen=True)
class UsageReport:
    """Every tool of the servers measured, joined with the sessions considered."""

    tools: tuple[ToolUse, ...]
    #: Sessions considered (the newest ``window`` of those found) and all sessions found.
    sessions: int
    sessions_found: int
    window: int
    findings: tuple[Finding, ...] = ()
    #: Servers that could not be weighed, with why: left out, never counted as unused.
    unmeasured: Mapping[str, str] = field(default_factory=dict)
    servers: tuple[ServerUse, ...] = ()

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "sessions_found": self.sessions_found,
            "unused_after_sessions": self.window,
            "servers": [server.as_dict() for server in self.servers],
            "tools": [tool.as_dict() for tool in self.tools],
            "findings": [finding.as_dict() for finding in self.findings],
            "unmeasured": dict(self.unmeasured),
        }


def _hosts_words(per_request: Mapping[str, int]) -> str:
    paying = [host for host, tokens in per_request.items() if tokens > 0]
    deferring = [host for host, tokens in per_request.items() if tokens == 0]
    words = ", ".join(paying)
    if deferring:
        words += f"; deferred by {', '.join(deferring)}"
    return words


def _finding(
    settings: RuleOverrides,
    subject: str,
    per_request: Mapping[str, int],
    sessions: int,
    what: str,
) -> Finding | None:
    most = max(per_request.values())
    message = (
        f"costs {most:,} tok on every request ({_hosts_words(per_request)}); "
        f"0 calls in {sessions:,} session{'s' if sessions != 1 else ''}; "
        f"{what} saves {most * PER_REQUESTS:,} tok per {PER_REQUESTS:,} requests"
    )
    hint = "`toll usage --fix` proposes each host's own setting; --write writes it"
    return settings.finding("E131", WARN, subject, message, hint)


def unused_findings(
    tools: Sequence[ToolUse], sessions: int, settings: RuleOverrides
) -> list[Finding]:
    """E131 per server none of whose paid tools was called (one finding for the server),
    else per paid tool not called. Nothing without a session to judge by."""
    if sessions == 0:
        return []
    by_server: dict[str, list[ToolUse]] = {}
    for tool in tools:
        by_server.setdefault(tool.server, []).append(tool)
    found: list[Finding | None] = []
    for server, rows in by_server.items():
        paid = [row for row in rows if row.paying_hosts]
        unused = [row for row in paid if row.calls == 0]
        if not unused:
            continue
        if len(unused) == len(rows):
            # The whole server is dead weight: one finding, and the host's switch is the
            # server's (disable it), not a list of every tool.
            hosts = {host for row in rows for host in row.per_request}
            per_request = {
                host: sum(row.per_request.get(host, 0) for row in rows) for host in hosts
            }
            ordered = {host: per_request[host] for host in rows[0].per_request}
            found.append(
                _finding(settings, f"mcp__{server}", ordered, sessions, "disabling the server")
            )
            continue
        for row in unused:
            subject = row.name or f"mcp__{server}__{row.tool}"
            found.append(
                _finding(settings, subject, row.per_request, sessions, "leaving the tool out")
            )
    return [finding for finding in found if finding is not None]
