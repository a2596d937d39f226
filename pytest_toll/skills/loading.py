"""What a skill really loads: every file its SKILL.md names, and every file those name.

A skill author names files in many ways: Markdown links, bare paths in prose or code
(``shared/models.md``), file names alone (``FORMS.md``), patterns (``{lang}/README.md``,
``references/program_<strategy>.md``, ``shared/managed-agents-*.md``) and host variables
(``${CLAUDE_PLUGIN_ROOT}/scripts/x.sh``, ``${SKILL_DIR}/x.md``). Every file inside the skill
folder named so, by SKILL.md or by a file it loads (transitively), is gathered here,
whatever its subfolder, and sorted into two parts:

- **loaded**: read into the context on demand (the ``references`` level);
- **executed**: a script the skill tells the agent to run. Its output enters the context,
  its source does not unless the skill says to read it, so its tokens are kept apart and
  never added to what the skill loads.

What cannot be resolved is never an error unless it would have been one as a plain path: a
placeholder that matches no file, a host variable with nothing to stand for, a file of the
plugin outside the skill, and a link to a sibling skill each become a *note*.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass, field

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import MAX_SKILL_FILES
from pytest_toll.core.textio import decode_text, is_inside
from pytest_toll.skills.parse import normalize_newlines
from pytest_toll.skills.records import SKILL_FILE, BrokenReference, Reference
from pytest_toll.skills.references import (
    FILE_NAME,
    SPEC_FOLDERS,
    Mention,
    find_mentions,
    read_inside,
    resolve_reference,
)
from pytest_toll.skills.rules import injection_hits

#: Files a host runs rather than reads, by suffix.
SCRIPT_SUFFIXES = frozenset(
    {".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs", ".ts", ".rb", ".pl", ".ps1", ".php"}
)
# A script named after one of these words on its line is read, not (only) run.
_READ_VERB = re.compile(
    r"\b(?:read|reads|reading|open|view|cat|less|inspect|study|look at|review|edit|modify)\b",
    re.IGNORECASE,
)
# Host variables that stand for the skill folder itself (Claude Code, Codex, other hosts).
_SKILL_FOLDER_VARIABLES = frozenset(
    {"SKILL_DIR", "CLAUDE_SKILL_DIR", "SKILL_ROOT", "SKILL_PATH", "SKILL_HOME", "baseDir"}
)
_PLUGIN_ROOT_VARIABLES = frozenset({"CLAUDE_PLUGIN_ROOT", "PLUGIN_ROOT"})
# How far above a skill folder its plugin's root may be (plugins/<name>/skills/<skill>).
_PLUGIN_ROOT_LEVELS = 4
_SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__"})
# A name glued to one of these is part of a longer path or word (x/FORMS.md, $FORMS.md).
_NAME_GLUE = frozenset("/\\.-_$:~")
_PLACEHOLDER_PIECE = re.compile(r"\{([^{}]*)\}|<[^<>]*>|\*+|…|\.\.\.")


@dataclass
class _Found:
    real: str
    read: bool = False  # named as text to read (or not a script)
    run: bool = False  # a script named to be run


@dataclass
class SkillFiles:
    """Everything gathered for one skill (see the module docstring)."""

    references: list[Reference] = field(default_factory=list)
    executed: list[Reference] = field(default_factory=list)
    broken: list[BrokenReference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: Each file SKILL.md itself names, with its depth in folders (S106 judges it).
    depths: list[tuple[str, int]] = field(default_factory=list)


def plugin_root(skill_root: str) -> str | None:
    """The root of the plugin a skill folder belongs to (``.claude-plugin/plugin.json``)."""
    return _nearest_ancestor(
        skill_root,
        _PLUGIN_ROOT_LEVELS,
        lambda here: os.path.isfile(os.path.join(here, ".claude-plugin", "plugin.json")),
    )


def _nearest_ancestor(skill_root: str, levels: int, holds: Callable[[str], bool]) -> str | None:
    """The nearest folder above ``skill_root``, at most ``levels`` up, for which ``holds``."""
    here = os.path.dirname(skill_root)
    for _ in range(levels):
        if holds(here):
            return here
        parent = os.path.dirname(here)
        if parent == here:
            break
        here = parent
    return None


#: How far up from a skill folder its repository's root (``.git``) is looked for.
_REPOSITORY_ROOT_LEVELS = 8


def repository_root(skill_root: str) -> str | None:
    """The root of the git repository a skill folder lives in (the folder holding ``.git``).

    A project skill (``.claude/skills/x``) is run by an agent whose working directory is the
    repository's root, and its authors name the repository's files from there
    (``./scripts/test``, ``scripts/download_cli.py``): those are files, not broken links.
    """
    return _nearest_ancestor(
        skill_root,
        _REPOSITORY_ROOT_LEVELS,
        lambda here: os.path.lexists(os.path.join(here, ".git")),
    )


#: A path the reader is told to make ("create a ./.env", "write it to `out.json`"): the verb
#: and only filler words between it and the path, on the same line, in the same clause. Kept
#: narrow on purpose: a verb anywhere earlier in the sentence ("create the report from
#: data.csv") must not excuse a missing input, so nothing but articles, "file", "called",
#: "named" and a preposition may stand between the verb and the path.
_TOLD_TO_CREATE = re.compile(
    r"\b(?:create|creates|creating|generate|generates|write|writes|save|saves|touch)"
    r"(?:\s+(?:a|an|the|your|new|empty|file|it|them|called|named|at|in|to|as|into))*"
    r"\s+[`'\"]?$",
    re.IGNORECASE,
)


def _sibling_skill(skill_root: str, target: str, base: str) -> str | None:
    """The folder of another skill that a ``../`` target leads into, if any (never read)."""
    lexical = os.path.normpath(os.path.join(skill_root, base, target))
    catalogue = os.path.dirname(skill_root)
    here = lexical if os.path.isdir(lexical) else os.path.dirname(lexical)
    while is_inside(here, catalogue) and here != catalogue:
        if here != skill_root and os.path.isfile(os.path.join(here, SKILL_FILE)):
            return os.path.relpath(here, catalogue)
        here = os.path.dirname(here)
    return None


def _placeholder_pattern(pattern: str) -> re.Pattern[str]:
    """A placeholder path as a regex over relative paths; ``{a,b}`` is an alternation."""
    pieces: list[str] = []
    position = 0
    for match in _PLACEHOLDER_PIECE.finditer(pattern):
        pieces.append(re.escape(pattern[position : match.start()]))
        choices = match.group(1)
        if choices is not None and "," in choices:
            pieces.append("(?:" + "|".join(re.escape(c.strip()) for c in choices.split(",")) + ")")
        else:
            pieces.append("[^/]*")
        position = match.end()
    pieces.append(re.escape(pattern[position:]))
    return re.compile("".join(pieces))


def _line_before(text: str, position: int) -> str:
    return text[text.rfind("\n", 0, position) + 1 : position]


class _Gatherer:
    def __init__(self, root_real: str, counter: tokens.O200kCounter) -> None:
        self.root = root_real
        self.counter = counter
        self.found: dict[str, _Found] = {}
        self.texts: dict[str, str | None] = {}  # a read file's text (None: binary)
        self.result = SkillFiles()
        self._index: list[str] | None = None
        self._plugin_root: str | bool | None = False  # False: not looked up yet
        self._noted: set[str] = set()
        self._queue: list[tuple[str, str]] = []
        self._repository: str | bool | None = False  # False: not looked up yet
        self._text = ""  # the text being scanned, for a mention's words before it
        self._listings: dict[str, frozenset[str]] = {}

    # -- helpers -------------------------------------------------------------------------

    def note(self, text: str) -> None:
        if text not in self._noted:
            self._noted.add(text)
            self.result.notes.append(text)

    def depth(self, path: str) -> None:
        if all(known != path for known, _ in self.result.depths):
            self.result.depths.append((path, path.count("/")))

    def report(self, broken: BrokenReference) -> None:
        if broken not in self.result.broken:  # named twice, reported once
            self.result.broken.append(broken)

    def plugin(self) -> str | None:
        if self._plugin_root is False:
            self._plugin_root = plugin_root(self.root)
        return self._plugin_root if isinstance(self._plugin_root, str) else None

    def in_repository(self, target: str) -> bool:
        """Whether ``target`` names a file from the root of the skill's git repository."""
        if self._repository is False:
            self._repository = repository_root(self.root)
        if not isinstance(self._repository, str) or os.path.isabs(target):
            return False
        full = os.path.normpath(os.path.join(self._repository, target))
        return is_inside(full, self._repository) and os.path.lexists(full)

    def index(self) -> list[str]:
        """The skill folder's files, relative and posix (symlinked folders not entered)."""
        if self._index is None:
            files: list[str] = []
            for directory, subdirectories, names in os.walk(self.root):
                subdirectories[:] = sorted(
                    d for d in subdirectories if d not in _SKIPPED_DIRECTORIES
                )
                relative = os.path.relpath(directory, self.root)
                files.extend(posixpath.normpath(posixpath.join(relative, n)) for n in sorted(names))
                if len(files) > MAX_SKILL_FILES:
                    break
            self._index = files[:MAX_SKILL_FILES]
        return self._index

    # -- one mention ---------------------------------------------------------------------

    def mention(self, mention: Mention, text: str, base: str, top: bool) -> None:
        """``top``: named by SKILL.md itself (strictness and depth apply only there)."""
        read = bool(_READ_VERB.search(_line_before(text, mention.start)[-80:]))
        if mention.form == "host":
            self.host(mention, top, read)
        elif mention.form == "placeholder":
            self.placeholder(mention, base, top, read)
        else:
            self.literal(mention, base, top, read)

    def host(self, mention: Mention, top: bool, read: bool) -> None:
        shown = f"${{{mention.variable}}}/{mention.target}"
        if mention.variable in _SKILL_FOLDER_VARIABLES:
            self.literal(Mention(mention.target, False, mention.start, "path"), "", top, read)
            return
        if mention.variable in _PLUGIN_ROOT_VARIABLES:
            root = self.plugin()
            if root is None:
                self.note(
                    f"{shown}: no plugin root (.claude-plugin/plugin.json) above the skill; "
                    "not counted"
                )
                return
            full = os.path.normpath(os.path.join(root, mention.target))
            if is_inside(full, self.root):
                relative = os.path.relpath(full, self.root)
                self.literal(Mention(relative, False, mention.start, "path"), "", top, read)
            elif os.path.lexists(full):
                self.note(f"{shown}: a file of the plugin, outside the skill folder; not counted")
            else:
                self.note(f"{shown}: no such file in the plugin; not counted")
        # Any other variable is the user's or a script's ($OUT_DIR/x): not a file of the skill.

    def placeholder(self, mention: Mention, base: str, top: bool, read: bool) -> None:
        pattern = _placeholder_pattern(mention.target)
        matched = False
        for prefix in [base, ""] if base else [""]:
            for relative in self.index():
                if prefix and not relative.startswith(prefix + "/"):
                    continue
                inner = relative[len(prefix) + 1 :] if prefix else relative
                if pattern.fullmatch(inner):
                    matched = True
                    self.literal(Mention(inner, False, mention.start, "path"), prefix, False, read)
            if matched:
                break
        if top and matched:
            self.depth(mention.target)
        if not matched and top and mention.target.lstrip("./").startswith(SPEC_FOLDERS):
            self.note(
                f"{mention.target!r} is a placeholder that names no file in the skill folder; "
                "not counted"
            )

    def listed(self, folder: str, name: str) -> bool:
        """Whether ``folder`` (relative) holds an entry ``name``: one listing per folder, so
        the many words that merely look like file names (``Node.js``) cost no system call."""
        if folder not in self._listings:
            try:
                self._listings[folder] = frozenset(os.listdir(os.path.join(self.root, folder)))
            except OSError:
                self._listings[folder] = frozenset()
        return name in self._listings[folder]

    def literal(self, mention: Mention, base: str, top: bool, read: bool) -> None:
        target = mention.target
        candidates = [posixpath.join(base, target), target] if base else [target]
        if mention.form == "name":
            candidates = [c for c in candidates if self.listed(posixpath.dirname(c), target)]
        first: BrokenReference | None = None
        for candidate in candidates:
            resolved = resolve_reference(self.root, candidate)
            if resolved is None:
                return  # a folder, or SKILL.md itself
            if isinstance(resolved, BrokenReference):
                first = first or resolved
                continue
            self.take(resolved.relative, resolved.real, top, read, target)
            return
        if first is not None:
            self.unresolved(first, mention, base, top)

    def unresolved(self, broken: BrokenReference, mention: Mention, base: str, top: bool) -> None:
        target = mention.target
        strict = mention.strict and top
        lexical = os.path.normpath(os.path.join(self.root, base, target))
        if broken.reason == "escape" and not is_inside(lexical, self.root):
            sibling = None if os.path.isabs(target) else _sibling_skill(self.root, target, base)
            if sibling is not None:
                self.note(
                    f"{target!r} is a cross-skill reference to {sibling!r} "
                    "(measured as its own skill)"
                )
            elif strict:
                self.report(broken)
            return
        if broken.reason == "missing":
            root = self.plugin()
            if strict and root is not None and os.path.lexists(os.path.join(root, target)):
                self.note(
                    f"{target!r} is a file of the plugin, outside the skill folder; not counted"
                )
            elif strict and self.in_repository(target):
                self.note(
                    f"{target!r} is a file of the repository (named from its root), outside "
                    "the skill folder; not counted"
                )
            elif strict and _TOLD_TO_CREATE.search(_line_before(self._text, mention.start)):
                self.note(f"{target!r} is a file the reader is told to create; not checked")
            elif strict:
                self.report(broken)
            return
        if top or mention.strict:
            self.report(broken)  # unreadable, or a symlink out of the folder

    def take(self, relative: str, real: str, top: bool, read: bool, named: str) -> None:
        script = posixpath.splitext(relative)[1] in SCRIPT_SUFFIXES
        found = self.found.get(relative)
        if found is None:
            if len(self.found) >= MAX_SKILL_FILES:
                raise CouldNotJudge(
                    f"names more than {MAX_SKILL_FILES:,} files; the skill is not measured"
                )
            found = self.found[relative] = _Found(real)
            if top:
                self.depth(relative)
        first_read = not found.read and not script
        found.read = found.read or read or not script
        found.run = found.run or (script and not read)
        if first_read:
            text = self.text(relative, named)
            if text is not None:
                self._queue.append((posixpath.dirname(relative), text))

    def text(self, relative: str, named: str) -> str | None:
        """A found file's text (None: binary or unreadable; unreadable is reported)."""
        if relative not in self.texts:
            try:
                data = read_inside(self.found[relative].real)
            except OSError as error:
                reason = f"cannot be read: {error.strerror or error}"
                self.report(BrokenReference(named, "unreadable", reason))
                del self.found[relative]
                return None
            text: str | None = None
            if data is not None:
                try:
                    text = normalize_newlines(decode_text(data, relative))
                except CouldNotJudge:
                    text = None
            self.texts[relative] = text
        return self.texts[relative]

    # -- the whole skill -----------------------------------------------------------------

    def names(self, text: str, base: str) -> list[Mention]:
        """File names written alone (``FORMS.md``) that the folder, or ``base``, holds.

        Looking up each file the folder lists in the text is a few substring searches;
        checking every word of prose that looks like a file name is not. The case is ignored
        (anthropics/skills' pdf says "see REFERENCE.md" of its reference.md): a host on a
        case-insensitive disk reads it as named, and a pin must not depend on the disk.
        """
        mentions: list[Mention] = []
        lowered = text.lower()
        caseless = len(lowered) == len(text)  # else a rare character changed length
        if not caseless:
            lowered = text
        for folder in dict.fromkeys([base, ""]):
            self.listed(folder, "")  # reads the folder's listing once
            for name in sorted(self._listings[folder]):
                if not FILE_NAME.search(name) or name == SKILL_FILE:
                    continue
                wanted = name.lower() if caseless else name
                position = lowered.find(wanted)
                while position != -1:
                    before = text[position - 1] if position else " "
                    end = position + len(name)
                    after = text[end] if end < len(text) else " "
                    glued = before.isalnum() or before in _NAME_GLUE
                    if not glued and not (after.isalnum() or after in "_/"):
                        mentions.append(Mention(name, False, position, "name"))
                        break
                    position = lowered.find(wanted, end)
        return mentions

    def scan(self, text: str, base: str, top: bool) -> None:
        self._text = text
        for mention in [*find_mentions(text), *self.names(text, base)]:
            self.mention(mention, text, base, top)

    def run(self, body: str) -> SkillFiles:
        self.scan(body, "", True)
        while self._queue:
            base, loaded = self._queue.pop(0)
            self.scan(loaded, base, False)
        for relative in sorted(self.found):
            found = self.found[relative]
            text = self.text(relative, relative)
            if relative not in self.found:
                continue  # could not be read: reported
            if text is None:
                reference = Reference(relative, None, binary=True)
            else:
                reference = Reference(
                    relative,
                    self.counter.count(text),
                    injections=tuple(injection_hits(text)) if found.read else (),
                )
            (self.result.references if found.read else self.result.executed).append(reference)
        # Depth is a rule about where loaded text lives; a script run from scripts/x/ is not read.
        executed = {script.path for script in self.result.executed}
        self.result.depths = [entry for entry in self.result.depths if entry[0] not in executed]
        return self.result


def gather(root_real: str, body: str, counter: tokens.O200kCounter) -> SkillFiles:
    """Every file of the skill at ``root_real`` that its ``body`` names, transitively."""
    return _Gatherer(root_real, counter).run(body)
