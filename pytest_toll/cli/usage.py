"""``toll usage``: what each MCP tool costs on every request, per host, beside how often the
transcripts call it; ``--fix`` proposes each host's own setting to leave out what nobody
calls, and ``--write`` writes those proposals.

    toll usage [--ledger toll.yaml] [--host H]... [--sessions N] [--root R]... [--json]
               [--fix [--write]]

The servers are the ledger's ``servers:`` entries, weighed as the gate weighs them; the
transcripts are its ``transcripts:`` roots (or ``--root``). Exit 0 measured (an unused tool
is a warning, E131), 1 when a ledger raises E131 to an error, 2 could not judge.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION
from pytest_toll.cli._transcripts import add_root_options, read_options, roots_of
from pytest_toll.cli.options import add_json_option, positive_whole_number
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import ERROR
from pytest_toll.core.hosts import HOSTS
from pytest_toll.core.inert import shown
from pytest_toll.definitions.host_config import Proposal, propose, write_proposals
from pytest_toll.definitions.usage import PER_REQUESTS, UsageReport
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.usage import usage_report


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger",
        metavar="PATH",
        default="toll.yaml",
        help="the toll.yaml whose servers: and transcripts: are joined (default ./toll.yaml)",
    )
    parser.add_argument(
        "--host",
        action="append",
        choices=list(HOSTS),
        default=None,
        help="a host to show (repeatable); default the ledger's hosts: entries, else every host",
    )
    parser.add_argument(
        "--sessions",
        type=positive_whole_number,
        default=None,
        metavar="N",
        help="how many of the newest sessions a tool must go uncalled in (default the "
        "ledger's transcripts.unused_after_sessions, else 50)",
    )
    add_root_options(parser, selection=False)
    add_json_option(parser, "the JSON report")
    parser.add_argument(
        "--fix",
        action="store_true",
        help="propose each host's setting that leaves out what is not called (a proposal: "
        "nothing is written without --write)",
    )
    parser.add_argument(
        "--write", action="store_true", help="with --fix: write the proposals that can be"
    )


def _unused(report: UsageReport) -> tuple[dict[str, list[str] | None], dict[str, dict[str, int]]]:
    """Per server: None when none of its tools was called, else its uncalled paid tools; and
    per server and host, the tokens per request leaving them out saves."""
    unused: dict[str, list[str] | None] = {}
    savings: dict[str, dict[str, int]] = {}
    servers = {tool.server for tool in report.tools}
    for server in sorted(servers):
        rows = [tool for tool in report.tools if tool.server == server]
        idle = [tool for tool in rows if tool.calls == 0]
        if not idle or report.sessions == 0:
            continue
        unused[server] = None if len(idle) == len(rows) else [tool.tool for tool in idle]
        savings[server] = {
            host: sum(tool.per_request.get(host, 0) for tool in idle)
            for host in rows[0].per_request
        }
    return unused, savings


def _table(report: UsageReport) -> list[str]:
    hosts = list(report.tools[0].per_request) if report.tools else []
    name_width = max(
        [len("tool"), *(len(tool.name) for tool in report.tools)]
        + [len(f"mcp__{server.server} (all)") for server in report.servers]
    )
    head = f"  {'tool':<{name_width}}  " + "  ".join(f"{host:>11}" for host in hosts)
    head += f"  {'calls':>6}  {'sessions':>8}  {'saving/1k req':>13}"
    lines = [head]
    servers = {server.server: server for server in report.servers}
    for tool in report.tools:
        server = servers.pop(tool.server, None)
        if server is not None:
            # The server's own row first: what all its tools cost, and any call to one.
            total = "  ".join(f"{server.per_request[host]:>11,}" for host in hosts)
            label = f"mcp__{tool.server} (all)"
            lines.append(
                f"  {shown(label):<{name_width}}  {total}  {server.calls:>6,}  "
                f"{server.sessions:>8,}"
            )
        cells = "  ".join(f"{tool.per_request[host]:>11,}" for host in hosts)
        most = max(tool.per_request.values(), default=0)
        saving = f"{most * PER_REQUESTS:,}" if tool.calls == 0 and most else "-"
        lines.append(
            f"  {shown(tool.name):<{name_width}}  {cells}  {tool.calls:>6,}  "
            f"{tool.sessions:>8,}  {saving:>13}"
        )
    return lines


def render_usage(report: UsageReport) -> str:
    lines = [
        f"toll usage: {report.sessions:,} session(s) considered "
        f"(the newest {report.window:,}; {report.sessions_found:,} found); "
        "tok per request by host (0: the host defers MCP tools)",
        *_table(report),
    ]
    for name, why in report.unmeasured.items():
        lines.append(f"  {shown(name)}: not weighed: {shown(why)}")
    for finding in report.findings:
        lines.append(str(finding))
    return "\n".join(lines)


def render_proposals(proposals: list[Proposal], written: list[Path] | None) -> str:
    if not proposals:
        return "toll usage --fix: nothing to propose"
    lines = ["toll usage --fix: proposals (nothing is written without --write)"]
    for proposal in proposals:
        state = "advice only" if not proposal.writable else "writable"
        if written is not None and proposal.path in written and proposal.writable:
            state = "written"
        note = f" — {proposal.note}" if proposal.note else ""
        lines.append(
            f"  {proposal.host}: {proposal.path.as_posix()}: {shown(proposal.setting)} "
            f"(saves {proposal.saving:,} tok per request; {state}){shown(note)}"
        )
    return "\n".join(lines)


def run(args: argparse.Namespace) -> int:
    ledger_file = Path(args.ledger)
    if not ledger_file.is_file():
        raise UsageError(f"--ledger {args.ledger}: no such ledger file")
    ledger = load_ledger(ledger_file, allow_duplicate_decisions=True)
    data: Mapping[str, Any] = ledger.data
    servers = data.get("servers") or {}
    if not servers:
        raise UsageError(f"{ledger_file}: no servers: to join with the transcripts")
    context = EntryContext(
        root=ledger_file.parent.resolve(),
        window=int(data.get("window") or EntryContext(ledger_file.parent).window),
        rules=data.get("rules") or {},
        limits=data.get("limits") or {},
        source=str(ledger_file),
    )
    hosts = args.host or list(data.get("hosts") or {}) or list(HOSTS)
    report = usage_report(
        servers,
        data.get("transcripts") or {},
        context,
        hosts=hosts,
        roots=roots_of(args) if args.root else (),
        sessions=args.sessions,
        options=read_options(args, selection=False, progress=not args.json),
    )
    proposals: list[Proposal] = []
    written: list[Path] | None = None
    if args.fix:
        unused, savings = _unused(report)
        proposals = propose(context.root, unused, savings)
        if args.write:
            written = write_proposals(context.root, proposals)
    if args.json:
        out = report.as_dict()
        if args.fix:
            out["proposals"] = [proposal.as_dict() for proposal in proposals]
            out["written"] = [path.as_posix() for path in written or []]
        print(json.dumps(out, indent=2, ensure_ascii=False))
    else:
        print(render_usage(report))
        if args.fix:
            print(render_proposals(proposals, written))
    failed = any(finding.severity == ERROR for finding in report.findings)
    return EXIT_VIOLATION if failed else EXIT_OK
