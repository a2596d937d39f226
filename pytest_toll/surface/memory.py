"""Memory files: what each host loads at session start from the repository, per file.

Every file is its own part, so a diff names the file that grew. Counts are the bare o200k
text of each file; the host's framing (Claude Code's ``Contents of …:`` lines, Codex's
blank-line joins) is left out.

- ``claude``: ``CLAUDE.md``, ``.claude/CLAUDE.md`` and (when committed) ``CLAUDE.local.md``
  in every folder from the repository root down to the working folder, and
  ``.claude/rules/**/*.md`` (a rule with ``paths:`` loads only when matching files are read:
  on demand); ``@path`` imports expanded (:mod:`pytest_toll.surface.imports`). The memory
  page (docs.anthropic.com/en/docs/claude-code/memory, found with the search tool) says
  Claude Code reads memory "recursively: starting in the cwd, … up to (but not including)
  the root directory /", and that a "CLAUDE.md nested in subtrees under your current working
  directory" is "only included when Claude reads files in those subtrees": those are shown
  on demand, never in the always-on total. Imports stop five files deep counting the root,
  name text files only, and block HTML comments are left out of every file before it is
  counted (the Claude Code row of :mod:`pytest_toll.core.hosts`).
- ``codex``: the AGENTS.md chain as Codex's guide (developers.openai.com/codex/guides/
  agents-md) and ``codex-rs/core/src/project_doc.rs`` describe it: from the project root down
  to the working folder, at most one file per folder (``AGENTS.override.md``, then
  ``AGENTS.md``), empty files skipped, concatenated root first with blank lines; Codex "stops
  adding files once the combined size reaches the limit defined by project_doc_max_bytes
  (32 KiB by default)", truncating the file that crosses it. The nearest, most specific
  files are the ones lost: M102 names them.
- ``gemini``: ``GEMINI.md`` and the names ``context.fileName`` in ``.gemini/settings.json``
  adds (a string or a list: gemini-cli-core 0.61.0's ``setGeminiMdFilename`` adds them to
  the default, it does not replace it) in the folders from the root to the working folder, imports
  expanded six files deep; a file below the working folder loads only when a tool touches
  its folder (gemini-cli-core's ``loadJitSubdirectoryMemory``): on demand.
- ``copilot``: ``.github/copilot-instructions.md``; ``.github/instructions/**/*.instructions.md``
  always-on when ``applyTo`` matches every file (``**``), on demand otherwise.
- ``cursor``: ``AGENTS.md`` at the root and ``.cursorrules`` (legacy) always-on, a nested
  ``AGENTS.md`` on demand; ``.cursor/rules/**/*.mdc`` at the root always-on with
  ``alwaysApply: true``; an "Apply Intelligently" rule (a description, no globs) has its
  description listed on every request and its body on demand; a rule with globs, or a rule
  in a nested ``.cursor/rules`` folder, on demand.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from pytest_toll.core import git, tokens
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import Finding, RuleOverrides, capped_per_file, worst_first
from pytest_toll.core.hosts import BY_MEMORY, Host
from pytest_toll.core.limits import MAX_FINDINGS_PER_FILE
from pytest_toll.core.parse import load_json
from pytest_toll.core.textio import decode_text, is_inside, walk_inside
from pytest_toll.skills.parse import normalize_newlines
from pytest_toll.surface import rules as surface_rules
from pytest_toll.surface.files import (
    SKIPPED_DIRECTORIES,
    read_inside,
    read_text_inside,
    relative,
    split_frontmatter,
    walk_files,
)
from pytest_toll.surface.imports import (
    find_imports,
    looks_like_path,
    resolve,
    strip_block_comments,
)
from pytest_toll.surface.records import ALWAYS_ON, ON_DEMAND, MemoryFile
from pytest_toll.surface.report import MemoryReport

HOSTS = ("claude", "codex", "gemini", "copilot", "cursor")
#: Codex's default ``project_doc_max_bytes``.
CODEX_MAX_BYTES = 32 * 1024
#: A Codex chain file past the byte limit: never read.
LOST = "not read"
CLAUDE_FILES = ("CLAUDE.md", ".claude/CLAUDE.md", "CLAUDE.local.md")
CODEX_FILES = ("AGENTS.override.md", "AGENTS.md")
_APPLY_EVERYWHERE = frozenset({"**", "**/*", "*"})
#: Where each host's memory files sit, relative to the repository root: files, and folders
#: of files by name ending (searched at any depth). A host with any of them has memory.
MEMORY_PLACES: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "claude": (CLAUDE_FILES, ((".claude/rules", ".md"),)),
    "codex": (CODEX_FILES, ()),
    # Gemini CLI's settings may name other memory files (context.fileName).
    "gemini": (("GEMINI.md", ".gemini/settings.json"), ()),
    "copilot": (
        (".github/copilot-instructions.md",),
        ((".github/instructions", ".instructions.md"),),
    ),
    "cursor": ((".cursorrules",), ((".cursor/rules", ".mdc"),)),
}


def folders_down(root: Path, cwd: Path) -> list[Path]:
    """The folders from ``root`` down to ``cwd``, root first."""
    steps = Path(os.path.relpath(cwd, root)).parts
    folders = [root]
    for step in steps:
        if step in (".", ""):
            continue
        folders.append(folders[-1] / step)
    return folders


def committed(root: Path, path: Path) -> bool:
    """Whether git tracks ``path``; outside a git checkout, a file present counts as one."""
    try:
        done = git.run(["ls-files", "--", relative(path, root)], root)
    except CouldNotJudge:
        return True  # no git here: what is checked out is what the gate sees
    if done.returncode != 0:
        return True  # not a repository: what is checked out is what the gate sees
    return bool(done.text.strip())


class _Collector:
    """The files of one host's memory, each counted once, imports followed."""

    def __init__(
        self, root: Path, counter: tokens.O200kCounter, settings: RuleOverrides, host: Host
    ):
        self.root = root
        self.host = host
        #: Tokens of the bytes past the host's cut (Codex's project_doc_max_bytes).
        self.past_cut = 0
        self.real_root = os.path.realpath(root)
        self.counter = counter
        self.settings = settings
        self.files: list[MemoryFile] = []
        self.findings: list[Finding | None] = []
        self.seen: set[str] = set()

    def add(self, path: Path, loaded: str, via: str, *, body_only: bool = False) -> str | None:
        """Count ``path`` (once); its text, for imports, or None when it was counted before."""
        real = os.path.realpath(path)
        if real in self.seen:
            return None
        self.seen.add(real)
        text = read_text_inside(path, self.root)
        counted = split_frontmatter(text, relative(path, self.root)).body if body_only else text
        if self.host.strips_html_comments:
            counted = strip_block_comments(counted)
        size = len(counted.encode())
        self.files.append(
            MemoryFile(
                relative(real, self.real_root),
                self.counter.count(counted),
                loaded,
                via,
                size,
                size,
            )
        )
        return counted

    def add_with_imports(self, path: Path, via: str, *, body_only: bool = False) -> None:
        text = self.add(path, ALWAYS_ON, via, body_only=body_only)
        if text is not None:
            self._expand(path, text, 0, [os.path.realpath(path)])

    def _inline(self, index: int, text: str, followed: list[str]) -> None:
        """A host that puts an import's text where ``@path`` stood (Gemini CLI) sends the
        importing file without its ``@path`` mentions: count it so."""
        for target in followed:
            text = text.replace(f"@{target}", "", 1)
        file = self.files[index]
        self.files[index] = MemoryFile(
            file.path, self.counter.count(text), file.loaded, file.via, file.bytes_read,
            file.bytes_total,
        )  # fmt: skip

    def _expand(self, path: Path, text: str, hops: int, stack: list[str]) -> None:
        importer = relative(path, self.root)
        index = len(self.files) - 1  # the importing file was the last one added
        followed: list[str] = []
        for found in find_imports(text):
            target = resolve(found.target, path)
            exists = os.path.lexists(target)
            if not exists and not looks_like_path(found.target):
                continue  # @octocat: a mention, not a file
            real = os.path.realpath(target)

            def broken(why: str, line: int = found.line, name: str = found.target) -> None:
                self.findings.append(
                    surface_rules.broken_import(self.settings, importer, line, name, why)
                )

            if not is_inside(real, self.real_root):
                broken("leaves the repository (each user's own file: not gated)")
            elif not exists or not os.path.exists(real):
                broken("names no file")
            elif real in stack:
                chain = " -> ".join(relative(step, self.real_root) for step in [*stack, real])
                broken(f"is an import cycle ({chain})")
            elif hops + 1 > self.host.import_hops:
                broken(f"is hop {hops + 1}, past {self.host.name}'s {self.host.import_hops}")
            elif os.path.isdir(real):
                broken("is a folder, not a file")
            elif not self._importable(real):
                broken(f"is not a text file {self.host.name} imports")
            elif real not in self.seen:
                try:
                    imported = self.add(Path(real), ALWAYS_ON, f"import of {importer}")
                except CouldNotJudge as error:
                    broken(f"cannot be read ({error})")
                    continue
                followed.append(found.target)
                if imported is not None:
                    self._expand(Path(real), imported, hops + 1, [*stack, real])
        if followed and self.host.imports_inline:
            self._inline(index, text, followed)

    def _importable(self, real: str) -> bool:
        endings = self.host.import_extensions
        suffix = Path(real).suffix.lower()
        return not endings or not suffix or suffix in endings

    def report(self, host: str, cwd: Path) -> MemoryReport:
        return MemoryReport(
            host=host,
            root=self.root.as_posix(),
            cwd=relative(cwd, self.root),
            files=tuple(self.files),
            findings=tuple(
                worst_first(
                    capped_per_file(
                        (f for f in self.findings if f is not None), MAX_FINDINGS_PER_FILE
                    )
                )
            ),
            past_cut=self.past_cut,
        )


def _nested(top: Path, names: tuple[str, ...], below: Path) -> list[Path]:
    """Files named ``names`` in folders strictly below ``below`` (vendored folders skipped;
    the Files door's walk: no symlinked folder followed, bounded in depth, inside ``top``).
    ``.claude/CLAUDE.md`` is a ``CLAUDE.md`` in a folder below, so file names suffice."""
    wanted = {name.rpartition("/")[2] for name in names}
    return sorted(
        path
        for path in walk_inside(below, top, skip=SKIPPED_DIRECTORIES)
        if path.name in wanted and path.parent != below
    )


def _claude(memory: _Collector, root: Path, cwd: Path, max_bytes: int) -> None:
    for folder in folders_down(root, cwd):
        for name in CLAUDE_FILES:
            path = folder / name
            if not path.is_file():
                continue
            if name == "CLAUDE.local.md" and not committed(root, path):
                continue  # a personal file git ignores: each user's own, not the team's
            memory.add_with_imports(path, "chain")
    for rule in walk_files(root / ".claude" / "rules", ".md", root):
        split = split_frontmatter(read_text_inside(rule, root), relative(rule, root))
        if split.fields.get("paths"):
            memory.add(rule, ON_DEMAND, "rule for matching paths", body_only=True)
        else:
            memory.add_with_imports(rule, "rule", body_only=True)
    for nested in _nested(root, ("CLAUDE.md", ".claude/CLAUDE.md"), cwd):
        memory.add(nested, ON_DEMAND, "nested: read with its folder")


def _codex(memory: _Collector, root: Path, cwd: Path, max_bytes: int) -> None:
    remaining = max_bytes
    chain_bytes = 0
    lost: list[str] = []
    for folder in folders_down(root, cwd):
        path = next((folder / n for n in CODEX_FILES if (folder / n).is_file()), None)
        if path is None:
            continue
        data, real = read_inside(path, root)
        name = relative(real, memory.real_root)
        if not data.strip():
            continue  # Codex skips empty files
        chain_bytes += len(data)
        memory.seen.add(real)
        kept = data[:remaining]
        if len(kept) < len(data):
            lost_text = data[len(kept) :].decode("utf-8", errors="replace")
            memory.past_cut += memory.counter.count(normalize_newlines(lost_text))
        if not kept.strip():
            # Past the limit (or cut to blanks): Codex reads nothing more of it.
            memory.files.append(MemoryFile(name, 0, LOST, "chain", 0, len(data)))
            lost.append(name)
            continue
        # Codex reads the kept bytes lossily; a cut inside a character becomes U+FFFD.
        text = normalize_newlines(kept.decode("utf-8", errors="replace"))
        if b"\0" in kept:
            decode_text(kept, name)  # raises: a binary AGENTS.md is not measured
        remaining -= len(kept)
        memory.files.append(
            MemoryFile(name, memory.counter.count(text), ALWAYS_ON, "chain", len(kept), len(data))
        )
        if len(kept) < len(data):
            lost.append(name)
    if lost:
        memory.findings.append(
            surface_rules.chain_cut(memory.settings, max_bytes, chain_bytes, lost)
        )


def gemini_file_names(root: Path) -> tuple[str, ...]:
    """The memory file names Gemini CLI reads: ``context.fileName`` of the project's
    ``.gemini/settings.json`` (a string or a list) and ``GEMINI.md``, in the order the
    loader keeps them (sorted, as ``getEnvironmentMemoryPaths`` sorts the paths)."""
    path = root / ".gemini" / "settings.json"
    if not path.is_file():
        return ("GEMINI.md",)
    try:
        settings = load_json(read_text_inside(path, root), relative(path, root))
    except CouldNotJudge:
        return ("GEMINI.md",)  # Gemini CLI reports a broken settings file; its default holds
    context = settings.get("context") if isinstance(settings, dict) else None
    named = context.get("fileName") if isinstance(context, dict) else None
    names = [named] if isinstance(named, str) else named if isinstance(named, list) else []
    kept = {name.strip() for name in names if isinstance(name, str) and name.strip()}
    return tuple(sorted(kept | {"GEMINI.md"}))


def _gemini(memory: _Collector, root: Path, cwd: Path, max_bytes: int) -> None:
    names = gemini_file_names(root)
    for folder in folders_down(root, cwd):
        for name in names:
            if (folder / name).is_file():
                memory.add_with_imports(folder / name, "chain")
    for below in _nested(root, names, cwd):
        # Loaded just in time: when a tool reads or writes in its folder.
        memory.add(below, ON_DEMAND, "below the working folder: when a tool touches it")


def _copilot(memory: _Collector, root: Path, cwd: Path, max_bytes: int) -> None:
    main = root / ".github" / "copilot-instructions.md"
    if main.is_file():
        memory.add(main, ALWAYS_ON, "repository instructions")
    for path in walk_files(root / ".github" / "instructions", ".instructions.md", root):
        split = split_frontmatter(read_text_inside(path, root), relative(path, root))
        apply_to = split.fields.get("applyTo")
        patterns = {p.strip() for p in str(apply_to).split(",")} if apply_to else set()
        if patterns & _APPLY_EVERYWHERE:
            memory.add(path, ALWAYS_ON, "applyTo every file", body_only=True)
        else:
            memory.add(path, ON_DEMAND, f"applyTo {apply_to or '(none)'}", body_only=True)


def _cursor_rule_folders(root: Path) -> list[Path]:
    """Every ``.cursor/rules`` folder in the repository, the root's first."""
    found = [root / ".cursor" / "rules"] if (root / ".cursor" / "rules").is_dir() else []
    for directory, subdirectories, _ in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRECTORIES)
        here = Path(directory)
        if here != root and (here / ".cursor" / "rules").is_dir():
            found.append(here / ".cursor" / "rules")
    return found


def _cursor(memory: _Collector, root: Path, cwd: Path, max_bytes: int) -> None:
    for name, via in (("AGENTS.md", "AGENTS.md"), (".cursorrules", "legacy .cursorrules")):
        if (root / name).is_file():
            memory.add(root / name, ALWAYS_ON, via)
    for nested in _nested(root, ("AGENTS.md",), root):
        memory.add(nested, ON_DEMAND, "nested AGENTS.md: with its folder")
    for folder in _cursor_rule_folders(root):
        at_root = folder == root / ".cursor" / "rules"
        for path in walk_files(folder, ".mdc", root):
            shown = relative(path, root)
            split = split_frontmatter(read_text_inside(path, root), shown)
            described = split.fields.get("description")
            description = described.strip() if isinstance(described, str) else ""
            if not at_root:
                memory.add(path, ON_DEMAND, "nested rule: with its folder", body_only=True)
            elif split.fields.get("alwaysApply") is True:
                memory.add(path, ALWAYS_ON, "alwaysApply", body_only=True)
            elif description and not split.fields.get("globs"):
                # Apply Intelligently: the description is on every request, the body waits.
                memory.files.append(
                    MemoryFile(
                        f"{shown}#description",
                        memory.counter.count(description),
                        ALWAYS_ON,
                        "Apply Intelligently: its description",
                        len(description.encode()),
                        len(description.encode()),
                    )
                )
                memory.add(path, ON_DEMAND, "Apply Intelligently: its body", body_only=True)
            else:
                memory.add(path, ON_DEMAND, "rule applied on demand", body_only=True)


_READERS: dict[str, Callable[[_Collector, Path, Path, int], None]] = {
    "claude": _claude,
    "codex": _codex,
    "gemini": _gemini,
    "copilot": _copilot,
    "cursor": _cursor,
}


def measure_memory(
    root: Path,
    host: str,
    *,
    cwd: Path | None = None,
    max_bytes: int = CODEX_MAX_BYTES,
    settings: RuleOverrides | None = None,
) -> MemoryReport:
    """One host's memory in the repository at ``root``, for a session started in ``cwd``.

    Raises ``UsageError`` for an unknown host or a working folder outside the repository,
    ``CouldNotJudge`` when the repository is missing or a chain file cannot be read.
    """
    if host not in _READERS:
        raise UsageError(f"memory host must be one of {', '.join(HOSTS)}, not {host!r}")
    if isinstance(max_bytes, bool) or not isinstance(max_bytes, int) or max_bytes < 0:
        raise UsageError(f"max_bytes must be a whole number of bytes, not {max_bytes!r}")
    root = Path(root)
    if not root.is_dir():
        raise CouldNotJudge(f"{root}: not a folder (the repository to read memory files from)")
    cwd = root if cwd is None else Path(cwd)
    if not is_inside(os.path.realpath(cwd), os.path.realpath(root)):
        raise UsageError(f"{cwd}: the working folder must be inside the repository {root}")
    if not cwd.is_dir():
        raise CouldNotJudge(f"{cwd}: the working folder does not exist")
    collector = _Collector(
        root, tokens.O200kCounter(), settings or RuleOverrides(), BY_MEMORY[host]
    )
    _READERS[host](collector, root, cwd, max_bytes)
    return collector.report(host, cwd)


def hosts_in(root: Path) -> list[str]:
    """The hosts whose memory files sit at the repository's root (``toll surface`` measures
    these; ``toll init`` finds the same places through its walk of the tree)."""
    root = Path(root)
    found: list[str] = []
    for host in HOSTS:
        files, folders = MEMORY_PLACES[host]
        paths = [root / name for name in files]
        for top, suffix in folders:
            paths += walk_files(root / top, suffix, root)
        if any(path.is_file() for path in paths):
            found.append(host)
    return found
