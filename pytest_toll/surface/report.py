"""What measuring the surface gives: one host's memory, the subagents or commands, a plugin.

Source -> records -> measurement: the readers (:mod:`pytest_toll.surface.memory`,
:mod:`pytest_toll.surface.agents`, :mod:`pytest_toll.surface.plugins`) turn a repository's
files into the records of :mod:`pytest_toll.surface.records` and gather them here with their
findings. ``as_dict()`` is each report's JSON.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_toll.core import tokens
from pytest_toll.core.findings import Finding
from pytest_toll.surface.records import ALWAYS_ON, ON_DEMAND, Component, Delegate, MemoryFile


@dataclass(frozen=True)
class MemoryReport:
    """One host's memory for one working folder: its files and the findings about them."""

    host: str
    root: str
    cwd: str
    files: tuple[MemoryFile, ...]
    findings: tuple[Finding, ...] = ()
    method: str = tokens.O200K
    #: Tokens of the bytes past the host's cut (Codex's project_doc_max_bytes): never read.
    past_cut: int = 0

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
            "past_cut": self.past_cut,
            "findings": [finding.as_dict() for finding in self.findings],
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
    #: What the plugin names that was not read, each with why (a path that leaves the
    #: plugin, a file that is not a regular file or cannot be parsed).
    unread: tuple[str, ...] = ()

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
        } | ({"unread": list(self.unread)} if self.unread else {})
