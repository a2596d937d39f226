"""What a repository holds for ``toll init``, wherever in the tree it lives.

One walk of the tree (:func:`walk`) lists every folder once — skipping version control,
dependencies, virtualenvs and build output, following a symlinked folder once and never
round a loop — and each ledger kind has one finder over that walk (:data:`FINDERS`):
skills are the folders holding ``SKILL.md`` (``skills/``, ``.claude/skills/``, but also
``plugins/<name>/skills/``, ``libs/*/examples/skills/``, ``src/<server>/skills/``); servers
are declared in MCP config files (``.mcp.json`` anywhere, ``.cursor/mcp.json``,
``.vscode/mcp.json``, a plugin's ``.mcp.json`` or ``plugin.json``, …). A new kind is one
finder function and one row. Reads files only; starts nothing; nothing from the network.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_toll.core.errors import UsageError
from pytest_toll.gate import starter_surface
from pytest_toll.gate.server_config import DeclaredServer, read_declarations

SKILL_FILE = "SKILL.md"

#: Folders never searched: version control, dependencies, caches and build output. A
#: virtualenv is recognised by its ``pyvenv.cfg`` whatever its name.
SKIPPED_FOLDERS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "bower_components", "__pycache__",
        ".venv", "venv", ".tox", ".nox", ".mypy_cache", ".pytest_cache", ".ruff_cache",
        "site-packages", "build", "dist", "target", ".next", ".nuxt", ".turbo",
        ".gradle", ".idea", ".eggs", "htmlcov", ".cache",
    }
)  # fmt: skip

#: Where a file with this name declares MCP servers: (the folder it must sit in, or None for
#: anywhere; the key its servers live under).
SERVER_FILE_NAMES: dict[str, tuple[str | None, str]] = {
    ".mcp.json": (None, "mcpServers"),  # Claude Code's project servers, and a plugin's
    "mcp.json": (None, "mcpServers"),  # Cursor (.cursor/), a plugin's, VS Code's (servers)
    "claude_desktop_config.json": (None, "mcpServers"),  # Claude Desktop's shape, committed
    "settings.json": (".gemini", "mcpServers"),  # Gemini CLI
    "plugin.json": (".claude-plugin", "mcpServers"),  # a Claude Code plugin's inline servers
}
#: VS Code keeps its servers under ``servers``.
_VSCODE = ".vscode"

#: Committed transcript folders (Claude Code JSONL, Codex rollouts), relative to the root.
TRANSCRIPT_ROOTS = ("transcripts", ".transcripts", "agent-transcripts")


@dataclass(frozen=True)
class Folder:
    """One folder of the walk: its path relative to the root (``.`` for the root) and files."""

    relative: str
    files: frozenset[str]


@dataclass(frozen=True)
class Tree:
    root: Path
    folders: tuple[Folder, ...]
    #: Folders holding SKILL.md (relative); the walk does not enter them further.
    skill_folders: tuple[str, ...]


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def walk(root: Path) -> Tree:
    """Every folder under ``root`` once, in sorted order; unreadable folders are skipped."""
    folders: list[Folder] = []
    skills: list[str] = []
    seen: set[tuple[int, int]] = set()
    inside = os.path.realpath(root)
    for directory, subdirectories, files in os.walk(root, followlinks=True):
        try:
            here = os.stat(directory)
        except OSError:
            subdirectories[:] = []
            continue
        if (here.st_dev, here.st_ino) in seen:  # a second link to it, or a loop
            subdirectories[:] = []
            continue
        seen.add((here.st_dev, here.st_ino))
        relative = Path(directory).relative_to(root).as_posix()
        folders.append(Folder(relative, frozenset(files)))
        if SKILL_FILE in files and relative != ".":
            # A skill's own files (templates, examples holding SKILL.md) are its data.
            skills.append(relative)
            subdirectories[:] = []
            continue
        subdirectories[:] = sorted(
            name
            for name in subdirectories
            if name not in SKIPPED_FOLDERS
            and not _is_virtualenv(os.path.join(directory, name))
            and _inside(os.path.join(directory, name), inside)
        )
    return Tree(root, tuple(folders), tuple(skills))


def _inside(path: str, root: str) -> bool:
    """A symlinked folder is followed only when it stays in the repository: a link to ``/``
    or a home folder must not turn ``toll init`` into a walk of the whole disk."""
    if not os.path.islink(path):
        return True
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


# --- finders ------------------------------------------------------------------------------


def _join(folder: str, name: str) -> str:
    return name if folder == "." else f"{folder}/{name}"


def server_files(tree: Tree) -> Iterator[tuple[str, str]]:
    """(relative path, servers key) of every MCP config file in the tree."""
    for folder in tree.folders:
        parent = PurePosixPath(folder.relative).name
        for name in sorted(folder.files & SERVER_FILE_NAMES.keys()):
            where, key = SERVER_FILE_NAMES[name]
            if where is not None and parent != where:
                continue
            yield _join(folder.relative, name), ("servers" if parent == _VSCODE else key)


def _read_json(path: Path, where: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8-sig"))
    except (OSError, UnicodeDecodeError) as error:
        raise UsageError(f"{where}: cannot read: {error}") from None
    except json.JSONDecodeError as error:
        raise UsageError(f"{where}:{error.lineno}: not JSON: {error.msg}") from None


def find_servers(tree: Tree) -> tuple[list[DeclaredServer], list[str]]:
    """Every server declared anywhere, told apart by where it lives when names clash."""
    found: list[DeclaredServer] = []
    notes: list[str] = []
    for relative, key in server_files(tree):
        try:
            data = _read_json(tree.root / relative, relative)
        except UsageError as error:
            # One broken config among many must not stop init: say so and go on.
            notes.append(f"{error}; nothing taken from it")
            continue
        declared, note = read_declarations(data, relative, key, tree.root)
        if note:
            notes.append(note)
        for server in declared:
            same = next((other for other in found if other.name == server.name), None)
            if same is not None and same.entry == server.entry:
                notes.append(
                    f"{relative}: {server.name}: the same server as in {same.origin}; kept once"
                )
                continue
            if same is not None:
                renamed = _unique(server.owner + "-" + server.name, found)
                notes.append(
                    f"{relative}: {server.name}: also declared in {same.origin}, differently; "
                    f"written as {renamed}"
                )
                server = server.renamed(renamed)
            found.append(server)
    return found, notes


def _unique(name: str, found: list[DeclaredServer]) -> str:
    taken = {server.name for server in found}
    candidate, number = name, 2
    while candidate in taken:
        candidate, number = f"{name}-{number}", number + 1
    return candidate


def skill_group(relative: str) -> str:
    """Where a skill lives: the folder holding its folder (``plugins/x/skills``)."""
    return PurePosixPath(relative).parent.as_posix()


#: Folder names that say nothing about whose skills they hold.
_GENERIC_FOLDERS = frozenset({".", "skills", "examples", "example", "src", "lib", "libs"})


def _owner(group: str) -> str:
    """A short name for a group of skills: ``plugins/x/skills`` → ``x``, ``.claude/skills``
    → ``claude``, ``libs/cli/examples/skills`` → ``cli``."""
    parts = [part for part in PurePosixPath(group).parts if part not in _GENERIC_FOLDERS]
    return parts[-1].strip(".") if parts else "root"


def find_skills(tree: Tree) -> list[tuple[str, str]]:
    """(entry name, skill folder) for every skill; a name taken already gets its group's."""
    found: list[tuple[str, str]] = []
    names: set[str] = set()
    for relative in tree.skill_folders:
        base = PurePosixPath(relative).name
        name = base
        if name in names:
            name = f"{_owner(skill_group(relative))}-{base}"
        if name in names:
            name = relative
        names.add(name)
        found.append((name, relative))
    return found


def find_transcripts(tree: Tree) -> str | None:
    for relative in TRANSCRIPT_ROOTS:
        folder = tree.root / relative
        if folder.is_dir() and any(folder.rglob("*.jsonl")):
            return relative
    return None


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

    def where(self) -> list[str]:
        """What was found where, one line per place, for the user to check."""
        lines: list[str] = []
        configs: dict[str, int] = {}
        for server in self.servers:
            configs[server.origin] = configs.get(server.origin, 0) + 1
        lines += [f"{origin}: {count} server(s)" for origin, count in configs.items()]
        groups: dict[str, int] = {}
        for _, relative in self.skills:
            group = skill_group(relative)
            groups[group] = groups.get(group, 0) + 1
        lines += [f"{group}/: {count} skill(s)" for group, count in groups.items()]
        if self.transcripts:
            lines.append(f"{self.transcripts}/: transcripts")
        for kind, found in self.surface.found.items():
            if found:
                lines.append(f"{kind}: {', '.join(name for name, _ in found)}")
        return lines


#: One row per ledger kind: the Discovery field it fills and the finder that fills it.
FINDERS: tuple[tuple[str, Callable[[Tree], Any]], ...] = (
    ("servers", find_servers),
    ("skills", find_skills),
    ("transcripts", find_transcripts),
)


def discover(root: Path) -> Discovery:
    """What the repository at ``root`` declares; reads files only, starts nothing."""
    tree = walk(root)
    found: dict[str, Any] = {}
    notes: list[str] = []
    for field_name, finder in FINDERS:
        result = finder(tree)
        if field_name == "servers":
            result, server_notes = result
            notes += server_notes
        found[field_name] = tuple(result) if isinstance(result, list) else result
    surface = starter_surface.discover(root)
    return Discovery(root=root, notes=(*notes, *surface.notes), surface=surface, **found)


def describe_search() -> str:
    """Where ``toll init`` looked, for the "nothing to measure" message."""
    names = ", ".join(sorted(SERVER_FILE_NAMES))
    return (
        f"no folder holding {SKILL_FILE}, no MCP servers in any {names}, and no transcripts "
        f"under {', '.join(f'{name}/' for name in TRANSCRIPT_ROOTS)}; no memory files, "
        "subagents, commands or plugins"
    )
