"""What ``toll fix --surface`` found, moved and measured: the records of each move, the
per-host totals, and the text and JSON it prints.

Every figure here was measured on the written result (a temporary copy of the repository
with the edits applied), never estimated: see :mod:`pytest_toll.surface.relocate`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_toll.core.inert import shown

#: A memory file's procedure moved to a skill (always-on -> on demand).
SKILL = "skill"
#: A long skill body's section moved to references/ (on demand, per use).
REFERENCE = "reference"
#: An AGENTS.md section about one folder moved to that folder's AGENTS.md.
SPLIT = "split"


@dataclass(frozen=True)
class HostChange:
    """One host's always-on tokens before and after a move, and whether the drop is a
    saving (the host loads the file moved from and still reaches the text moved)."""

    host: str
    before: int
    after: int
    counted: bool
    why: str = ""

    @property
    def saving(self) -> int:
        return self.before - self.after if self.counted else 0

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "host": self.host,
            "before": self.before,
            "after": self.after,
            "saving": self.saving,
            "counted": self.counted,
        }
        if self.why:
            data["why"] = self.why
        return data


@dataclass(frozen=True)
class Move:
    """One edit: a section of ``source`` (its heading on ``line``) moved to ``target``."""

    action: str
    source: str
    line: int
    heading: str
    target: str
    #: Why the section qualified ("4 ordered steps", "about packages/api").
    because: str
    hosts: tuple[HostChange, ...] = ()
    #: A reference move: the skill body's tokens (loaded on each use) before and after.
    body: tuple[int, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "action": self.action,
            "source": self.source,
            "line": self.line,
            "heading": self.heading,
            "target": self.target,
            "because": self.because,
            "hosts": [change.as_dict() for change in self.hosts],
        }
        if self.body is not None:
            data["body"] = {"before": self.body[0], "after": self.body[1]}
            data["body_saving"] = self.body[0] - self.body[1]
        return data


@dataclass(frozen=True)
class CutChange:
    """Bytes of the AGENTS.md chain past Codex's cut for a session started in ``cwd``."""

    cwd: str
    before: int
    after: int

    def as_dict(self) -> dict[str, Any]:
        return {"cwd": self.cwd, "before": self.before, "after": self.after}


@dataclass(frozen=True)
class FileWrite:
    """A file the moves change: its text before (None: a new file) and after."""

    path: str
    before: str | None
    after: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "action": "create" if self.before is None else "modify"}


@dataclass(frozen=True)
class HostTotal:
    """One host's always-on tokens on the repository before and after every move."""

    host: str
    before: int
    after: int
    saved: int

    def as_dict(self) -> dict[str, Any]:
        return {"host": self.host, "before": self.before, "after": self.after, "saved": self.saved}


@dataclass(frozen=True)
class SurfaceFix:
    """Every move, measured, and the files they write."""

    root: str
    moves: tuple[Move, ...]
    totals: tuple[HostTotal, ...]
    cut: tuple[CutChange, ...]
    writes: tuple[FileWrite, ...]
    notes: tuple[str, ...] = ()
    written: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {
            "root": self.root,
            "written": self.written,
            "moves": [move.as_dict() for move in self.moves],
            "hosts": [total.as_dict() for total in self.totals],
            "codex_cut": [change.as_dict() for change in self.cut],
            "files": [write.as_dict() for write in self.writes],
            "notes": list(self.notes),
        }


def _host_line(change: HostChange) -> str:
    figures = f"{change.before:,} -> {change.after:,}"
    if change.counted:
        return f"     {change.host:<12} {figures:<18} saves {change.saving:,} tok per request"
    if change.before == change.after:
        return f"     {change.host:<12} no change ({shown(change.why)})"
    return f"     {change.host:<12} {figures:<18} not a saving: {shown(change.why)}"


def render_surface_fix(fix: SurfaceFix) -> str:
    """The text of ``toll fix --surface``: each move with what it saves per host."""
    head = (
        "written: the edits below are applied"
        if fix.written
        else "a proposal: nothing written (--write applies exactly the edits below)"
    )
    # Paths, headings and notes name the repository's own files and folders: shown inert.
    lines = [f"toll fix --surface {shown(fix.root)}: {head}", ""]
    if not fix.moves:
        lines.append("nothing to move: no procedure, long skill body or chain past Codex's cut")
    for number, move in enumerate(fix.moves, start=1):
        lines.append(
            f"{number:>2}. {shown(move.source)}:{move.line} {shown(repr(move.heading))} "
            f"({shown(move.because)}) -> {shown(move.target)}"
        )
        lines += [_host_line(change) for change in move.hosts]
        if move.body is not None:
            before, after = move.body
            lines.append(
                f"     body {before:,} -> {after:,}: saves {before - after:,} tok per use "
                "(on demand)"
            )
    if fix.totals:
        lines += ["", "Always-on per host (every request), re-measured on the result:"]
        for total in fix.totals:
            lines.append(
                f"  {total.host:<12} {total.before:>8,} -> {total.after:>8,}   saved {total.saved:,}"
            )
    if fix.cut:
        lines += ["", "AGENTS.md bytes past Codex's cut, per working folder:"]
        lines += [f"  {shown(c.cwd):<24} {c.before:>8,} -> {c.after:>8,}" for c in fix.cut]
    if fix.writes:
        lines += ["", "Files:"]
        lines += [
            f"  {'create' if w.before is None else 'modify'} {shown(w.path)}" for w in fix.writes
        ]
    if fix.notes:
        lines += ["", *[f"note: {shown(note)}" for note in fix.notes]]
    return "\n".join(lines)
