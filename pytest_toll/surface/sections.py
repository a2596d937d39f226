"""Markdown sections of a memory file or a skill body, and the two tests ``toll fix
--surface`` asks of a section: is it a procedure, and is it about one folder.

The text is third party's (any repository's CLAUDE.md, AGENTS.md, SKILL.md), so the splitter
never raises and is linear in the text: a section is an ATX heading (``#`` to ``######`` up
to three spaces in, outside fenced code blocks) and every line up to the next heading of
the same or a higher level. Setext headings (a line underlined with ``===``) are not
sections: memory files rarely use them, and a wrong guess would cut prose in two.

**A procedure** (:func:`procedure_test`), decided on the section's lines after its heading
(blank lines and subheadings left out of the count):

- *steps*: at least :data:`MIN_STEPS` ordered list items (``1.``, ``2)``) that read as
  steps, not labels (a label is one word, or words all capitalised: "Code Quality" over a
  list of rules; "Pull main." is a step) and, with the lines that continue them (indented lines
  under an item) and fenced code blocks, at least :data:`MOSTLY` of the lines; or
- *a how-to block*: a heading that says so (``How to …``, ``Steps to …``, ``To …``) over a
  body that is at least :data:`MOSTLY` fenced code;
- never a section whose heading names rules (``Rules``, ``Guidelines``, ``Conventions``,
  ``Requirements``, ``Policy``, ``Principles``, ``Standards``, ``Style``): a numbered list of
  rules applies to every task, so it is always-on by nature (the MCP Python SDK's
  CLAUDE.md numbers its "Core Development Rules");
- never a section holding an ``@path`` import: its text is not the section's alone (the
  imported file would move out of the memory chain with it).

**About one folder** (:func:`folder_of`): the heading names an existing folder of the
repository (``## frontend``, ``## `packages/api` ``), or the section mentions at least
:data:`MIN_PATHS` distinct paths (``packages/api/src/x.ts``) and all of them lie in one
existing folder below the root; the deepest such folder is the one. Hidden and vendored
folders never count. (One path named twice is a detail, not a subject: openai-agents-python's
``$release-candidate-prep`` section names ``tests/fixtures/…json`` and is about a skill.)

**The body's own instructions** (:func:`keeps_in_body`): a skill body keeps its procedures,
its numbered steps (a heading ``3. Run the gates`` or ``Step 3``), the sections that say
how to use it (``Workflow``, ``Steps``, ``Quick start``, ``Usage``, ``Instructions``,
``Overview``, ``When to use``) and the ones that bound it (a heading naming rules, a
policy, its purpose, boundaries, guarantees or constraints: what the agent must hold to
whenever the skill runs); the rest may move to ``references/``.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_toll.core.textio import resolves_inside
from pytest_toll.surface.files import SKIPPED_DIRECTORIES
from pytest_toll.surface.imports import find_imports, looks_like_path

#: Ordered list items a section needs to be a list of steps.
MIN_STEPS = 3
#: Distinct paths a section must mention, all in one folder, to be about it by content.
MIN_PATHS = 2
#: The share of a section's lines that steps (or code) must be for it to be a procedure.
MOSTLY = 0.6

_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\Z")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ORDERED = re.compile(r"^ {0,3}\d{1,9}[.)](?:[ \t]|\Z)")
_RULES = re.compile(
    r"\b(?:rules?|guidelines?|conventions?|requirements?|polic(?:y|ies)|principles?|"
    r"standards?|style)\b",
    re.IGNORECASE,
)
_OWN = re.compile(
    r"^(?:\d+[.)]|step\s+\d+\b)|\b(?:workflow|steps|quick[ -]?start|usage|instructions|"
    r"overview|when to use|how to use)\b",
    re.IGNORECASE,
)
_BOUNDS = re.compile(r"\b(?:purpose|boundar(?:y|ies)|guarantees?|constraints?)\b", re.I)
_HOW_TO = re.compile(r"^(?:how[ -]to|steps? to|to)\b", re.IGNORECASE)
_URL = re.compile(r"[A-Za-z][\w+.-]*://\S+")
_PATH = re.compile(r"(?<![\w.@/-])(?:\./)?([\w@-][\w.@-]*(?:/[\w.@-]+)*/?)")


@dataclass(frozen=True)
class Section:
    """One ATX heading and the lines it heads: ``lines[start:end]`` of the text split at
    ``\\n``, the heading line first."""

    level: int
    title: str
    start: int
    end: int

    @property
    def line(self) -> int:
        """The heading's 1-based line."""
        return self.start + 1


def _fence_closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {fence[0]}


def code_lines(lines: Sequence[str]) -> list[bool]:
    """Per line: whether it is part of a fenced code block (the fence lines included)."""
    flags: list[bool] = []
    fence: str | None = None
    for line in lines:
        if fence is not None:
            flags.append(True)
            if _fence_closes(line, fence):
                fence = None
            continue
        opening = _FENCE_OPEN.match(line)
        if opening:
            fence = opening.group(1)
        flags.append(bool(opening))
    return flags


def split_sections(text: str) -> list[Section]:
    """Every section of ``text``, in the order of their headings; nested sections overlap
    their parent's range (a ``###`` inside a ``##``)."""
    lines = text.split("\n")
    in_code = code_lines(lines)
    headings: list[tuple[int, int, str]] = []
    for number, line in enumerate(lines):
        if in_code[number]:
            continue
        match = _HEADING.match(line)
        if match:
            headings.append((number, len(match.group(1)), (match.group(2) or "").strip()))
    sections: list[Section] = []
    # Each heading's end is the next heading at its level or above: a stack of open ones.
    open_: list[tuple[int, int, str]] = []
    ends: dict[int, int] = {}
    for number, level, _title in headings:
        while open_ and open_[-1][1] >= level:
            ends[open_.pop()[0]] = number
        open_.append((number, level, _title))
    for number, _level, _title in open_:
        ends[number] = len(lines)
    for number, level, title in headings:
        sections.append(Section(level, title, number, ends[number]))
    return sections


def children(section: Section, sections: Sequence[Section]) -> list[Section]:
    """The sections directly inside ``section`` (one level of nesting down)."""
    inside = [s for s in sections if section.start < s.start < section.end]
    return [s for s in inside if not any(o.start < s.start < o.end for o in inside if o != s)]


def section_lines(text: str, section: Section) -> list[str]:
    return text.split("\n")[section.start : section.end]


def has_imports(lines: Sequence[str]) -> bool:
    """Whether the lines hold an ``@path`` import (a mention such as ``@octocat`` is none)."""
    return any(looks_like_path(found.target) for found in find_imports("\n".join(lines)))


def _is_label(text: str) -> bool:
    """An ordered item that names a topic rather than says what to do: one word, or every
    word capitalised ("Code Quality", "**Type Checking**")."""
    words = [word.strip("*_`:.") for word in text.split()]
    words = [word for word in words if word]
    return len(words) < 2 or all(word[0].isupper() for word in words if word[0].isalpha())


def procedure_test(lines: Sequence[str]) -> str | None:
    """Why the section (its heading line first) is a procedure, or None when it is not."""
    if not lines or has_imports(lines):
        return None
    heading = _HEADING.match(lines[0])
    title = (heading.group(2) or "").strip() if heading else ""
    if _RULES.search(title):
        return None
    body = list(lines[1:])
    in_code = code_lines(body)
    counted = steps = step_lines = code = 0
    in_step = False
    for line, is_code in zip(body, in_code):
        if is_code:
            counted += 1
            code += 1
            continue
        if not line.strip():
            continue
        if _HEADING.match(line):
            in_step = False
            continue  # a subheading is structure, neither step nor prose
        counted += 1
        ordered = _ORDERED.match(line)
        if ordered:
            steps += not _is_label(line[ordered.end() :])
            step_lines += 1
            in_step = True
        elif in_step and line[:1] in (" ", "\t"):
            step_lines += 1  # a line that continues the step above it
        else:
            in_step = False
    if counted == 0:
        return None
    if steps >= MIN_STEPS and (step_lines + code) / counted >= MOSTLY:
        return f"{steps} ordered steps"
    if code and _HOW_TO.match(title.strip("`* ")) and code / counted >= MOSTLY:
        return "a how-to block"
    return None


def _is_folder(root: Path, relative: str) -> bool:
    parts = relative.split("/")
    if any(part.startswith(".") or part in SKIPPED_DIRECTORIES for part in parts):
        return False
    path = root.joinpath(*parts)
    return path.is_dir() and not path.is_symlink() and resolves_inside(path, root)


def _deepest_folder(root: Path, mention: str) -> str | None:
    parts = [part for part in mention.strip("/").split("/") if part]
    found: str | None = None
    for depth in range(1, len(parts) + 1):
        candidate = "/".join(parts[:depth])
        if not _is_folder(root, candidate):
            break
        found = candidate
    return found


def _mentions(text: str) -> list[str]:
    """Path-like words with a slash (``src/app.ts``, ``web/``), URLs left out."""
    text = _URL.sub(" ", text)
    return [match.group(1) for match in _PATH.finditer(text) if "/" in match.group(1)]


def _common(folders: Sequence[str]) -> str | None:
    split = [folder.split("/") for folder in folders]
    common: list[str] = []
    for parts in zip(*split):
        if len(set(parts)) != 1:
            break
        common.append(parts[0])
    return "/".join(common) or None


def folder_of(lines: Sequence[str], root: Path) -> str | None:
    """The one existing folder below ``root`` the section (heading line first) is about."""
    if not lines:
        return None
    heading = _HEADING.match(lines[0])
    title = (heading.group(2) or "") if heading else ""
    named = {f for m in _mentions(title) if (f := _deepest_folder(root, m))}
    for word in re.split(r"[^\w.@/-]+", title):
        word = word.strip("/.")
        if word and "/" not in word and _is_folder(root, word):
            named.add(word)
        elif word and "/" not in word and _is_folder(root, word.lower()):
            named.add(word.lower())
    if len(named) == 1:
        return named.pop()
    if named:
        return None  # the heading names several folders: about none of them alone
    mentions = set(_mentions("\n".join(lines[1:])))
    found = [f for m in mentions if (f := _deepest_folder(root, m))]
    if len(mentions) < MIN_PATHS or len(found) < len(mentions):
        return None  # too few paths, or some outside any folder: not about one folder
    return _common(found)


def keeps_in_body(lines: Sequence[str]) -> bool:
    """Whether a skill body's section (heading line first) is the body's own instructions."""
    heading = _HEADING.match(lines[0]) if lines else None
    title = (heading.group(2) or "").strip("`*_ ") if heading else ""
    return bool(_OWN.search(title) or _RULES.search(title) or _BOUNDS.search(title)) or (
        procedure_test(lines) is not None
    )


def shift_headings(lines: Sequence[str], up: int) -> list[str]:
    """``lines`` with every heading (outside code blocks) ``up`` levels higher, never above
    ``#``: a ``##`` section becomes a skill's ``#`` title, its ``###`` its ``##``."""
    in_code = code_lines(lines)
    shifted = []
    for line, is_code in zip(lines, in_code):
        match = None if is_code else _HEADING.match(line)
        if match:
            hashes = match.group(1)
            at = line.index(hashes)
            line = "#" * max(1, len(hashes) - up) + line[at + len(hashes) :]
        shifted.append(line)
    return shifted


def slug(title: str, fallback: str = "procedure") -> str:
    """A skill's or a reference's name from a heading: lowercase ASCII letters and digits in
    hyphen-separated words, at most 64 characters (the Agent Skills name rule)."""
    ascii_text = unicodedata.normalize("NFKD", title).encode("ascii", "ignore").decode()
    words = re.sub(r"[^a-z0-9]+", "-", ascii_text.lower()).strip("-")
    while len(words) > 64:
        words = words[:64].rsplit("-", 1)[0] if "-" in words[:64] else words[:64]
    return words or fallback
