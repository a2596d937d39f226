"""One host's bill: what a session of that host pays on every request from the repository.

A host (a row of :mod:`pytest_toll.core.hosts`) loads its own memory files, lists its own
skills, subagents and commands, and (Claude Code) the parts of the repository's plugins,
each plugin once under its manifest's name. The bill is that host's sum and nothing of any
other host's: the fixed cost of a Claude Code session never holds Codex's AGENTS.md.

Each always-on item is one part, named by what it is (``memory/CLAUDE.md``,
``skills/pdf``, ``commands/git:commit``, ``plugins/superpowers/skills/brainstorm``), so a
``hosts:`` ledger entry pins each and a new one (a new skill, a new command) is growth from
zero that the gate names. What loads later (on-demand memory, bodies) is listed beside the
parts, never in them. MCP tool definitions are not here: their cost comes from the ledger's
``servers:`` entries, sent on every request or deferred as the host's row says.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import Finding, RuleOverrides
from pytest_toll.core.hosts import Host
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.surface import rules as surface_rules
from pytest_toll.surface.agents import AGENT, COMMAND, measure_delegates
from pytest_toll.surface.memory import CODEX_MAX_BYTES, MEMORY_PLACES, measure_memory
from pytest_toll.surface.plugins import measure_plugin, repository_plugins


@dataclass(frozen=True)
class HostBill:
    """What one host pays on every request from the repository, part by part."""

    host: Host
    #: Every always-on item: its part name and its tokens.
    parts: dict[str, int]
    #: What the host loads later (on-demand memory files), by part name.
    on_demand: dict[str, int]
    findings: tuple[Finding, ...] = ()
    #: Tokens past the host's byte cut (never read): pinned apart, never paid.
    past_cut: int = 0
    method: str = tokens.O200K

    @property
    def total(self) -> int:
        return sum(self.parts.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "host",
            "host": self.host.name,
            "versions": self.host.versions,
            "method": self.method,
            "total": self.total,
            "parts": dict(self.parts),
            "on_demand": dict(self.on_demand),
            "past_cut": self.past_cut,
            "mcp_tools": self.host.mcp_tools,
            "mcp_defer_share": self.host.mcp_defer_share,
            "findings": [finding.as_dict() for finding in self.findings],
        }


def has_files(root: Path, host: Host) -> bool:
    """Whether the repository holds anything the host loads (memory, skills, subagents,
    commands)."""
    files, folders = MEMORY_PLACES[host.memory]
    if any((root / name).is_file() for name in files):
        return True
    if any((root / top).is_dir() for top, _ in folders):
        return True
    listed = (*host.skill_folders, *host.agent_folders, *host.command_folders)
    return any((root / folder).is_dir() for folder in listed)


def _listed(fields: Mapping[str, Any] | None, host: Host) -> bool:
    key = host.command_unlisted_key
    return not (key and isinstance(fields, Mapping) and fields.get(key) is True)


def _listings(
    root: Path, host: Host, settings: RuleOverrides, window: int
) -> tuple[dict[str, int], list[Finding]]:
    parts: dict[str, int] = {}
    listed: list[tuple[str, str, int]] = []
    for folder in host.skill_folders:
        try:
            report = measure_skills(root / folder, settings=settings.within("skills"))
        except CouldNotJudge:
            continue  # no such folder, or no skill in it
        # A skill the model may not invoke (Claude Code's disable-model-invocation) is the
        # user's alone: its description is not listed.
        shown = [skill for skill in report.skills if _listed(skill.frontmatter, host)]
        parts.update({f"skills/{skill.name}": skill.metadata for skill in shown})
        listed += [(skill.name, skill.description, skill.metadata) for skill in shown]
    for role, key, folders in (
        (AGENT, "agents", host.agent_folders),
        (COMMAND, "commands", host.command_folders),
    ):
        for folder in folders:
            try:
                found = measure_delegates(root / folder, role, root=root)
            except CouldNotJudge:
                continue
            parts.update({f"{key}/{d.name}": d.metadata for d in found.delegates if d.listed})
    if host.lists_plugins:
        plugins, _ = repository_plugins(root)
        for plugin_name, plugin_folder in plugins:
            plugin = measure_plugin(plugin_folder, name=plugin_name, settings=settings)
            for component in plugin.components:
                parts[f"plugins/{plugin.name}/{component.name}"] = component.always_on
    share = host.listing_budget_share
    findings = surface_rules.listing_budget(
        settings,
        host.name,
        listed,
        budget=None if share is None else int(share * window),
        description_chars=host.listing_description_chars,
    )
    return parts, findings


def host_bill(
    root: Path,
    host: Host,
    *,
    cwd: Path | None = None,
    max_bytes: int = CODEX_MAX_BYTES,
    settings: RuleOverrides | None = None,
    window: int = DEFAULT_WINDOW,
) -> HostBill:
    """The bill of ``host`` for a session started in ``cwd`` of the repository at ``root``."""
    settings = settings or RuleOverrides()
    root = Path(root)
    parts: dict[str, int] = {}
    on_demand: dict[str, int] = {}
    findings: tuple[Finding, ...] = ()
    past_cut = 0
    files, folders = MEMORY_PLACES[host.memory]
    if any((root / name).is_file() for name in files) or any(
        (root / top).is_dir() for top, _ in folders
    ):
        memory = measure_memory(root, host.memory, cwd=cwd, max_bytes=max_bytes, settings=settings)
        parts.update({f"memory/{file.path}": file.tokens for file in memory.always_on})
        on_demand.update({f"memory/{file.path}": file.tokens for file in memory.on_demand})
        findings, past_cut = memory.findings, memory.past_cut
    listings, listing_findings = _listings(root, host, settings, window)
    parts.update(listings)
    return HostBill(host, parts, on_demand, (*findings, *listing_findings), past_cut)
