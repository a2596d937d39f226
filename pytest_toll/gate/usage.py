"""Cost per use for a ledger: its ``servers:`` weighed as the gate weighs them, joined with
the transcripts its ``transcripts:`` roots hold (:mod:`pytest_toll.definitions.usage`).

What a host pays for a tool on every request is what the report's fixed cost says that host
pays for the servers' definitions (:func:`pytest_toll.report.host_costs.costs`): all of a
tool's line where the host sends definitions eagerly, nothing where it defers them. The
hosts are the ledger's ``hosts:`` entries, or every row of the hosts table without them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import RuleOverrides
from pytest_toll.core.hosts import HOSTS
from pytest_toll.definitions.host_config import claude_defers, claude_tool_search
from pytest_toll.definitions.usage import (
    DEFAULT_SESSIONS,
    ServerUse,
    ToolUse,
    UsageReport,
    unused_findings,
)
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.results import weigh_server
from pytest_toll.report.host_costs import costs
from pytest_toll.transcripts.locations import default_roots
from pytest_toll.transcripts.scan import ReadOptions, cache_dir, read_summaries
from pytest_toll.transcripts.usage import (
    call_names,
    calls_of,
    display_name,
    newest_sessions,
    session_calls,
    sessions_in,
)

#: The ``transcripts:`` key that sets how many of the newest sessions E131 looks at.
SESSIONS_KEY = "unused_after_sessions"


def weigh_servers(
    servers: Mapping[str, Any], context: EntryContext
) -> tuple[dict[str, dict[str, int]], dict[str, str]]:
    """Each server's per-tool tokens (the bare claude line), weighed as its ``servers:``
    entry is; a server that cannot be weighed is set apart with the reason."""
    weighed: dict[str, dict[str, int]] = {}
    failed: dict[str, str] = {}
    for name, entry in servers.items():
        if not isinstance(entry, Mapping):
            continue
        try:
            report, _ = weigh_server(str(name), entry, context)
        except CouldNotJudge as error:
            failed[str(name)] = str(error)
            continue
        weighed[str(name)] = {row.name: int(row.tokens) for row in report.tools}
    return weighed, failed


def eager_hosts(
    hosts: Sequence[str], servers_total: int, window: int, root: Path | None = None
) -> dict[str, bool]:
    """Per host: whether it pays the servers' definitions on every request, read from the
    fixed cost's own figures (resident equals on use only for a host that sends them); for
    Claude Code, the repository's own tool search setting first, when it has one."""
    figures = costs(dict.fromkeys(hosts, 0), servers_total, window)
    eager = {
        host: servers_total > 0 and figure["resident"] == figure["on_use"]
        for host, figure in figures.items()
    }
    if root is not None and "claude-code" in eager:
        setting, _ = claude_tool_search(root)
        if setting is not None:
            eager["claude-code"] = servers_total > 0 and not claude_defers(
                setting, servers_total, window
            )
    return eager


def usage_report(
    servers: Mapping[str, Any],
    section: Mapping[str, Any],
    context: EntryContext,
    *,
    hosts: Sequence[str] = (),
    roots: Sequence[Path] = (),
    sessions: int | None = None,
    options: ReadOptions | None = None,
    settings: RuleOverrides | None = None,
) -> UsageReport:
    """Per tool of ``servers``: its cost per request per host and its calls in the newest
    sessions under ``roots`` (else the section's roots, else the agents' folders); E131."""
    window = int(sessions or section.get(SESSIONS_KEY) or DEFAULT_SESSIONS)
    chosen_hosts = list(hosts) or list(HOSTS)
    chosen_roots = list(roots) or [
        context.resolve(str(root)) for root in section.get("roots") or ()
    ]
    options = options or ReadOptions()
    if options.cache is None:
        options = replace(options, cache=cache_dir())
    summaries = read_summaries(chosen_roots or default_roots(), options)
    files = session_calls(summaries)
    considered = newest_sessions(files, window)
    held = sessions_in(considered)
    weighed, failed = weigh_servers(servers, context)
    total = sum(sum(tools.values()) for tools in weighed.values())
    eager = eager_hosts(chosen_hosts, total, context.window, context.root)
    rows = []
    server_rows = []
    for server, tools in weighed.items():
        names = frozenset().union(*(call_names(server, tool) for tool in tools))
        any_call = calls_of(considered, names)
        server_rows.append(
            ServerUse(
                server=server,
                per_request={
                    host: sum(tools.values()) if eager[host] else 0 for host in chosen_hosts
                },
                calls=any_call.calls,
                sessions=any_call.sessions,
            )
        )
        for tool, tokens in tools.items():
            calls = calls_of(considered, call_names(server, tool))
            rows.append(
                ToolUse(
                    server=server,
                    tool=tool,
                    tokens=tokens,
                    per_request={host: tokens if eager[host] else 0 for host in chosen_hosts},
                    calls=calls.calls,
                    sessions=calls.sessions,
                    name=display_name(server, tool),
                )
            )
    findings = unused_findings(rows, held, settings or context.settings({}, "transcripts"))
    return UsageReport(
        tools=tuple(rows),
        sessions=held,
        sessions_found=sessions_in(files),
        window=window,
        findings=tuple(findings),
        unmeasured=failed,
        servers=tuple(server_rows),
    )
