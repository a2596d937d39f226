"""What a measured skill is: its records (Skill, Reference, BrokenReference), SKILL.md's name
and the text a host lists for it.

The three disclosure levels each record carries: ``metadata`` (what a host lists for every
installed skill at the start of a session), ``body`` (SKILL.md after its frontmatter, loaded
on activation) and ``references`` (files inside the skill folder that the body, or a file it
loads, names: read on demand). Beside them, ``executed``: scripts the skill runs, whose
source is not loaded (only their output is, and that cannot be known ahead). The measuring
lives in :mod:`pytest_toll.skills.measuring`, the judging in :mod:`pytest_toll.skills.rules`;
both read these records, and the measurement is a :class:`pytest_toll.skills.report.SkillsReport`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SKILL_FILE = "SKILL.md"


@dataclass(frozen=True)
class Reference:
    """A file inside the skill folder that the body points to. Binary files have no tokens."""

    path: str
    tokens: int | None
    binary: bool = False
    #: S105 pattern descriptions found in the file's text, with their 1-based line.
    injections: tuple[tuple[str, int], ...] = field(default=(), compare=False)

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "tokens": self.tokens}


@dataclass(frozen=True)
class BrokenReference:
    """A reference that was not read: ``reason`` is ``missing``, ``escape`` or ``unreadable``."""

    target: str
    reason: str
    detail: str


@dataclass(frozen=True)
class Skill:
    """One measured skill. The first seven fields are its report; the rest feed the rules."""

    name: str
    path: str
    metadata: int
    body: int
    body_lines: int
    references: tuple[Reference, ...]
    references_total: int
    folder_name: str = ""
    description: str = ""
    #: The parsed frontmatter mapping, or None when there is none to speak of.
    frontmatter: Mapping[str, Any] | None = field(default=None, compare=False)
    #: Why the frontmatter could not be read (no ``---``, broken YAML, not UTF-8...).
    frontmatter_problem: str | None = None
    #: The 1-based line of SKILL.md where the body starts (for S105 line numbers).
    body_start_line: int = 1
    body_text: str = field(default="", repr=False, compare=False)
    broken_references: tuple[BrokenReference, ...] = ()
    #: Each reference found inside the folder with its depth in folders (S106 judges it).
    reference_depths: tuple[tuple[str, int], ...] = ()
    #: Scripts the skill tells the agent to run: their output enters the context, their
    #: source does not (unless the skill also says to read them), so they are not loaded.
    executed: tuple[Reference, ...] = ()
    #: What could not be resolved and was skipped, never an error: placeholders that name no
    #: file, host variables, files of the plugin outside the skill, links to sibling skills.
    notes: tuple[str, ...] = ()

    @property
    def executed_total(self) -> int:
        """The source tokens of the executed scripts (not loaded; see ``executed``)."""
        return sum(script.tokens or 0 for script in self.executed)

    def as_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {
            "name": self.name,
            "path": self.path,
            "metadata": self.metadata,
            "body": self.body,
            "body_lines": self.body_lines,
            "references": [reference.as_dict() for reference in self.references],
            "references_total": self.references_total,
        }
        # Only skills that run scripts carry the part, so every other report stays as it was.
        if self.executed:
            record["executed"] = [script.as_dict() for script in self.executed]
            record["executed_total"] = self.executed_total
        return record


def metadata_text(name: str, description: str) -> str:
    """What a host lists at the start of every session for an installed skill, a subagent or
    a command: its name and description, bare of the host's framing (a bullet, a slash)."""
    return f"{name}: {description}"
