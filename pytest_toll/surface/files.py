"""Reading the surface's files: inside the repository only, frontmatter split off, never
raising on a broken file.

A path is resolved (symlinks included) and checked to be inside the repository *before* it
is opened; a file outside it is never read. Line endings are normalised to ``\\n`` so a CRLF
checkout measures what its LF twin measures.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import describe_type
from pytest_toll.core.limits import MAX_SKILL_FILE_BYTES
from pytest_toll.core.textio import decode_text, read_inside_root, walk_inside
from pytest_toll.skills.parse import load_frontmatter_yaml, normalize_newlines

_FENCE = re.compile(r"---[ \t]*\Z")
#: Folders never searched for memory files, subagents or commands: vendored or generated.
SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv"})


def relative(path: Path | str, root: Path | str) -> str:
    return Path(os.path.relpath(path, root)).as_posix()


def read_inside(path: Path, root: Path) -> tuple[bytes, str]:
    """The bytes of ``path`` and its real path, when it resolves inside ``root``.

    Raises ``CouldNotJudge`` naming the file for one outside the repository, missing,
    unreadable or over the read limit a skill file has.
    """
    return read_inside_root(path, root, MAX_SKILL_FILE_BYTES), os.path.realpath(path)


def read_text_inside(path: Path, root: Path) -> str:
    """The text of a file inside ``root``, newlines normalised (``CouldNotJudge`` otherwise)."""
    data, _ = read_inside(path, root)
    return normalize_newlines(decode_text(data, relative(path, root)))


@dataclass(frozen=True)
class Split:
    """A Markdown file split at its optional ``---`` frontmatter."""

    fields: Mapping[str, Any] = field(default_factory=dict)
    body: str = ""
    #: Why the frontmatter could not be read (unclosed, broken YAML, not a mapping).
    problem: str | None = None
    has_frontmatter: bool = False


def split_frontmatter(text: str, name: str) -> Split:
    """Split ``text`` at a leading ``---`` frontmatter; a file without one is all body."""
    text = normalize_newlines(text)
    lines = text.split("\n")
    if not lines or not _FENCE.match(lines[0]):
        return Split({}, text)
    closing = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i])), None)
    if closing is None:
        return Split({}, text, f"{name}: frontmatter opened on line 1 is never closed by ---")
    body = "\n".join(lines[closing + 1 :])
    yaml_text = "\n".join(lines[1:closing])
    loaded, problem = load_frontmatter_yaml(yaml_text, name)
    if problem is not None:
        loose = loose_fields(yaml_text)
        if loose:
            return Split(loose, body, None, True)
        return Split({}, body, problem, True)
    if loaded is None:
        return Split({}, body, None, True)
    if not isinstance(loaded, dict):
        found_type = describe_type(loaded, "yaml")
        return Split({}, body, f"{name}: frontmatter must be a mapping, not {found_type}", True)
    return Split(loaded, body, None, True)


#: The frontmatter keys of subagents and commands (Claude Code's docs): the only ones a
#: loose read starts a new field at.
KNOWN_KEYS = frozenset(
    {
        "name", "description", "tools", "model", "color", "permissionMode", "skills",
        "hooks", "allowed-tools", "argument-hint", "disable-model-invocation",
    }
)  # fmt: skip
_LOOSE_KEY = re.compile(r"([A-Za-z][\w-]*):(?:[ \t]+(.*))?\Z")


def loose_fields(text: str) -> dict[str, str]:
    """Fields of a frontmatter YAML refuses, read as a host reads them: each known key
    at the start of a line takes the text up to the next one.

    Real subagent files put unquoted ``Context: …`` and ``user: "…"`` lines (``<example>``
    blocks) in a description; YAML rejects them and Claude Code still lists the agent, so
    the gate measures the description the host shows instead of calling the file broken.
    """
    fields: dict[str, list[str]] = {}
    current: str | None = None
    for line in text.split("\n"):
        match = _LOOSE_KEY.match(line)
        if match and match.group(1) in KNOWN_KEYS:
            current = match.group(1)
            fields[current] = [match.group(2) or ""]
        elif current is not None:
            fields[current].append(line)
    return {key: "\n".join(value).strip() for key, value in fields.items()}


def walk_files(top: Path, suffix: str, root: Path) -> list[Path]:
    """Regular files under ``top`` whose names end in ``suffix``, sorted, vendored folders
    skipped (the Files door's walk): a ``top`` that resolves outside the repository ``root``
    walks nothing, and no symlinked folder below it is followed."""
    return sorted(walk_inside(top, root, suffix=suffix, skip=SKIPPED_DIRECTORIES))
