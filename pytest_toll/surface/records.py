"""What a measured piece of the surface is: memory files per host, subagents and commands
at their two levels, a plugin's components, and the reports that hold them.

Every count is the exact o200k count of the bare text a host puts in the context; the
host's framing around it (``Contents of …:``, a list bullet, a slash) is left out, as it is
for tool definitions, because it is the host's and not the repository's to gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_toll.core import tokens
from pytest_toll.core.findings import Finding

#: When a host puts a file in the context.
ALWAYS_ON = "always-on"
ON_DEMAND = "on-demand"


@dataclass(frozen=True)
class MemoryFile:
    """One memory file as a host loads it: its tokens, when, and how it was reached."""

    #: The file's path relative to the repository root (POSIX separators).
    path: str
    tokens: int
    loaded: str
    #: How the host reaches it: ``chain`` (root down to the working folder), ``import of
    #: CLAUDE.md``, ``rule``, ``nested`` (below the working folder) …
    via: str
    #: Bytes the host reads of it (a Codex chain cut at its byte limit reads fewer).
    bytes_read: int = 0
    bytes_total: int = 0

    @property
    def cut(self) -> bool:
        return self.bytes_read < self.bytes_total

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "path": self.path,
            "tokens": self.tokens,
            "loaded": self.loaded,
            "via": self.via,
        }
        if self.cut:
            data["bytes_read"] = self.bytes_read
            data["bytes_total"] = self.bytes_total
        return data


@dataclass(frozen=True)
class MemoryReport:
    """One host's memory for one working folder: its files and the findings about them."""

    host: str
    root: str
    cwd: str
    files: tuple[MemoryFile, ...]
    findings: tuple[Finding, ...] = ()
    method: str = tokens.O200K

    @property
    def always_on(self) -> tuple[MemoryFile, ...]:
        return tuple(file for file in self.files if file.loaded == ALWAYS_ON)

    @property
    def on_demand(self) -> tuple[MemoryFile, ...]:
        return tuple(file for file in self.files if file.loaded == ON_DEMAND)

    @property
    def total(self) -> int:
        """What every session of this host pays: the always-on files."""
        return sum(file.tokens for file in self.always_on)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "memory",
            "host": self.host,
            "cwd": self.cwd,
            "method": self.method,
            "total": self.total,
            "files": [file.as_dict() for file in self.files],
            "findings": [finding.as_dict() for finding in self.findings],
        }


@dataclass(frozen=True)
class Delegate:
    """A subagent or a command: listed to the model by its metadata, its body loaded when
    it is delegated to (a subagent, in its own context) or invoked (a command)."""

    #: ``agent`` or ``command``.
    role: str
    name: str
    path: str
    metadata: int
    body: int
    description: str = ""
    #: Where the description came from: ``frontmatter``, ``first line`` or ``""`` (none).
    description_source: str = ""
    #: Why the file's frontmatter (or TOML) could not be read.
    problem: str | None = None
    fields: Mapping[str, Any] = field(default_factory=dict, compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "metadata": self.metadata,
            "body": self.body,
        }


@dataclass(frozen=True)
class DelegatesReport:
    """Subagents or commands measured: each at its two levels, totals, findings."""

    role: str
    path: str
    delegates: tuple[Delegate, ...]
    findings: tuple[Finding, ...] = ()
    method: str = tokens.O200K

    @property
    def totals(self) -> dict[str, int]:
        return {
            "metadata": sum(delegate.metadata for delegate in self.delegates),
            "body": sum(delegate.body for delegate in self.delegates),
        }

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": f"{self.role}s",
            "method": self.method,
            self.role + "s": [delegate.as_dict() for delegate in self.delegates],
            "totals": self.totals,
            "findings": [finding.as_dict() for finding in self.findings],
        }


@dataclass(frozen=True)
class Component:
    """One component of a plugin: what it costs every session, and what it loads later."""

    #: ``skills/pdf``, ``agents/code-reviewer``, ``commands/commit``.
    name: str
    always_on: int
    later: int

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "always_on": self.always_on, "later": self.later}


@dataclass(frozen=True)
class PluginReport:
    """A Claude Code plugin measured as one entry whose parts are its components."""

    name: str
    path: str
    components: tuple[Component, ...]
    #: What the plugin brings that is not text in the context at session start, by name:
    #: hook commands (their output is made at run time) and MCP servers (measure each
    #: with a ``servers:`` entry: their tool list is only known when they run).
    hooks: tuple[str, ...] = ()
    mcp_servers: tuple[str, ...] = ()
    findings: tuple[Finding, ...] = ()
    method: str = tokens.O200K

    @property
    def total(self) -> int:
        return sum(component.always_on for component in self.components)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "plugins",
            "name": self.name,
            "path": self.path,
            "method": self.method,
            "total": self.total,
            "components": [component.as_dict() for component in self.components],
            "hooks": list(self.hooks),
            "mcp_servers": list(self.mcp_servers),
            "findings": [finding.as_dict() for finding in self.findings],
        }
