"""A Claude Code plugin as one entry whose parts are its components.

A plugin (``.claude-plugin/plugin.json`` in its folder; a marketplace's
``.claude-plugin/marketplace.json`` lists several, each by its ``source``) bundles skills
(``skills/*/SKILL.md``), subagents (``agents/``), commands (``commands/``), hooks
(``hooks/hooks.json``) and MCP servers (``.mcp.json``); ``plugin.json`` may name other paths
for commands, agents, hooks and servers. Installing it puts the listing of every skill,
subagent and command in every request: that is its always-on cost, one part per component,
each measured and judged by its own kind's rules (S1xx for skills, A1xx for subagents and
commands). Hooks run outside the model (their output is made at run time) and an MCP
server's tool list exists only when it runs: both are named, not counted — measure a
server with a ``servers:`` entry.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import Finding, RuleOverrides, worst_first
from pytest_toll.core.limits import (
    MAX_CONFIG_FILE_BYTES,
    MAX_FINDINGS_PER_FILE,
    MAX_MARKETPLACE_PLUGINS,
)
from pytest_toll.core.parse import load_json
from pytest_toll.core.textio import read_inside_root, resolves_inside
from pytest_toll.skills.measuring import find_skill_folders, measure_skills
from pytest_toll.surface.agents import AGENT, COMMAND, measure_delegates
from pytest_toll.surface.files import relative
from pytest_toll.surface.records import Component
from pytest_toll.surface.report import PluginReport

PLUGIN_FILE = ".claude-plugin/plugin.json"
MARKETPLACE_FILE = ".claude-plugin/marketplace.json"


def _json(path: Path, root: Path) -> Any:
    """A manifest or config of the plugin (or marketplace) at ``root``: read through the
    Files door (a regular file inside ``root``, under the config cap) and the Parsing door."""
    where = relative(path, root)
    return load_json(read_inside_root(path, root, MAX_CONFIG_FILE_BYTES), where)


def _paths(
    manifest: Mapping[str, Any], key: str, plugin: Path, default: str, unread: list[str]
) -> list[Path]:
    """The folders or files ``plugin.json`` names under ``key`` (string or list), else the
    default folder; a path that leaves the plugin is noted in ``unread``, never read."""
    value = manifest.get(key)
    given = [value] if isinstance(value, str) else value if isinstance(value, list) else []
    paths = [plugin / str(item) for item in given if isinstance(item, str)] or [plugin / default]
    inside = []
    for path in paths:
        if resolves_inside(path, plugin):
            inside.append(path)
        else:
            unread.append(f"{PLUGIN_FILE}: {key}: {relative(path, plugin)} is outside the plugin")
    return [p for p in inside if p.exists()]


def _named(findings: Iterable[Finding], prefix: str) -> list[Finding]:
    return [dataclasses.replace(f, subject=f"{prefix}/{f.subject or ''}") for f in findings]


def _keys_of(value: Any, plugin: Path, key: str, unread: list[str]) -> list[str]:
    """Names under ``key`` of an inline object, or of the JSON file a string names (inside
    the plugin: one outside it, or one that cannot be read, is noted in ``unread``)."""
    if isinstance(value, str):
        path = plugin / value
        try:
            value = _json(path, plugin) if os.path.lexists(path) else {}
        except CouldNotJudge as error:
            unread.append(f"{key}: {error}")
            value = {}
    inner = value.get(key, value) if isinstance(value, Mapping) else {}
    return sorted(str(name) for name in inner) if isinstance(inner, Mapping) else []


def measure_plugin(
    plugin: Path, *, name: str = "", settings: RuleOverrides | None = None
) -> PluginReport:
    """The plugin in folder ``plugin``: one component per skill, subagent and command."""
    plugin = Path(plugin)
    if not plugin.is_dir():
        raise CouldNotJudge(f"{plugin}: not a plugin folder")
    settings = settings or RuleOverrides()
    manifest_path = plugin / PLUGIN_FILE
    manifest = _json(manifest_path, plugin) if os.path.lexists(manifest_path) else {}
    if not isinstance(manifest, Mapping):
        raise CouldNotJudge(f"{manifest_path}: must be a JSON object")
    name = name or str(manifest.get("name") or plugin.name)
    components: list[Component] = []
    findings: list[Finding] = []
    unread: list[str] = []
    for folder in _paths(manifest, "skills", plugin, "skills", unread):
        try:
            find_skill_folders(folder)
        except CouldNotJudge:
            continue
        skills = measure_skills(folder, settings=settings.within("skills"))
        for skill in skills.skills:
            later = skill.body + skill.references_total
            components.append(
                Component(f"skills/{skill.name}", skill.metadata, later, path=str(skill.path))
            )
        findings += _named(skills.findings, "skills")
    for role, key in ((AGENT, "agents"), (COMMAND, "commands")):
        for folder in _paths(manifest, key, plugin, key, unread):
            try:
                report = measure_delegates(folder, role, root=plugin, settings=settings.within(key))
            except CouldNotJudge:
                continue  # an empty folder: no component
            for delegate in report.delegates:
                components.append(
                    Component(
                        f"{key}/{delegate.name}",
                        delegate.metadata,
                        delegate.body,
                        path=(plugin / delegate.path).as_posix(),
                    )
                )
            findings += _named(report.findings, key)
    hooks_value = manifest.get("hooks") or (
        "hooks/hooks.json" if os.path.lexists(plugin / "hooks/hooks.json") else None
    )
    mcp_value = manifest.get("mcpServers") or (
        ".mcp.json" if os.path.lexists(plugin / ".mcp.json") else None
    )
    return PluginReport(
        name=name,
        path=plugin.as_posix(),
        components=tuple(components),
        hooks=tuple(_keys_of(hooks_value, plugin, "hooks", unread)) if hooks_value else (),
        mcp_servers=(tuple(_keys_of(mcp_value, plugin, "mcpServers", unread)) if mcp_value else ()),
        findings=tuple(worst_first(findings)),
        unread=tuple(unread),
    )


def plugin_name(plugin: Path) -> str:
    """The name a host lists a plugin's parts under: its manifest's ``name``, else its
    folder's (``.claude-plugin/plugin.json`` is where Claude Code reads it)."""
    path = Path(plugin) / PLUGIN_FILE
    manifest = _json(path, Path(plugin)) if path.is_file() else {}
    named = manifest.get("name") if isinstance(manifest, Mapping) else None
    return named if isinstance(named, str) and named.strip() else Path(plugin).resolve().name


def repository_plugins(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """Every plugin of the repository once: the one at its root (named by its manifest) and
    each a marketplace lists here; a marketplace entry that is the root plugin itself (a
    ``./`` source) is the same plugin, not a second one."""
    listed, notes = marketplace_plugins(root)
    found: list[tuple[str, Path]] = []
    seen: set[str] = set()
    if (root / PLUGIN_FILE).is_file():
        found.append((plugin_name(root), root))
        seen.add(os.path.realpath(root))
    for name, folder in listed:
        if os.path.realpath(folder) not in seen:
            seen.add(os.path.realpath(folder))
            found.append((name, folder))
    return found, notes


def marketplace_plugins(root: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """The plugins a marketplace at ``root`` lists that live in the repository, by name,
    and a note for each it lists elsewhere (a git or GitHub source is not measured here)."""
    path = root / MARKETPLACE_FILE
    if not os.path.lexists(path):
        return [], []
    data = _json(path, root)
    listed = data.get("plugins") if isinstance(data, Mapping) else None
    if not isinstance(listed, list):
        raise CouldNotJudge(f"{MARKETPLACE_FILE}: has no plugins list")
    found: list[tuple[str, Path]] = []
    notes: list[str] = []
    targets: dict[str, str] = {}
    for index, plugin in enumerate(listed[:MAX_MARKETPLACE_PLUGINS]):
        if not isinstance(plugin, Mapping) or not isinstance(plugin.get("name"), str):
            notes.append(f"{MARKETPLACE_FILE}: plugins[{index}] has no name; skipped")
            continue
        source = plugin.get("source")
        if not isinstance(source, str):
            notes.append(f"{MARKETPLACE_FILE}: {plugin['name']} lives outside this repository")
            continue
        folder = Path(os.path.normpath(root / source))
        if not resolves_inside(folder, root) or not folder.is_dir():
            notes.append(f"{MARKETPLACE_FILE}: {plugin['name']}: {source} is not a folder here")
            continue
        target = os.path.realpath(folder)
        if target in targets:
            notes.append(
                f"{MARKETPLACE_FILE}: {plugin['name']}: the same folder as {targets[target]}; "
                "measured once"
            )
            continue
        targets[target] = plugin["name"]
        found.append((plugin["name"], folder))
    if len(listed) > MAX_MARKETPLACE_PLUGINS:
        rest = len(listed) - MAX_MARKETPLACE_PLUGINS
        notes.append(
            f"{MARKETPLACE_FILE}: lists {len(listed):,} plugins; the {rest:,} more past the "
            f"first {MAX_MARKETPLACE_PLUGINS:,} are not read"
        )
    return _capped_notes(found, notes)


def _capped_notes(
    found: list[tuple[str, Path]], notes: list[str]
) -> tuple[list[tuple[str, Path]], list[str]]:
    """At most ``MAX_FINDINGS_PER_FILE`` notes about one marketplace, the rest counted."""
    if len(notes) <= MAX_FINDINGS_PER_FILE:
        return found, notes
    rest = len(notes) - MAX_FINDINGS_PER_FILE
    return found, [*notes[:MAX_FINDINGS_PER_FILE], f"{MARKETPLACE_FILE}: and {rest:,} more notes"]
