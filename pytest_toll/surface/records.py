"""What a measured piece of the surface is: memory files per host, subagents and commands
at their two levels, a plugin's components (the reports that gather them are in
:mod:`pytest_toll.surface.report`).

Every count is the exact o200k count of the bare text a host puts in the context; the
host's framing around it (``Contents of …:``, a list bullet, a slash) is left out, as it is
for tool definitions, because it is the host's and not the repository's to gate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

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
    #: The host lists it to the model (a command with ``disable-model-invocation: true``
    #: is the user's alone: not listed, its metadata 0).
    listed: bool = True

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "path": self.path,
            "metadata": self.metadata,
            "body": self.body,
        }
        if not self.listed:
            data["listed"] = False
        return data


@dataclass(frozen=True)
class Component:
    """One component of a plugin: what it costs every session, and what it loads later."""

    #: ``skills/pdf``, ``agents/code-reviewer``, ``commands/commit``.
    name: str
    always_on: int
    later: int
    #: The skill's folder, or the subagent's or command's file: where a finding about it is
    #: placed (gate/locate.py). Not part of the report's numbers.
    path: str = field(default="", compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "always_on": self.always_on, "later": self.later}
