"""Where a finding was caused: the file and line a reviewer edits, beside the ledger line.

A finding is judged from records (a skill, a memory file, a subagent, a tool definition);
its ledger entry only names where to look. So each finding a measurer returns is given the
place it came from when there is one, as ``file`` (relative to the ledger's folder, ``/``
separated; absolute when outside it) and ``line``:

- a skill finding: the SKILL.md line of the frontmatter key it is about (``name:``,
  ``description:``), the line that names a broken reference, or the line an injection was
  found on (in SKILL.md or the reference file the message names); else SKILL.md's first line;
- a memory finding: the ``@import`` line (M101 names it), or the file Codex loses (M102);
- a subagent's or command's finding: its own file, at the frontmatter key it is about (and
  so for a plugin's component: its skill's SKILL.md line, its subagent's or command's file);
- a server's tool finding: the tool's description in the repository's source, only when its
  first line is found verbatim in exactly one file (a description built at run time, or one
  repeated in several files, stays at the ledger line rather than point at a guess).

A finding with no such place keeps none, and the renderers point at the ledger line as
before. The renderers (SARIF, GitHub annotations) put the ledger line beside it as the
related location.

A gate failure (a pin or budget crossed) is about a part that grew, not a finding: the
entry's ``detail.places`` names where each part is written (a skill's ``metadata`` at its
``description:`` line and its ``body`` at the body's first line; a server's tool that grew
past its pin at its description in the source, found as above), and the renderers point the
failure at the part that grew most.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.textio import read_file_bytes

SKILL_FILE = "SKILL.md"

#: Source files searched for a tool's description: the languages MCP servers are written in
#: first; the data files some keep their descriptions in only when no source file has it.
#: Documentation (a README quoting the tools) is never the place a description is defined.
CODE_SUFFIXES = frozenset(
    {".py", ".ts", ".js", ".mjs", ".cjs", ".tsx", ".go", ".rs", ".java", ".kt", ".cs", ".rb",
     ".php", ".swift"}
)  # fmt: skip
DATA_SUFFIXES = frozenset({".json", ".yaml", ".yml", ".toml"})
SOURCE_SUFFIXES = CODE_SUFFIXES | DATA_SUFFIXES
#: Folders never searched (dependencies, caches, build output, version control).
SKIPPED = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox", ".nox",
     ".mypy_cache", ".pytest_cache", ".ruff_cache", "site-packages", "build", "dist", "target",
     ".next", ".cache", ".eggs"}
)  # fmt: skip
#: At most this many source files are read, each at most this many bytes: finding a line must
#: never cost more than measuring did.
MAX_SOURCE_FILES = 4000
MAX_SOURCE_BYTES = 512 * 1024
#: A description's first line shorter than this is too common to name one place.
MIN_VERBATIM = 16
#: At most this much of the first line is looked for: source code splits a long string over
#: several literals, and the first of them still starts with the description.
VERBATIM_PREFIX = 60

_IN_FILE_LINE = re.compile(r"(?P<file>[^\s:]+) line (?P<line>\d+)")
_QUOTED = re.compile(r"'([^']+)'|\"([^\"]+)\"")
_KEY = re.compile(r"^(?P<key>[a-z][a-z_-]*)\b")


@dataclass(frozen=True)
class Place:
    """A file (absolute) and a 1-based line in it."""

    path: Path
    line: int


def placed(
    findings: Iterable[Mapping[str, Any]],
    where: Mapping[str | None, Path] | None,
    root: Path,
    how: str,
) -> tuple[dict[str, Any], ...]:
    """``findings`` with ``file`` and ``line`` added where a place is found.

    ``where`` maps a finding's subject to the file it is about (a skill's SKILL.md, a
    subagent's file); ``how`` is the kind of file, which decides how its line is found.
    """
    out: list[dict[str, Any]] = []
    for finding in findings:
        data = dict(finding)
        place = _place(data, where or {}, root, how)
        if place is not None:
            data["file"] = shown_path(place.path, root)
            data["line"] = place.line
        out.append(data)
    return tuple(out)


def shown_path(path: Path, root: Path) -> str:
    """``path`` relative to the ledger's folder when inside it, else absolute; ``/`` separated."""
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).as_posix()
    except ValueError:
        return Path(os.path.abspath(path)).as_posix()


def _place(
    finding: Mapping[str, Any], where: Mapping[str | None, Path], root: Path, how: str
) -> Place | None:
    subject = finding.get("subject")
    message = str(finding.get("message", ""))
    if how == "memory":
        return _memory_place(subject, root)
    path = where.get(subject)
    if path is None:
        return None
    if how == "skill":
        return _skill_place(path, message)
    return _frontmatter_place(path, message)


def _lines(path: Path) -> list[str] | None:
    try:
        data = read_file_bytes(path, limit=MAX_SOURCE_BYTES)
    except (CouldNotJudge, OSError):
        return None
    return data.decode("utf-8", errors="replace").splitlines()


def _first_line_with(lines: list[str], needle: str) -> int | None:
    for number, line in enumerate(lines, 1):
        if needle in line:
            return number
    return None


def _frontmatter_line(lines: list[str], key: str) -> int | None:
    """The line of ``key:`` inside the leading ``---`` block."""
    if not lines or lines[0].strip() != "---":
        return None
    for number, line in enumerate(lines[1:], 2):
        if line.strip() == "---":
            return None
        if line.startswith(f"{key}:"):
            return number
    return None


def _body_line(lines: list[str]) -> int:
    """The first line after the frontmatter (the body a size finding is about)."""
    if lines and lines[0].strip() == "---":
        for number, line in enumerate(lines[1:], 2):
            if line.strip() == "---":
                return min(number + 1, len(lines))
    return 1


def _frontmatter_place(path: Path, message: str) -> Place | None:
    """A subagent's or command's file, at the frontmatter key its finding is about."""
    lines = _lines(path)
    if lines is None:
        return None
    key = _KEY.match(message)
    named = key.group("key") if key is not None else ""
    for candidate in (
        named,
        "description" if "description" in message or "listing" in message else "",
    ):
        line = _frontmatter_line(lines, candidate) if candidate else None
        if line is not None:
            return Place(path, line)
    return Place(path, 1)


def _skill_place(folder: Path, message: str) -> Place | None:
    skill_md = folder / SKILL_FILE if folder.is_dir() else folder
    in_file = _IN_FILE_LINE.match(message)
    if in_file is not None:
        # An injection: "SKILL.md line 12: …" or "references/x.md line 3: …".
        target = folder / in_file.group("file") if folder.is_dir() else skill_md
        if target.is_file():
            return Place(target, int(in_file.group("line")))
    lines = _lines(skill_md)
    if lines is None:
        return None
    for named in _named_references(message):
        line = _first_line_with(lines, named)
        if line is not None:
            return Place(skill_md, line)
    if message.startswith("body "):
        return Place(skill_md, _body_line(lines))
    key = _KEY.match(message)
    if key is not None:
        line = _frontmatter_line(lines, key.group("key"))
        if line is not None:
            return Place(skill_md, line)
    if "description" in message:
        line = _frontmatter_line(lines, "description")
        if line is not None:
            return Place(skill_md, line)
    return Place(skill_md, 1)


def _named_references(message: str) -> list[str]:
    """What a reference finding names: the quoted target (``reference 'x.md' does not
    exist``, ``'x.{tex,md}' is a placeholder``), or the path before its colon
    (``${CLAUDE_PLUGIN_ROOT}/scripts/x.sh: no such file``)."""
    named: list[str] = []
    if message.startswith(("reference ", "'", '"')):
        quoted = _QUOTED.search(message)
        if quoted is not None:
            named.append(quoted.group(1) or quoted.group(2))
    head, colon, _ = message.partition(": ")
    if colon and " " not in head and "/" in head:
        named.append(head)
    return named


def _memory_place(subject: Any, root: Path) -> Place | None:
    """M101 names ``importer:line``; M102 names a file the chain loses."""
    if not isinstance(subject, str):
        return None
    file, _, line = subject.rpartition(":")
    if file and line.isdigit():
        path = root / file
        return Place(path, int(line)) if path.is_file() else None
    path = root / subject
    return Place(path, 1) if path.is_file() else None


# --- a tool's description in the server's source --------------------------------------------


def _source_files(top: Path) -> Iterator[Path]:
    count = 0
    for directory, subdirectories, files in os.walk(top):
        subdirectories[:] = sorted(name for name in subdirectories if name not in SKIPPED)
        for name in sorted(files):
            if os.path.splitext(name)[1] not in SOURCE_SUFFIXES:
                continue
            count += 1
            if count > MAX_SOURCE_FILES:
                return
            yield Path(directory, name)


def description_places(descriptions: Mapping[str, str], top: Path) -> dict[str, Place]:
    """Each tool whose description's first line (its first :data:`VERBATIM_PREFIX`
    characters) is found verbatim in exactly one source file under ``top`` (one code file,
    or else one data file): the line it starts on there."""
    wanted: dict[str, str] = {}
    for tool, description in descriptions.items():
        first = next((line.strip() for line in description.splitlines() if line.strip()), "")
        if len(first) >= MIN_VERBATIM:
            wanted[tool] = first[:VERBATIM_PREFIX]
    if not wanted:
        return {}
    hits: dict[str, list[Place]] = {tool: [] for tool in wanted}
    for path in _source_files(top):
        lines = _lines(path)
        if lines is None:
            continue
        text = "\n".join(lines)
        for tool, first in wanted.items():
            if first in text:
                hits[tool].append(Place(path, _description_line(lines, first)))
    places: dict[str, Place] = {}
    for tool, found in hits.items():
        in_code = [place for place in found if place.path.suffix in CODE_SUFFIXES]
        chosen = in_code if in_code else found
        if len(chosen) == 1:
            places[tool] = chosen[0]
    return places


def _description_line(lines: list[str], first: str) -> int:
    """The line a description starts on: of the lines holding its text, the first that says
    ``description`` (``description="…"``, a docstring's twin elsewhere in the file is not the
    tool's), else the first."""
    holding = [number for number, line in enumerate(lines, 1) if first in line]
    if not holding:
        # Found across lines (a wrapped literal): the file's first line naming it at all.
        return 1
    described = [number for number in holding if "description" in lines[number - 1].lower()]
    return (described or holding)[0]


def place_tool_findings(
    findings: Iterable[Mapping[str, Any]], descriptions: Mapping[str, str], top: Path, root: Path
) -> tuple[dict[str, Any], ...]:
    """Server findings about a tool, placed at its description in the repository's source."""
    copies = [dict(finding) for finding in findings]
    about = {str(f.get("subject")) for f in copies if f.get("subject") in descriptions}
    if not about:
        return tuple(copies)
    places = description_places({tool: descriptions[tool] for tool in sorted(about)}, top)
    for finding in copies:
        place = places.get(str(finding.get("subject")))
        if place is not None:
            finding["file"] = shown_path(place.path, root)
            finding["line"] = place.line
    return tuple(copies)


# --- where a part that grew is written (a gate failure's place) ------------------------------


def _as_place(place: Place, root: Path) -> dict[str, Any]:
    return {"file": shown_path(place.path, root), "line": place.line}


def skill_part_places(folder: Path, root: Path) -> dict[str, dict[str, Any]]:
    """A skill's ``metadata`` (its ``description:`` line, else ``name:``) and ``body`` (the
    first line after the frontmatter) in its SKILL.md; empty when SKILL.md cannot be read."""
    skill_md = folder / SKILL_FILE if folder.is_dir() else folder
    lines = _lines(skill_md)
    if lines is None:
        return {}
    metadata = _frontmatter_line(lines, "description") or _frontmatter_line(lines, "name") or 1
    return {
        "metadata": _as_place(Place(skill_md, metadata), root),
        "body": _as_place(Place(skill_md, _body_line(lines)), root),
    }


def tool_places(
    descriptions: Mapping[str, str], top: Path, root: Path
) -> dict[str, dict[str, Any]]:
    """Each named tool's description in the repository's source, when found verbatim in
    exactly one file (:func:`description_places`); the others have no place."""
    if not descriptions:
        return {}
    return {
        tool: _as_place(place, root)
        for tool, place in sorted(description_places(descriptions, top).items())
    }
