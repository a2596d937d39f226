"""A starter ledger from what a repository already declares (``toll init``).

Three steps, kept apart so each can be tested on its own:

1. :func:`discover` reads the MCP server declarations agents use in a project
   (``.mcp.json``, ``.cursor/mcp.json``, ``.vscode/mcp.json``, a Claude Desktop config),
   the skills folders (``skills/``, ``.claude/skills/``, ``.codex/skills/`` …) and a
   committed transcripts folder — nothing outside the repository, nothing from the network;
2. :func:`measure` weighs each one with the same measurers ``pytest --toll`` uses, so the
   pins it writes are exactly what the first gate run measures;
3. :func:`render` writes the ledger text: pins as measured, budgets with headroom
   (:func:`budget_for`), a comment on each entry saying where it came from. A server that
   cannot be measured is written commented out with the reason — never silently dropped.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.gate import starter_surface
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import (
    SKILL_LEVELS,
    measure_servers_entry,
    measure_skills_entry,
    measure_transcripts_entry,
)
from pytest_toll.skills.measure import find_skill_folders
from pytest_toll.transcripts.decisions import SHAPES_TO_DECIDE, initial_settings
from pytest_toll.transcripts.scan import ReadOptions, scan

#: Project files that declare MCP servers, in the order their entries are taken (the first
#: declaration of a name wins). Each maps to the key its servers live under.
SERVER_FILES: tuple[tuple[str, str], ...] = (
    (".mcp.json", "mcpServers"),  # Claude Code's project servers
    (".cursor/mcp.json", "mcpServers"),  # Cursor
    (".vscode/mcp.json", "servers"),  # VS Code
    ("claude_desktop_config.json", "mcpServers"),  # Claude Desktop's shape, committed
    (".gemini/settings.json", "mcpServers"),  # Gemini CLI
)
#: Folders that hold Agent Skills in a project, one skill folder (with SKILL.md) below each.
SKILL_ROOTS = (
    "skills",
    ".claude/skills",
    ".codex/skills",
    ".agents/skills",
    ".github/skills",
    ".cursor/skills",
)
#: Committed transcript folders (Claude Code JSONL, Codex rollouts), relative to the root.
TRANSCRIPT_ROOTS = ("transcripts", ".transcripts", "agent-transcripts")

#: The budget is the pin times this, rounded up to the next BUDGET_STEP tokens.
HEADROOM = 1.25
BUDGET_STEP = 100

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")
_VSCODE_WORKSPACE = "${workspaceFolder}"


def budget_for(pin: int, headroom: float = HEADROOM) -> int:
    """``pin × headroom``, rounded up to the next hundred tokens (never below one step)."""
    return max(BUDGET_STEP, math.ceil(pin * headroom / BUDGET_STEP) * BUDGET_STEP)


@dataclass(frozen=True)
class DeclaredServer:
    """One server declaration: the ledger entry it becomes, or why it cannot be one."""

    name: str
    origin: str
    entry: Mapping[str, Any]
    #: Set when the declaration cannot become an entry (a transport the ledger lacks).
    unusable: str | None = None


@dataclass(frozen=True)
class Discovery:
    root: Path
    servers: tuple[DeclaredServer, ...] = ()
    #: (entry name, skill folder relative to root)
    skills: tuple[tuple[str, str], ...] = ()
    transcripts: str | None = None
    #: Places that were read and ignored, with why (a second declaration of a name …).
    notes: tuple[str, ...] = ()
    #: Memory files, subagents, commands and plugins (:mod:`starter_surface`).
    surface: starter_surface.SurfaceDiscovery = field(
        default_factory=starter_surface.SurfaceDiscovery
    )

    @property
    def empty(self) -> bool:
        return not (self.servers or self.skills or self.transcripts) and self.surface.empty


@dataclass
class Starter:
    """What :func:`measure` made of a discovery: entries with pins, or a reason each failed."""

    discovery: Discovery
    servers: list[tuple[DeclaredServer, dict[str, Any] | str]] = field(default_factory=list)
    skills: list[tuple[str, str, dict[str, Any] | str]] = field(default_factory=list)
    transcripts: dict[str, Any] | str | None = None
    #: Error-severity findings: each fails its entry in ``pytest --toll`` until dealt with.
    failing_findings: list[str] = field(default_factory=list)
    headroom: float = HEADROOM
    surface: starter_surface.SurfaceStarter = field(default_factory=starter_surface.SurfaceStarter)


# --- discovery --------------------------------------------------------------------------


def _read_json(path: Path, where: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{where}: cannot read: {error}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{where}:{error.lineno}: not JSON: {error.msg}") from None


def _workspace(value: str) -> str:
    """VS Code's ``${workspaceFolder}`` is the repository root, where the ledger lives."""
    if value.startswith(_VSCODE_WORKSPACE + "/"):
        return value[len(_VSCODE_WORKSPACE) + 1 :]
    return "." if value == _VSCODE_WORKSPACE else value


def server_entry(declaration: Mapping[str, Any], where: str) -> tuple[dict[str, Any], str | None]:
    """A ledger ``servers:`` entry from one declaration, and a reason when it cannot be used."""
    kind = str(declaration.get("type") or declaration.get("transport") or "")
    url = declaration.get("url") or declaration.get("serverUrl") or declaration.get("httpUrl")
    if declaration.get("command"):
        command = declaration["command"]
        argv = [command] if isinstance(command, str) else list(command)
        args = declaration.get("args") or []
        if not isinstance(args, list):
            raise UsageError(f"{where}.args: must be a list of strings")
        entry: dict[str, Any] = {"command": [_workspace(str(part)) for part in argv + args]}
        if isinstance(declaration.get("env"), Mapping) and declaration["env"]:
            entry["env"] = {str(k): str(v) for k, v in declaration["env"].items()}
        if isinstance(declaration.get("cwd"), str):
            entry["cwd"] = _workspace(declaration["cwd"])
        if declaration.get("envFile"):
            return entry, "its envFile is not read by the ledger; add the variables under env"
        return entry, None
    if isinstance(url, str):
        entry = {"url": url}
        if isinstance(declaration.get("headers"), Mapping) and declaration["headers"]:
            entry["headers"] = {str(k): str(v) for k, v in declaration["headers"].items()}
        if kind == "sse":
            return entry, "an SSE server; the ledger measures stdio and streamable-HTTP servers"
        return entry, None
    return {}, "neither a command nor a url"


def _discover_servers(root: Path) -> tuple[list[DeclaredServer], list[str]]:
    servers: dict[str, DeclaredServer] = {}
    notes: list[str] = []
    for relative, key in SERVER_FILES:
        path = root / relative
        if not path.is_file():
            continue
        data = _read_json(path, relative)
        declared = data.get(key) if isinstance(data, Mapping) else None
        if not isinstance(declared, Mapping):
            notes.append(f"{relative}: no {key} object; nothing taken from it")
            continue
        for name, declaration in declared.items():
            where = f"{relative}: {key}.{name}"
            if not isinstance(declaration, Mapping):
                notes.append(f"{where}: not an object; skipped")
                continue
            if name in servers:
                notes.append(f"{where}: also declared in {servers[name].origin}; the first is kept")
                continue
            entry, unusable = server_entry(declaration, where)
            servers[str(name)] = DeclaredServer(str(name), relative, entry, unusable)
    return list(servers.values()), notes


def _discover_skills(root: Path) -> list[tuple[str, str]]:
    # Imported here: the skills module pulls in the tokenizer's helpers and YAML.

    found: list[tuple[str, str]] = []
    names: set[str] = set()
    for relative in SKILL_ROOTS:
        folder = root / relative
        if not folder.is_dir():
            continue
        try:
            skill_folders = find_skill_folders(folder)
        except CouldNotJudge:
            continue
        for skill in skill_folders:
            name = skill.name
            if name in names:
                # The same skill name in two catalogues: keep both, told apart by catalogue.
                name = f"{relative.strip('.').split('/')[0]}-{skill.name}"
            names.add(name)
            found.append((name, skill.relative_to(root).as_posix()))
    return found


def _discover_transcripts(root: Path) -> str | None:
    for relative in TRANSCRIPT_ROOTS:
        folder = root / relative
        if folder.is_dir() and any(folder.rglob("*.jsonl")):
            return relative
    return None


def discover(root: Path) -> Discovery:
    """What the repository at ``root`` declares; reads files only, starts nothing."""
    servers, notes = _discover_servers(root)
    surface = starter_surface.discover(root)
    return Discovery(
        root=root,
        servers=tuple(servers),
        skills=tuple(_discover_skills(root)),
        transcripts=_discover_transcripts(root),
        notes=tuple(notes) + surface.notes,
        surface=surface,
    )


# --- measuring --------------------------------------------------------------------------


def _failing(label: str, findings: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        f"{label}: {finding.get('rule')} {finding.get('subject') or ''}: {finding.get('message')}"
        for finding in findings
        if finding.get("severity") == "error"
    ]


def _transcripts_entry(root: Path, relative: str) -> dict[str, Any]:
    report = scan([root / relative], ReadOptions())
    threshold, pin = initial_settings([row.ok_tokens for row in report.shapes], report.waste_ratio)
    heaviest = sorted(report.shapes, key=lambda row: -row.ok_tokens)[:SHAPES_TO_DECIDE]
    decisions = {
        row.shape: {"status": "watch", "reason": "written by toll init: decide replace/keep/watch"}
        for row in heaviest
        if row.ok_tokens > threshold
    }
    return {
        "roots": [relative],
        "decide_above_tokens": threshold,
        "waste_ratio_pin": pin,
        "decisions": decisions,
    }


def measure(discovery: Discovery, headroom: float = HEADROOM) -> Starter:
    """Measure every discovered source as ``pytest --toll`` will; failures become reasons."""
    context = EntryContext(root=discovery.root)
    starter = Starter(discovery, headroom=headroom)
    for server in discovery.servers:
        if server.unusable:
            starter.servers.append((server, server.unusable))
            continue
        try:
            measured = measure_servers_entry(server.name, server.entry, context)
        except CouldNotJudge as error:
            starter.servers.append((server, str(error)))
            continue
        entry = dict(server.entry)
        entry.update(budget=budget_for(measured.total, headroom), pin=measured.total)
        entry["tools"] = dict(measured.parts)
        starter.servers.append((server, entry))
        starter.failing_findings += _failing(f"servers.{server.name}", measured.findings)
    for name, path in discovery.skills:
        try:
            measured = measure_skills_entry(name, {"path": path}, context)
        except CouldNotJudge as error:
            starter.skills.append((name, path, str(error)))
            continue
        levels = {level: int(measured.parts[level]) for level in SKILL_LEVELS}
        entry = {"path": path, "budget": budget_for(measured.total, headroom), "pin": levels}
        starter.skills.append((name, path, entry))
        starter.failing_findings += _failing(f"skills.{name}", measured.findings)
    if discovery.transcripts is not None:
        try:
            entry = _transcripts_entry(discovery.root, discovery.transcripts)
            checked = measure_transcripts_entry("transcripts", entry, context)
            starter.transcripts = entry
            starter.failing_findings += _failing("transcripts", checked.findings)
        except CouldNotJudge as error:
            starter.transcripts = str(error)
    starter.surface = starter_surface.measure(
        discovery.surface, context, lambda pin: budget_for(pin, headroom)
    )
    for label, findings in starter.surface.findings:
        starter.failing_findings += _failing(label, findings)
    return starter


# --- rendering --------------------------------------------------------------------------


def _key(name: str) -> str:
    return name if _PLAIN_KEY.match(name) else json.dumps(name, ensure_ascii=False)


def _value(value: Any) -> str:
    """A YAML flow value; JSON strings, lists and objects are valid YAML."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(str(k))}: {_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    return json.dumps(value, ensure_ascii=False)


def _block(name: str, entry: Mapping[str, Any], indent: str = "  ") -> list[str]:
    lines = [f"{indent}{_key(name)}:"]
    for key, value in entry.items():
        if key == "pin" and isinstance(value, Mapping) and len(value) > 3:
            lines.append(f"{indent}  pin:            # machine: measured by toll init, per part")
            lines += [f"{indent}    {_key(str(part))}: {tokens}" for part, tokens in value.items()]
            continue
        if key == "tools" and isinstance(value, Mapping) and value:
            lines.append(f"{indent}  tools:          # machine: per-tool pins, shown in the diff")
            lines += [f"{indent}    {_key(str(tool))}: {tokens}" for tool, tokens in value.items()]
            continue
        comment = {
            "budget": "  # human ceiling: raise or lower it on purpose",
            "pin": "  # machine: measured by toll init; --toll-update lowers it",
        }.get(key, "")
        lines.append(f"{indent}  {key}: {_value(value)}{comment}")
    return lines


def _commented(name: str, entry: Mapping[str, Any], reason: str) -> list[str]:
    lines = [f"  # {_key(name)}: not measured — {reason}"]
    lines += ["  # " + line[2:] for line in _block(name, entry)]
    return lines


def render(starter: Starter) -> str:
    """The starter ledger's text: valid for ``pytest --toll`` as written."""
    percent = round((starter.headroom - 1) * 100)
    lines = [
        "# toll.yaml — written by `toll init`: what this repository's agent surface may cost,",
        "# in o200k tokens. `pytest --toll` measures every entry below and fails when one goes",
        "# over its budget or above its pin; `pytest --toll --toll-update` lowers pins that",
        "# improved. toll.yaml.example in pytest-toll documents every key.",
        "# Pins are what toll init measured. Budgets give headroom: pin ×",
        f"# {starter.headroom:g} (+{percent}%), rounded up to the next {BUDGET_STEP} tokens; set them to what",
        "# you intend.",
        "version: 1",
        "tokenizer: o200k_base",
    ]
    if starter.servers:
        lines += ["", "servers:"]
        for server, result in starter.servers:
            lines.append(f"  # from {server.origin}")
            if isinstance(result, str):
                lines += _commented(server.name, server.entry, result)
            else:
                lines += _block(server.name, result)
    if starter.skills:
        lines += [
            "",
            "# Each skill's three loading levels are pinned and gated on their own.",
            "skills:",
        ]
        for name, path, skill in starter.skills:
            if isinstance(skill, str):
                lines += _commented(name, {"path": path}, skill)
            else:
                lines += _block(name, skill)
    lines += _surface_lines(starter.surface)
    if isinstance(starter.transcripts, Mapping):
        section = starter.transcripts
        lines += [
            "",
            "# Tolls from the committed transcripts. The heaviest shapes are set to `watch`:",
            "# decide each (replace: {with: …} / keep / watch, with a reason).",
            "transcripts:",
            f"  roots: {_value(section['roots'])}",
            f"  decide_above_tokens: {section['decide_above_tokens']}",
            f"  waste_ratio_pin: {section['waste_ratio_pin']}   # machine: ratchets down",
        ]
        if section["decisions"]:
            lines.append("  decisions:")
            lines += [
                f"    {_key(shape)}: {_value(decision)}"
                for shape, decision in section["decisions"].items()
            ]
    elif isinstance(starter.transcripts, str):
        lines += [
            "",
            f"# transcripts: not measured — {starter.transcripts}",
            f"#   roots: [{starter.discovery.transcripts}]",
        ]
    return "\n".join(lines) + "\n"


def _surface_lines(surface: starter_surface.SurfaceStarter) -> list[str]:
    """The memory, agents, commands and plugins sections of the starter ledger."""
    lines: list[str] = []
    for kind in starter_surface.SURFACE_KINDS:
        rows = surface.entries.get(kind) or []
        if not rows:
            continue
        lines += ["", starter_surface.COMMENTS[kind], f"{kind}:"]
        for name, entry, result in rows:
            if isinstance(result, str):
                lines += _commented(name, entry, result)
            else:
                lines += _block(name, result)
    return lines
