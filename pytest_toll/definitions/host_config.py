"""Each host's own way to leave out an MCP server or tool nobody calls: proposals, written
only when asked, each file rewritten atomically and re-read before it is.

- Claude Code: a server from ``.mcp.json`` is turned off by naming it in
  ``disabledMcpjsonServers`` (``.claude/settings.local.json``, the personal file). There is
  no per-tool switch that drops a definition (a ``permissions.deny`` rule blocks the call but
  the definition still loads: anthropics/claude-code issue 28669), and Claude Code defers
  MCP tools behind tool search by default (https://code.claude.com/docs/en/mcp), so an
  unused tool costs it nothing per request and nothing is proposed for it.
  Tool search itself is a setting (``env.ENABLE_TOOL_SEARCH`` in ``.claude/settings.json``
  or ``settings.local.json``: unset or ``true`` defers every MCP tool, ``auto`` / ``auto:N``
  only above 10% / N% of the window, ``false`` sends them all on every request;
  https://platform.claude.com/docs/en/agent-sdk/tool-search): where a repository's setting
  makes Claude Code send its tools eagerly, the proposal for an unused tool is to defer
  them (``true``), written in the file that set it.
- Codex: ``enabled = false`` or ``disabled_tools = [...]`` in the server's
  ``[mcp_servers.<name>]`` table of ``.codex/config.toml`` (openai/codex
  codex-rs/core/src/config/types.rs ``McpServerConfig`` @ 3b205895d9e8b9a399625c6446a2985d65d853e3:
  ``enabled``, ``enabled_tools``, ``disabled_tools``). A table needs its ``command`` or
  ``url`` (else "invalid transport"), so a key is only added to a table that exists.
- Gemini CLI: ``excludeTools`` in the server's ``mcpServers`` entry of
  ``.gemini/settings.json``, or the server's name in ``mcp.excluded`` (@google/gemini-cli-core
  0.61.0, Apache-2.0: dist/src/tools/mcp-client.js ``isEnabled``; the CLI's
  ``canLoadServer`` reads ``mcp.excluded``).

A proposal states its file, the setting, and what it saves per request on its host. Only
what a proposal reports is changed; a file that does not parse is left alone.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.parse import load_json, load_toml
from pytest_toll.core.textio import read_text_inside_root, writable_inside, write_atomically

CLAUDE_SETTINGS = Path(".claude/settings.local.json")
#: Claude Code's settings files, the one that wins first (the personal file over the team's).
CLAUDE_SETTINGS_FILES = (CLAUDE_SETTINGS, Path(".claude/settings.json"))
TOOL_SEARCH = "ENABLE_TOOL_SEARCH"
#: ``auto``'s share of the window, above which Claude Code defers the tools.
TOOL_SEARCH_AUTO_SHARE = 0.10
CLAUDE_PROJECT_SERVERS = Path(".mcp.json")
CODEX_CONFIG = Path(".codex/config.toml")
GEMINI_SETTINGS = Path(".gemini/settings.json")


@dataclass(frozen=True)
class Proposal:
    """One change to one host's configuration, or (``text`` None) a note of why none."""

    host: str
    #: The file it changes, relative to the repository's root.
    path: Path
    #: The setting as a person would type it.
    setting: str
    #: Tokens it saves on every request of its host.
    saving: int
    #: The whole new text of the file (None: nothing to write, the setting is advice).
    text: str | None = None
    note: str = ""

    @property
    def writable(self) -> bool:
        return self.text is not None

    def as_dict(self) -> dict[str, Any]:
        return {
            "host": self.host,
            "path": self.path.as_posix(),
            "setting": self.setting,
            "saving_per_request": self.saving,
            "writable": self.writable,
            "note": self.note,
        }


def _json_file(root: Path, path: Path) -> dict[str, Any] | None:
    """The JSON object in ``root/path``; {} when the file is absent; None when it is there
    but not a JSON object (then nothing is proposed for it)."""
    full = root / path
    if not full.exists():
        return {}
    try:
        value = load_json(read_text_inside_root(full, root), str(path))
    except CouldNotJudge:
        return None
    return dict(value) if isinstance(value, Mapping) else None


def _json_text(value: Mapping[str, Any]) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def _claude(root: Path, server: str, saving: int) -> Proposal | None:
    declared = _json_file(root, CLAUDE_PROJECT_SERVERS) or {}
    if server not in (declared.get("mcpServers") or {}):
        return None  # only a project server has this switch
    settings = _json_file(root, CLAUDE_SETTINGS)
    setting = f'"disabledMcpjsonServers": ["{server}"]'
    if settings is None:
        return Proposal("claude-code", CLAUDE_SETTINGS, setting, saving, None, "not JSON: by hand")
    disabled = list(settings.get("disabledMcpjsonServers") or [])
    if server in disabled:
        return None
    changed = {**settings, "disabledMcpjsonServers": [*disabled, server]}
    note = "deferred by tool search already: saves its tools on use and the server's start"
    return Proposal("claude-code", CLAUDE_SETTINGS, setting, saving, _json_text(changed), note)


def claude_tool_search(root: Path) -> tuple[str | None, Path | None]:
    """The repository's ``ENABLE_TOOL_SEARCH`` for Claude Code and the file that sets it."""
    for path in CLAUDE_SETTINGS_FILES:
        settings = _json_file(root, path) or {}
        env = settings.get("env")
        if isinstance(env, Mapping) and isinstance(env.get(TOOL_SEARCH), str):
            return str(env[TOOL_SEARCH]).strip().lower(), path
    return None, None


def claude_defers(setting: str | None, servers_total: int, window: int) -> bool:
    """Whether Claude Code defers the servers' tools under ``setting`` (None: unset)."""
    if setting is None or setting == "true":
        return True
    if setting == "false":
        return False
    if setting == "auto" or setting.startswith("auto:"):
        share = TOOL_SEARCH_AUTO_SHARE
        if setting.startswith("auto:"):
            try:
                share = float(setting[5:]) / 100
            except ValueError:
                return True  # a value Claude Code would not read: its default
        return servers_total > share * window
    return True


def _claude_defer(root: Path, saving: int) -> Proposal | None:
    setting, path = claude_tool_search(root)
    if path is None:
        return None
    settings = _json_file(root, path)
    shown_setting = f'"env": {{"{TOOL_SEARCH}": "true"}}'
    note = f"was {setting!r}: defers every MCP tool behind tool search, these among them"
    if settings is None:
        return Proposal("claude-code", path, shown_setting, saving, None, "not JSON: by hand")
    changed = {**settings, "env": {**settings["env"], TOOL_SEARCH: "true"}}
    return Proposal("claude-code", path, shown_setting, saving, _json_text(changed), note)


def _toml_table(text: str, server: str) -> re.Match[str] | None:
    quoted = re.escape(server)
    header = rf'^\[mcp_servers\.(?:{quoted}|"{quoted}")\][ \t]*(?:#.*)?$'
    return re.search(header, text, re.MULTILINE)


def _codex(root: Path, server: str, tools: Sequence[str] | None, saving: int) -> Proposal:
    key, value = (
        ("enabled", "false") if tools is None else ("disabled_tools", json.dumps(list(tools)))
    )
    setting = f"[mcp_servers.{server}] {key} = {value}"
    full = root / CODEX_CONFIG
    text = read_text_inside_root(full, root) if full.is_file() else ""
    table = _toml_table(text, server)
    if table is None:
        note = f"{CODEX_CONFIG} has no [mcp_servers.{server}]: add the line where you declare it"
        return Proposal("codex", CODEX_CONFIG, setting, saving, None, note)
    body_end = re.compile(r"^\[", re.MULTILINE).search(text, table.end())
    body = text[table.end() : body_end.start() if body_end else len(text)]
    if re.search(rf"^[ \t]*{key}[ \t]*=", body, re.MULTILINE):
        note = f"the table sets {key} already: change it by hand"
        return Proposal("codex", CODEX_CONFIG, setting, saving, None, note)
    changed = f"{text[: table.end()]}\n{key} = {value}{text[table.end() :]}"
    try:
        parsed = load_toml(changed, str(CODEX_CONFIG))
    except CouldNotJudge:
        return Proposal("codex", CODEX_CONFIG, setting, saving, None, "the edit would not parse")
    expected = False if tools is None else list(tools)
    if (parsed.get("mcp_servers") or {}).get(server, {}).get(key) != expected:
        return Proposal("codex", CODEX_CONFIG, setting, saving, None, "the edit would not hold")
    return Proposal("codex", CODEX_CONFIG, setting, saving, changed)


def _gemini(root: Path, server: str, tools: Sequence[str] | None, saving: int) -> Proposal:
    settings = _json_file(root, GEMINI_SETTINGS)
    if tools is None:
        setting = f'"mcp": {{"excluded": ["{server}"]}}'
    else:
        setting = f'"mcpServers": {{"{server}": {{"excludeTools": {json.dumps(list(tools))}}}}}'
    if settings is None:
        return Proposal("gemini-cli", GEMINI_SETTINGS, setting, saving, None, "not JSON: by hand")
    if tools is None:
        mcp = dict(settings.get("mcp") or {})
        excluded = list(mcp.get("excluded") or [])
        if server in excluded:
            return Proposal("gemini-cli", GEMINI_SETTINGS, setting, 0, None, "excluded already")
        changed = {**settings, "mcp": {**mcp, "excluded": [*excluded, server]}}
        return Proposal("gemini-cli", GEMINI_SETTINGS, setting, saving, _json_text(changed))
    servers = dict(settings.get("mcpServers") or {})
    entry = servers.get(server)
    if not isinstance(entry, Mapping):
        note = f"{GEMINI_SETTINGS} does not declare {server}: add excludeTools where you do"
        return Proposal("gemini-cli", GEMINI_SETTINGS, setting, saving, None, note)
    excluded_tools = list(entry.get("excludeTools") or [])
    added = [tool for tool in tools if tool not in excluded_tools]
    servers[server] = {**entry, "excludeTools": [*excluded_tools, *added]}
    changed = {**settings, "mcpServers": servers}
    return Proposal("gemini-cli", GEMINI_SETTINGS, setting, saving, _json_text(changed))


def propose(
    root: Path,
    unused: Mapping[str, Sequence[str] | None],
    savings: Mapping[str, Mapping[str, int]],
) -> list[Proposal]:
    """Per server (None: the whole server is unused, else its unused tools), each host's
    proposal; ``savings`` is server -> host -> tokens per request it would save."""
    found: list[Proposal] = []
    for server, tools in unused.items():
        saved = savings.get(server, {})
        if saved.get("claude-code"):
            # Claude Code sends these eagerly only because the repository turned tool
            # search down: turning it back on is its own way to leave them out.
            deferral = _claude_defer(root, saved["claude-code"])
            if deferral is not None:
                found.append(deferral)
        if tools is None:
            claude = _claude(root, server, saved.get("claude-code", 0))
            if claude is not None:
                found.append(claude)
        if "codex" in saved:
            found.append(_codex(root, server, tools, saved["codex"]))
        if "gemini-cli" in saved:
            found.append(_gemini(root, server, tools, saved["gemini-cli"]))
    return _merged(found)


def _merged(proposals: Sequence[Proposal]) -> list[Proposal]:
    """Proposals for one file, each built from the file as it is, cannot all be written:
    the first one per file is kept writable; the others are kept as advice, to run again."""
    taken: set[Path] = set()
    merged = []
    for proposal in proposals:
        if proposal.writable and proposal.path in taken:
            proposal = Proposal(
                proposal.host,
                proposal.path,
                proposal.setting,
                proposal.saving,
                None,
                "another change to this file comes first: run again after --write",
            )
        if proposal.writable:
            taken.add(proposal.path)
        merged.append(proposal)
    return merged


def write_proposals(root: Path, proposals: Sequence[Proposal]) -> list[Path]:
    """Write every writable proposal (atomically) once every path is checked: a link on the
    way (``.codex`` -> elsewhere) would take a write out of the repository, and then nothing
    is written. The files written."""
    writable = [proposal for proposal in proposals if proposal.text is not None]
    targets = [writable_inside(root, proposal.path) for proposal in writable]
    for proposal, target in zip(writable, targets):
        assert proposal.text is not None
        target.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(target, proposal.text)
    return [proposal.path for proposal in writable]
