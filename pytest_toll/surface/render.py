"""The text of ``toll surface`` (and ``toll context --fresh``): a fresh session's rows, then
each host's memory files, subagents, commands and plugins with their findings."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_toll.core import tokens
from pytest_toll.core.findings import Finding
from pytest_toll.core.inert import shown
from pytest_toll.surface.bill import HostBill
from pytest_toll.surface.records import ALWAYS_ON
from pytest_toll.surface.report import DelegatesReport, MemoryReport, PluginReport

#: What a fresh session carries that is the host's own and not in the repository.
HOST_ROWS = ("system prompt", "built-in tools")
UNKNOWN = "the host's; not known (not guessed)"


@dataclass(frozen=True)
class Surface:
    """Everything ``toll surface`` measured in one repository."""

    root: str
    memory: tuple[MemoryReport, ...] = ()
    #: The skill metadata of each project skills folder (``.claude/skills``: 412).
    skills_metadata: Mapping[str, int] = field(default_factory=dict)
    agents: DelegatesReport | None = None
    commands: DelegatesReport | None = None
    plugins: tuple[PluginReport, ...] = ()
    notes: tuple[str, ...] = field(default=())
    #: Each host's bill: its own fixed cost, never summed with another host's.
    bills: tuple[HostBill, ...] = ()

    @property
    def findings(self) -> list[Finding]:
        found: list[Finding] = []
        for report in self.memory:
            found += report.findings
        for delegates in (self.agents, self.commands):
            if delegates is not None:
                found += delegates.findings
        for plugin in self.plugins:
            found += plugin.findings
        return found


#: Where each host keeps the subagents, commands and skills it lists (plugins are Claude
#: Code's). A host not named here lists none of them from the repository.
HOST_FOLDERS: dict[str, tuple[str, ...]] = {
    "claude": (".claude/",),
    "codex": (".codex/", ".agents/"),
}


def _listed(paths_and_tokens: Sequence[tuple[str, int]], host: str | None) -> int | None:
    """The tokens of what ``host`` lists of these (every one for no particular host)."""
    folders = HOST_FOLDERS.get(host or "", ()) if host is not None else ("",)
    kept = [n for path, n in paths_and_tokens if path.startswith(folders)] if folders else []
    return sum(kept) if kept else None


def fresh_rows(surface: Surface, host: MemoryReport | None) -> list[tuple[str, str]]:
    """A fresh session's rows for one host: what it pays before the first message."""
    name = host.host if host is not None else None
    rows = [(row, UNKNOWN) for row in HOST_ROWS]
    # ~/.claude/CLAUDE.md, ~/.codex/AGENTS.md …: outside the repository, different per user.
    rows.append(("user memory", "each user's own, outside the repository; not measured"))
    if host is not None:
        rows.append((f"memory files ({host.host})", f"{host.total:,}"))
    listed = {
        "skill metadata": _listed(list(surface.skills_metadata.items()), name),
        "subagent metadata": _listed(
            [(d.path, d.metadata) for d in surface.agents.delegates] if surface.agents else [],
            name,
        ),
        "command metadata": _listed(
            [(d.path, d.metadata) for d in surface.commands.delegates] if surface.commands else [],
            name,
        ),
    }
    rows += [(row, f"{tokens_:,}") for row, tokens_ in listed.items() if tokens_ is not None]
    if name in (None, "claude"):
        rows += [(f"plugin {plugin.name}", f"{plugin.total:,}") for plugin in surface.plugins]
    rows.append(("MCP tool definitions", "measure each server with toll weigh"))
    return rows


def _table(rows: Sequence[tuple[str, str]]) -> list[str]:
    width = max((len(name) for name, _ in rows), default=0)
    return [f"  {name.ljust(width)}  {value}" for name, value in rows]


def render_fresh(surface: Surface) -> str:
    """A fresh session's rows, per host that has memory here (one block when none has)."""
    out: list[str] = []
    for host in surface.memory or (None,):
        title = host.host if host is not None else "any host"
        out.append(f"a fresh session ({title}), o200k tokens before the first message:")
        out += _table(fresh_rows(surface, host))
    return "\n".join(out)


def _tools_note(bill: HostBill) -> str:
    if bill.host.mcp_tools == "eager":
        return "MCP tool definitions sent on every request: add each server's (toll weigh)"
    share = bill.host.mcp_defer_share
    auto = f"; in auto mode only above {share:.0%} of the window" if share else ""
    return f"MCP tool definitions deferred behind tool search, loaded on use{auto}"


def render_bills(bills: Sequence[HostBill]) -> list[str]:
    """Each host's fixed cost per request, one line each, then its parts by kind."""
    if not bills:
        return []
    out = ["fixed cost per request, per host (each host pays its own; never a sum of hosts):"]
    for bill in bills:
        kinds: dict[str, int] = {}
        for part, counted in bill.parts.items():
            kind = part.split("/", 1)[0]
            kinds[kind] = kinds.get(kind, 0) + counted
        split = " + ".join(f"{kind} {counted:,}" for kind, counted in kinds.items())
        out.append(f"  {bill.host.name}: {bill.total:,} tok ({split or 'nothing'})")
        out.append(f"    {_tools_note(bill)}")
    return out


def render_text(surface: Surface) -> str:
    out = [render_fresh(surface), ""]
    if surface.bills:
        out += [*render_bills(surface.bills), ""]
    for report in surface.memory:
        out.append(
            f"memory ({report.host}, working folder {report.cwd}): {report.total:,} always-on"
        )
        for file in report.files:
            cut = f", {file.bytes_read:,} of {file.bytes_total:,} bytes read" if file.cut else ""
            out.append(f"  {file.tokens:>7,}  {file.loaded:<9}  {file.path}  ({file.via}{cut})")
    for delegates in (surface.agents, surface.commands):
        if delegates is None:
            continue
        out.append(
            f"{delegates.role}s: metadata {delegates.totals['metadata']:,} always-on, "
            f"body {delegates.totals['body']:,} on {'delegation' if delegates.role == 'agent' else 'invoke'}"
        )
        for delegate in delegates.delegates:
            out.append(
                f"  {delegate.metadata:>7,}  {delegate.body:>7,}  {delegate.name}  ({delegate.path})"
            )
    for plugin in surface.plugins:
        out.append(f"plugin {plugin.name} ({plugin.path}): {plugin.total:,} always-on")
        for component in plugin.components:
            out.append(
                f"  {component.always_on:>7,}  {component.later:>7,} later  {component.name}"
            )
        if plugin.hooks:
            out.append(f"  hooks (run outside the model, not counted): {', '.join(plugin.hooks)}")
        if plugin.mcp_servers:
            out.append(
                f"  MCP servers (measure with a servers: entry): {', '.join(plugin.mcp_servers)}"
            )
        out += [f"  not read: {shown(note)}" for note in plugin.unread]
    out.append(
        f"method: {tokens.O200K} (bare text; the host's framing left out); {ALWAYS_ON} "
        "rows are paid on every request"
    )
    out += [f"note: {note}" for note in surface.notes]
    findings = surface.findings
    if findings:
        out.append("")
        out += [str(finding) for finding in findings]
    return "\n".join(out)
