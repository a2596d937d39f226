"""What a repository holds for ``toll init``, wherever in the tree it lives.

One walk of the tree (:func:`walk`) lists every folder once — skipping version control,
dependencies, virtualenvs and build output, following a symlinked folder once, never out of
the repository and never round a loop — and each ledger kind ``toll init`` writes has one
finder over that walk, listing what it found as :class:`Found` entries. Skills are the
folders holding ``SKILL.md`` (``skills/``, ``.claude/skills/``, but also
``plugins/<name>/skills/``, ``libs/*/examples/skills/``, ``src/<server>/skills/``); servers
are declared in MCP config files (``.mcp.json`` anywhere, ``.cursor/mcp.json``,
``.vscode/mcp.json``, a plugin's ``.mcp.json`` or ``plugin.json``, …); memory files, subagents,
commands and plugins sit where their hosts look for them. Each finder is named in its kind's
row of :data:`pytest_toll.gate.kinds.FINDERS`. Reads files only; starts nothing; nothing from
the network.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path, PurePosixPath
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.hosts import HOSTS as HOST_PROFILES
from pytest_toll.core.limits import MAX_CONFIG_FILE_BYTES, MAX_WALK_DEPTH
from pytest_toll.core.parse import load_json
from pytest_toll.core.textio import read_inside_root
from pytest_toll.gate.server_config import DeclaredServer, read_declarations
from pytest_toll.surface.agents import (
    AGENT_FOLDERS,
    AGENT_SUFFIXES,
    COMMAND_FOLDERS,
    COMMAND_SUFFIX,
    command_name,
    delegate_name,
)
from pytest_toll.surface.bill import has_files
from pytest_toll.surface.memory import HOSTS, MEMORY_PLACES
from pytest_toll.surface.plugins import MARKETPLACE_FILE, PLUGIN_FILE, repository_plugins

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
    """One folder of the walk: its path relative to the root (``.`` for the root), its
    files, and the folders in it the walk went on to (those that are symlinks apart)."""

    relative: str
    files: frozenset[str]
    subfolders: tuple[str, ...] = ()
    links: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Tree:
    root: Path
    folders: tuple[Folder, ...]
    #: Folders holding SKILL.md (relative); the walk does not enter them further.
    skill_folders: tuple[str, ...]
    #: A folder met a second time through a symlink: the path it was first listed under.
    aliases: Mapping[str, str] = field(default_factory=dict)

    @cached_property
    def _by_path(self) -> dict[str, Folder]:
        return {folder.relative: folder for folder in self.folders}

    def folder(self, path: str) -> Folder | None:
        """The folder at ``path`` (relative, as a host names it), under whichever path the
        walk first met it; None when the walk did not list it (absent, skipped, outside)."""
        listed = "."
        for part in PurePosixPath(path).parts:
            key = _join(listed, part)
            listed = self.aliases.get(key, key)
            if listed not in self._by_path:
                return None
        return self._by_path[listed]

    def below(self, path: str) -> Iterator[tuple[str, Folder]]:
        """``path`` and every folder under it, each named under ``path``, with its files. A
        symlinked folder under ``path`` is not entered: a memory, command or transcripts
        tree is the repository's own."""
        top = self.folder(path)
        pending = [] if top is None else [(path, top)]
        while pending:
            here, folder = pending.pop()
            yield here, folder
            for name in folder.subfolders:
                if name in folder.links:
                    continue
                key = _join(folder.relative, name)
                inner = self._by_path.get(self.aliases.get(key, key))
                if inner is not None:
                    pending.append((f"{here}/{name}", inner))

    def is_file(self, path: str) -> bool:
        """Whether the walk listed ``path`` and it is a file: a name the walk lists may be a
        dangling symlink, which no host reads."""
        where = PurePosixPath(path)
        folder = self.folder(where.parent.as_posix())
        return folder is not None and where.name in folder.files and (self.root / path).is_file()


def _is_virtualenv(path: str) -> bool:
    return os.path.isfile(os.path.join(path, "pyvenv.cfg"))


def walk(root: Path) -> Tree:
    """Every folder under ``root`` once, in sorted order; unreadable folders are skipped."""
    folders: list[Folder] = []
    skills: list[str] = []
    first: dict[tuple[int, int], str] = {}
    aliases: dict[str, str] = {}
    inside = os.path.realpath(root)
    for directory, subdirectories, files in os.walk(root, followlinks=True):
        relative = Path(directory).relative_to(root).as_posix()
        if relative.count("/") + 1 >= MAX_WALK_DEPTH:
            subdirectories[:] = []  # a bound on a hostile tree (the Files door's depth)
        try:
            here = os.stat(directory)
        except OSError:
            subdirectories[:] = []
            continue
        seen = first.get((here.st_dev, here.st_ino))
        if seen is not None:  # a second link to it, or a loop
            aliases[relative] = seen
            subdirectories[:] = []
            continue
        first[(here.st_dev, here.st_ino)] = relative
        if SKILL_FILE in files and relative != ".":
            # A skill's own files (templates, examples holding SKILL.md) are its data.
            skills.append(relative)
            subdirectories[:] = []
            folders.append(Folder(relative, frozenset(files)))
            continue
        kept: list[str] = []
        links: set[str] = set()
        for name in sorted(subdirectories):
            path = os.path.join(directory, name)
            if name in SKIPPED_FOLDERS or _is_virtualenv(path):
                continue
            if os.path.islink(path):
                if not _inside(path, inside):
                    continue
                links.add(name)
            kept.append(name)
        subdirectories[:] = kept
        folders.append(Folder(relative, frozenset(files), tuple(kept), frozenset(links)))
    return Tree(root, tuple(folders), tuple(skills), aliases)


def _inside(path: str, root: str) -> bool:
    """A symlinked folder is followed only when it stays in the repository: a link to ``/``
    or a home folder must not turn ``toll init`` into a walk of the whole disk."""
    real = os.path.realpath(path)
    return real == root or real.startswith(root + os.sep)


# --- finders ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Found:
    """One thing ``toll init`` found: the ledger entry it becomes (no pins yet), and what
    init says about it."""

    #: The entry's name (the kind's own name for a whole section).
    name: str
    entry: Mapping[str, Any]
    #: Where it was found, as init's "found" lines count it (a config file, a skills
    #: folder); "" for a kind whose found lines name its entries instead.
    place: str = ""
    #: The file that declared it, named beside it when it cannot be measured.
    origin: str = ""
    #: Comment lines written above its entry (where it came from, what init changed).
    comments: tuple[str, ...] = ()
    #: Why it cannot become a measured entry: written commented out, never measured.
    unusable: str | None = None


#: What a finder returns: the entries found, and places read and ignored, with why.
Finds = tuple[list[Found], list[str]]


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


def _read_json(path: Path, where: str, root: Path) -> Any:
    """An MCP config through the Files door (a regular file inside the repository, under
    the config cap: a FIFO, ``/dev/zero`` or a file linked from elsewhere is refused before
    it is read) and the Parsing door."""
    try:
        return load_json(read_inside_root(path, root, MAX_CONFIG_FILE_BYTES), where)
    except CouldNotJudge as error:
        raise UsageError(str(error)) from None


def find_servers(tree: Tree) -> Finds:
    """Every server declared anywhere, told apart by where it lives when names clash."""
    found: list[DeclaredServer] = []
    notes: list[str] = []
    for relative, key in server_files(tree):
        try:
            data = _read_json(tree.root / relative, relative, tree.root)
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
    return [
        Found(
            server.name,
            server.entry,
            place=server.origin,
            origin=server.origin,
            comments=(f"from {server.origin}", *server.notes),
            unusable=server.unusable,
        )
        for server in found
    ], notes


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


def find_skills(tree: Tree) -> Finds:
    """Every skill folder; a name taken already gets its group's. The first skill of each
    group carries the comment naming the group."""
    found: list[Found] = []
    names: set[str] = set()
    for relative in tree.skill_folders:
        base = PurePosixPath(relative).name
        name = base
        if name in names:
            name = f"{_owner(skill_group(relative))}-{base}"
        if name in names:
            name = relative
        names.add(name)
        place = f"{skill_group(relative)}/"
        new_group = not found or found[-1].place != place
        comments = (f"from {place}",) if new_group else ()
        found.append(Found(name, {"path": relative}, place=place, comments=comments))
    return found, []


def find_transcripts(tree: Tree) -> Finds:
    """The first committed transcripts folder holding a JSONL file, as the one section."""
    for relative in TRANSCRIPT_ROOTS:
        if any(
            name.endswith(".jsonl") for _, folder in tree.below(relative) for name in folder.files
        ):
            return [Found("transcripts", {"roots": [relative]}, place=f"{relative}/")], []
    return [], []


def find_memory(tree: Tree) -> Finds:
    """One ``memory:`` entry per host with memory files at the root, named by the host."""
    found: list[Found] = []
    for host in HOSTS:
        files, folders = MEMORY_PLACES[host]
        paths = [*files]
        for top, suffix in folders:
            paths += [
                f"{here}/{name}"
                for here, folder in tree.below(top)
                for name in folder.files
                if name.endswith(suffix)
            ]
        if any(tree.is_file(path) for path in paths):
            found.append(Found(host, {}))
    return found, []


def _unique_in(name: str, names: set[str], folder: str) -> str:
    if name in names:
        name = f"{folder.strip('.').split('/')[0]}-{name}"
    names.add(name)
    return name


def find_agents(tree: Tree) -> Finds:
    """One ``agents:`` entry per subagent file in the project's folders, by the name its
    host lists it under."""
    found: list[Found] = []
    names: set[str] = set()
    for top in AGENT_FOLDERS:
        folder = tree.folder(top)
        files = sorted(folder.files) if folder is not None else []
        for file in files:
            path = f"{top}/{file}"
            if PurePosixPath(file).suffix not in AGENT_SUFFIXES or not tree.is_file(path):
                continue
            try:
                name = delegate_name(tree.root / path, tree.root)
            except CouldNotJudge:
                name = PurePosixPath(path).stem
            found.append(Found(_unique_in(name, names, top), {"path": path}))
    return found, []


def find_commands(tree: Tree) -> Finds:
    """One ``commands:`` entry per command file, named by its folder (``git:commit``)."""
    found: list[Found] = []
    names: set[str] = set()
    for top in COMMAND_FOLDERS:
        paths = sorted(
            PurePosixPath(here, name)
            for here, folder in tree.below(top)
            for name in folder.files
            if name.endswith(COMMAND_SUFFIX)
        )
        for path in paths:
            name = command_name(tree.root / path, tree.root / top)
            found.append(Found(_unique_in(name, names, top), {"path": path.as_posix()}))
    return found, []


def find_plugins(tree: Tree) -> Finds:
    """The plugin at the root (``.claude-plugin/plugin.json``, named by its manifest) and
    each plugin a marketplace lists in the repository, each once."""
    if not tree.is_file(MARKETPLACE_FILE) and not tree.is_file(PLUGIN_FILE):
        return [], []
    try:
        listed, notes = repository_plugins(tree.root)
    except CouldNotJudge as error:
        # One broken marketplace or manifest must not stop init: say so and go on.
        return [], [f"{error}; no plugin taken from it"]
    found = [
        Found(name, {"path": Path(os.path.relpath(folder, tree.root)).as_posix()})
        for name, folder in listed
    ]
    return found, notes


def find_hosts(tree: Tree) -> Finds:
    """One ``hosts:`` entry per host with anything it loads in the repository."""
    return [
        Found(host.name, {}) for host in HOST_PROFILES.values() if has_files(tree.root, host)
    ], []


def describe_search() -> str:
    """Where ``toll init`` looked, for the "nothing to measure" message."""
    names = ", ".join(sorted(SERVER_FILE_NAMES))
    return (
        f"no folder holding {SKILL_FILE}, no MCP servers in any {names}, and no transcripts "
        f"under {', '.join(f'{name}/' for name in TRANSCRIPT_ROOTS)}; no memory files, "
        "subagents, commands or plugins"
    )
