"""How often the transcripts call each MCP tool, session by session, newest first.

A host names an MCP server's tool in its own way before the model sees it, and a transcript
records that name: Claude Code and Codex (0.40 on) write ``mcp__<server>__<tool>``, earlier
Codex ``<server>__<tool>``, Gemini CLI ``mcp_<server>_<tool>``; each host replaces the
characters its API refuses with ``_``. :func:`call_names` gives every one of them, so a
call is counted whichever host made it. Counts come from the file summaries a scan already
makes (:mod:`pytest_toll.transcripts.summary`), each call once by its id: a resumed Claude
Code session copies earlier calls into its new file.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from pytest_toll.transcripts.summary import FileSummary

# Claude Code and Codex keep letters, digits, "_" and "-" (the Responses API's tool name
# pattern; codex-rs/core mcp_connection_manager.rs sanitize_responses_api_tool_name, which
# also turns "-" into "_"); Gemini CLI also keeps "." and ":" (gemini-cli-core 0.61.0
# dist/src/tools/mcp-tool.js generateValidName).
_CODEX_REFUSED = re.compile(r"[^A-Za-z0-9_]")
_CLAUDE_REFUSED = re.compile(r"[^A-Za-z0-9_-]")
_GEMINI_REFUSED = re.compile(r"[^A-Za-z0-9_.:-]")


#: The longest tool name Codex sends; a longer one keeps its head and ends in its sha1.
CODEX_MAX_NAME = 64


def _codex_cut(name: str) -> str:
    # codex-rs/core mcp_connection_manager.rs qualify_tools: past 64 characters, the name's
    # first 24 and the 40 hex digits of its sha1.
    if len(name) <= CODEX_MAX_NAME:
        return name
    digest = hashlib.sha1(name.encode("utf-8"), usedforsecurity=False).hexdigest()
    return name[: CODEX_MAX_NAME - len(digest)] + digest


def call_names(server: str, tool: str) -> frozenset[str]:
    """Every name a host gives ``tool`` of ``server`` in a transcript."""
    codex = {f"mcp__{server}__{tool}", _CODEX_REFUSED.sub("_", f"mcp__{server}__{tool}")}
    names = {
        *codex,
        *(_codex_cut(name) for name in codex),
        _CLAUDE_REFUSED.sub("_", f"mcp__{server}__{tool}"),
        f"{server}__{tool}",
        _GEMINI_REFUSED.sub("_", f"mcp_{server}_{tool}"),
    }
    return frozenset(names)


def display_name(server: str, tool: str) -> str:
    """The name a finding and a table show: Claude Code's and Codex's."""
    return f"mcp__{server}__{tool}"


@dataclass(frozen=True)
class SessionCalls:
    """One transcript file's sessions and the calls made in them, by tool name."""

    path: str
    #: The sessions' ids (a resumed Claude Code session's file holds the earlier one's too);
    #: a file that names none is its own session.
    sessions: frozenset[str]
    calls: Counter[str] = field(default_factory=Counter)


def session_calls(summaries: Iterable[FileSummary]) -> list[SessionCalls]:
    """Per file, in the order given (a scan's summaries come newest first): its sessions and
    its calls by tool name, a call another file already holds (by id) counted once."""
    seen: set[str] = set()
    found = []
    for summary in summaries:
        calls: Counter[str] = Counter()
        if summary.call_log:
            for call_id, shape, _outcome, _tokens in summary.call_log:
                if call_id and call_id in seen:
                    continue
                if call_id:
                    seen.add(call_id)
                calls[shape] += 1
        else:
            calls.update({shape: tally.calls for shape, tally in summary.shapes.items()})
        found.append(
            SessionCalls(summary.path, frozenset(summary.sessions or [summary.path]), calls)
        )
    return found


@dataclass(frozen=True)
class ToolCalls:
    """How often one tool was called in the sessions considered."""

    calls: int
    sessions: int


def sessions_in(files: Iterable[SessionCalls]) -> int:
    """How many sessions ``files`` hold between them, each id once."""
    return len(frozenset().union(*(file.sessions for file in files)))


def newest_sessions(files: Sequence[SessionCalls], count: int) -> list[SessionCalls]:
    """The newest files holding at least ``count`` sessions between them (all when fewer)."""
    chosen: list[SessionCalls] = []
    held: set[str] = set()
    for file in files:
        if len(held) >= count:
            break
        chosen.append(file)
        held |= file.sessions
    return chosen


def calls_of(files: Sequence[SessionCalls], names: frozenset[str]) -> ToolCalls:
    """The calls to a tool known by any of ``names``, and the sessions that made one."""
    calls = 0
    making = []
    for file in files:
        made = sum(file.calls.get(name, 0) for name in names)
        calls += made
        if made:
            making.append(file)
    return ToolCalls(calls, sessions_in(making))
