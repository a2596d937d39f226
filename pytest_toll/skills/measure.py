"""Agent Skills at their three progressive-disclosure levels.

A host lists every installed skill by its ``metadata`` (``name + ": " + description``) at the
start of each session, loads the ``body`` of SKILL.md (the text after the frontmatter) when
the skill is activated, and reads the ``references`` the body points to (files inside the
skill folder) on demand. This module finds skills, measures each level in o200k tokens and
hands the records to :mod:`pytest_toll.skills.rules` for the S101–S106 judgement.

Two promises shape the code:

- nothing outside a skill folder is ever read: a reference is resolved (symlinks included)
  and checked for containment *before* it is opened, and opened without following a
  last-moment symlink;
- a broken skill is a finding, never a crash: unreadable SKILL.md, missing or broken
  frontmatter and non-string fields all become S101 findings on a skill that is still listed.

Line endings are normalised to ``\\n`` before counting, so a checkout with CRLF line endings
(git on Windows) measures exactly what its LF twin measures and pins do not drift by platform.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import Finding, RuleSettings, worst_first
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.core.textio import decode_text

SKILL_FILE = "SKILL.md"

# Directories never searched for skills: they hold vendored or generated trees, not a
# catalogue, and walking them is slow.
_SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__"})


# --- records ----------------------------------------------------------------------------


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
    """A reference that was not read: ``kind`` is ``missing``, ``escape`` or ``unreadable``."""

    target: str
    kind: str
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

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "path": self.path,
            "metadata": self.metadata,
            "body": self.body,
            "body_lines": self.body_lines,
            "references": [reference.as_dict() for reference in self.references],
            "references_total": self.references_total,
        }


@dataclass(frozen=True)
class SkillsReport:
    """A catalogue (or a single skill) measured: per-skill levels, totals and findings."""

    path: str
    skills: tuple[Skill, ...]
    totals: Mapping[str, int]
    findings: tuple[Finding, ...]
    window: int = DEFAULT_WINDOW
    tokenizer: str = tokens.TOKENIZER_NAME
    #: How every count in the report was made (always the exact o200k count).
    method: str = tokens.O200K

    @property
    def metadata_share(self) -> float:
        """The always-on cost (all metadata) as a fraction of the context window."""
        return self.totals["metadata"] / self.window

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "skills",
            "tokenizer": self.tokenizer,
            "skills": [skill.as_dict() for skill in self.skills],
            "totals": dict(self.totals),
            "findings": [finding.as_dict("skill") for finding in self.findings],
        }


# --- discovery --------------------------------------------------------------------------


def find_skill_folders(path: Path) -> list[Path]:
    """The skill folders at ``path``: itself, its parent for a SKILL.md, or all below it.

    A folder holding SKILL.md is one skill and is not searched further (its references/ may
    hold example SKILL.md files). Symlinked folders are followed, once each, because
    installed catalogues are often links to checkouts elsewhere.
    """
    if not os.path.lexists(path):
        raise CouldNotJudge(f"{path}: no such file or directory")
    if not path.exists():
        raise CouldNotJudge(f"{path}: a symlink to nothing")
    if path.is_file():
        if path.name == SKILL_FILE:
            return [path.parent]
        raise CouldNotJudge(f"{path}: not a skill folder (a folder holding {SKILL_FILE})")
    if (path / SKILL_FILE).is_file():
        return [path]
    found: list[Path] = []
    seen: set[tuple[int, int]] = set()

    def refuse(error: OSError) -> None:
        raise CouldNotJudge(
            f"{error.filename}: cannot search for skills: {error.strerror or error}"
        )

    for directory, subdirectories, files in os.walk(path, onerror=refuse, followlinks=True):
        try:
            here = os.stat(directory)
        except OSError:  # removed while we walked: nothing left to measure there
            subdirectories[:] = []
            continue
        if (here.st_dev, here.st_ino) in seen:  # a symlink loop or a second link
            subdirectories[:] = []
            continue
        seen.add((here.st_dev, here.st_ino))
        if SKILL_FILE in files:
            found.append(Path(directory))
            subdirectories[:] = []
            continue
        subdirectories[:] = sorted(d for d in subdirectories if d not in _SKIPPED_DIRECTORIES)
    if not found:
        raise CouldNotJudge(
            f"{path}: no {SKILL_FILE} found (not a skill folder or a folder of skill folders)"
        )
    return sorted(found)


# --- SKILL.md: frontmatter and body -----------------------------------------------------

_FENCE = re.compile(r"---[ \t]*\Z")


@dataclass(frozen=True)
class ParsedSkillFile:
    """SKILL.md split into its frontmatter mapping and body; ``problem`` when it could not be."""

    frontmatter: Mapping[str, Any] | None
    body: str
    body_start_line: int
    problem: str | None = None


def normalize_newlines(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


def parse_skill_file(text: str) -> ParsedSkillFile:
    """Split SKILL.md text (BOM already removed) at its ``---`` fences and load the YAML.

    Never raises: a file without a frontmatter, with an unclosed one, broken YAML or a
    frontmatter that is not a mapping comes back with ``problem`` set. The body is the
    text after the closing fence line (the whole file when there is no frontmatter).
    """
    text = normalize_newlines(text)
    lines = text.split("\n")
    if not lines or not _FENCE.match(lines[0]):
        return ParsedSkillFile(
            None, text, 1, f"{SKILL_FILE} has no YAML frontmatter (its first line must be ---)"
        )
    closing = next((i for i in range(1, len(lines)) if _FENCE.match(lines[i])), None)
    if closing is None:
        return ParsedSkillFile(
            None, text, 1, f"{SKILL_FILE} frontmatter opened on line 1 is never closed by ---"
        )
    yaml_text = "\n".join(lines[1:closing])
    body = "\n".join(lines[closing + 1 :])
    body_start = closing + 2
    loaded, problem = _load_yaml(yaml_text)
    if problem is not None:
        return ParsedSkillFile(None, body, body_start, problem)
    if loaded is None:
        return ParsedSkillFile(None, body, body_start, f"{SKILL_FILE} frontmatter is empty")
    if not isinstance(loaded, dict):
        return ParsedSkillFile(
            None,
            body,
            body_start,
            f"{SKILL_FILE} frontmatter must be a mapping of fields, not {_kind(loaded)}",
        )
    return ParsedSkillFile(loaded, body, body_start)


def _load_yaml(text: str) -> tuple[Any, str | None]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        return yaml.load(text, Loader=loader), None  # a safe loader: no object tags
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        # +2: the mark is 0-based and the YAML starts on the line after the opening ---.
        where = f" line {mark.line + 2}" if mark is not None else ""
        reason = error.problem or error.context or "invalid YAML"
        return None, f"{SKILL_FILE}{where}: frontmatter is not valid YAML: {reason}"
    except (yaml.YAMLError, ValueError, TypeError, RecursionError, OverflowError) as error:
        # The C loader raises plain YAMLError; odd scalars (dates, huge ints) raise ValueError
        # or OverflowError while being constructed; deep nesting can exhaust the stack.
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return None, f"{SKILL_FILE}: frontmatter is not valid YAML: {reason}"


def _kind(value: object) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return f"a {type(value).__name__}"


def metadata_text(name: str, description: str) -> str:
    """What a host lists for an installed skill at the start of every session."""
    return f"{name}: {description}"


# --- references -------------------------------------------------------------------------

# Markdown inline links and images: [text](target "title") / ![alt](<target>).
_INLINE_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+[^)\n]*)?\)")
# Reference-style link definitions: [id]: target "title".
_LINK_DEFINITION = re.compile(r"^[ ]{0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
# Bare paths: into the folders skills conventionally hold, optionally ./ or ../-prefixed, or
# any other ./ or ../ path naming a file (checked in _bare_paths). The spec's own folders,
# and explicitly relative paths, are surely the skill's: missing, they are reported. A bare
# templates/, examples/ or docs/ path may as well name a file of the user's project, so it
# is counted when the skill holds it and otherwise left alone.
_SPEC_FOLDERS = ("references/", "scripts/", "assets/")
_CONVENTIONAL_FOLDERS = (
    "references/",
    "reference/",
    "scripts/",
    "assets/",
    "templates/",
    "examples/",
    "docs/",
)
_BARE_PATH = re.compile(
    r"(?:\.\.?/)+[\w.\-/]*[\w\-]"
    r"|(?:references?|scripts|assets|templates|examples|docs)/[\w.\-/]*[\w\-]"
)
_PATH_RUN = re.compile(r"[\w.\-/]+")
_FILE_NAME = re.compile(r"\.\w+\Z")


def _is_path_character(character: str) -> bool:
    return character.isalnum() or character in "_.-/"


def _bare_paths(body: str, skip: Sequence[tuple[int, int]] = ()) -> Iterator[tuple[str, bool]]:
    """Bare relative paths in ``body`` outside the ``skip`` spans (the Markdown links), each
    with whether it surely belongs to the skill (see _SPEC_FOLDERS).

    Every path holds a slash, and prose holds few: visiting each slash and taking the whole
    run of path characters around it measured several times faster than a regex scan of the
    text (bench/skills.py). A run glued to ``:`` or ``~`` is part of a URL or a home path.
    """
    position = body.find("/")
    while position != -1:
        start = position
        while start and _is_path_character(body[start - 1]):
            start -= 1
        run = _PATH_RUN.match(body, start)
        end = run.end() if run is not None else position + 1
        position = body.find("/", end)
        if start and body[start - 1] in ":~":
            continue
        if any(low <= start < high for low, high in skip):
            continue
        path = body[start:end].rstrip("./")
        if not _BARE_PATH.fullmatch(path):
            continue
        if path.startswith("."):
            rest = path.lstrip("./")
            if not rest.startswith(_CONVENTIONAL_FOLDERS) and not _FILE_NAME.search(path):
                continue
            yield path, True
        else:
            yield path, path.startswith(_SPEC_FOLDERS)


_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def find_reference_targets(body: str) -> list[str]:
    """Relative file targets the body points to, in first-seen order, without duplicates.

    URLs, in-page anchors and e-mail links are not references; fragments and queries are
    dropped. Absolute paths are kept: they are reported as escaping the skill folder.
    """
    return [target for target, _ in find_references(body)]


def find_references(body: str) -> list[tuple[str, bool]]:
    """Each reference target with whether a missing file is worth reporting (``strict``).

    Every Markdown link is strict; bare paths are strict as ``_bare_paths`` says.
    """
    targets: list[tuple[str, bool]] = []
    seen: set[str] = set()

    def add(raw: str, strict: bool = True) -> None:
        target = raw.strip()
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1].strip()
        if not target or target.startswith("#") or _SCHEME.match(target):
            return
        target = target.split("#", 1)[0].split("?", 1)[0]
        target = unquote(target)
        if target and target not in seen:
            seen.add(target)
            targets.append((target, strict))

    links: list[tuple[int, int]] = []
    for pattern in (_INLINE_LINK, _LINK_DEFINITION):
        for match in pattern.finditer(body):
            add(match.group(1))
            links.append(match.span())
    # The bare-path scan skips the links, or it would find pieces of their targets.
    for path, strict in _bare_paths(body, links):
        add(path, strict)
    return targets


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


@dataclass(frozen=True)
class _Resolved:
    relative: str  # posix, relative to the skill folder, as the body names it (normalised)
    real: str  # the fully resolved path, known to be inside the skill folder


def resolve_reference(root_real: str, target: str) -> _Resolved | BrokenReference | None:
    """Where ``target`` points, or why it cannot be read; None for a directory or SKILL.md.

    Containment is checked twice before anything is opened: lexically (``../`` and absolute
    paths never leave the folder) and after resolving symlinks.
    """
    if "\0" in target:
        return BrokenReference(target, "missing", "is not a valid path")
    if os.path.isabs(target) or target.startswith("~"):
        return BrokenReference(target, "escape", "is an absolute path outside the skill folder")
    lexical = os.path.normpath(os.path.join(root_real, target))
    if not _inside(lexical, root_real):
        return BrokenReference(target, "escape", "points outside the skill folder (../)")
    relative = Path(os.path.relpath(lexical, root_real)).as_posix()
    try:
        real = os.path.realpath(lexical)
    except (OSError, ValueError) as error:
        return BrokenReference(target, "unreadable", f"cannot be resolved: {error}")
    if not _inside(real, root_real):
        return BrokenReference(
            target, "escape", "is a symlink that resolves outside the skill folder"
        )
    if not os.path.lexists(real):
        return BrokenReference(target, "missing", "does not exist in the skill folder")
    if os.path.isdir(real) or relative in (".", SKILL_FILE):
        return None
    return _Resolved(relative, real)


_SNIFF_BYTES = 1 << 16


def read_inside(real: str) -> bytes | None:
    """The bytes of a regular file already resolved inside the skill folder; None if binary.

    ``O_NOFOLLOW`` refuses a final component swapped for a symlink since it was resolved;
    ``O_NONBLOCK`` keeps a FIFO from hanging the measurement (it is then refused as not a
    regular file). A NUL byte in the first 64 KiB marks a binary file, which is then not
    read any further: a skill's video or archive asset costs no time or memory.
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(real, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", real)
        chunks = [os.read(descriptor, _SNIFF_BYTES)]
        if b"\0" in chunks[0]:
            return None
        while chunk := os.read(descriptor, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(descriptor)


def line_count(text: str) -> int:
    """Lines as an editor numbers them: a final line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


# --- measurement ------------------------------------------------------------------------


def _folder_name(folder: Path) -> str:
    # abspath, not resolve: in a catalogue of symlinks the host sees the link's name.
    return os.path.basename(os.path.abspath(folder))


def _display(folder: Path) -> str:
    return folder.as_posix()


def measure_skill(folder: Path, counter: tokens.O200kCounter) -> Skill:
    """One skill folder measured at its three levels; problems become fields, not errors."""
    # skill_rules imports this module's records, so it is imported when first needed.
    from pytest_toll.skills import rules as skill_rules

    folder_name = _folder_name(folder)
    root_real = os.path.realpath(folder)
    skill_file = os.path.join(root_real, SKILL_FILE)
    broken: list[BrokenReference] = []
    text = ""
    problem: str | None = None
    real_skill_file = os.path.realpath(skill_file)
    if not _inside(real_skill_file, root_real):
        broken.append(
            BrokenReference(
                SKILL_FILE, "escape", "is a symlink that resolves outside the skill folder"
            )
        )
        problem = f"{SKILL_FILE} was not read: it resolves outside the skill folder"
    else:
        try:
            data = read_inside(real_skill_file)
            text = decode_text(b"\0" if data is None else data, SKILL_FILE)
        except CouldNotJudge as error:
            problem = str(error)
        except OSError as error:
            problem = f"{SKILL_FILE}: cannot read: {error.strerror or error}"
    parsed = parse_skill_file(text) if problem is None else ParsedSkillFile(None, "", 1, problem)

    fields = parsed.frontmatter or {}
    name_field = fields.get("name")
    name = name_field if isinstance(name_field, str) and name_field.strip() else folder_name
    description_field = fields.get("description")
    description = description_field if isinstance(description_field, str) else ""

    body = parsed.body
    references: list[Reference] = []
    depths: list[tuple[str, int]] = []
    for target, strict in find_references(body):
        resolved = resolve_reference(root_real, target)
        if resolved is None:
            continue
        if isinstance(resolved, BrokenReference):
            if strict or resolved.kind != "missing":
                broken.append(resolved)
            continue
        if any(reference.path == resolved.relative for reference in references):
            continue  # ./references/a.md and references/a.md are one file
        depths.append((resolved.relative, resolved.relative.count("/")))
        try:
            data = read_inside(resolved.real)
        except OSError as error:
            broken.append(
                BrokenReference(target, "unreadable", f"cannot be read: {error.strerror or error}")
            )
            continue
        try:
            if data is None:
                raise CouldNotJudge(f"{resolved.relative}: binary file")
            reference_text = normalize_newlines(decode_text(data, resolved.relative))
        except CouldNotJudge:
            references.append(Reference(resolved.relative, None, binary=True))
            continue
        references.append(
            Reference(
                resolved.relative,
                counter.count(reference_text),
                injections=tuple(skill_rules.injection_hits(reference_text)),
            )
        )
    references.sort(key=lambda reference: reference.path)
    return Skill(
        name=name,
        path=_display(folder),
        metadata=counter.count(metadata_text(name, description)),
        body=counter.count(body),
        body_lines=line_count(body),
        references=tuple(references),
        references_total=sum(reference.tokens or 0 for reference in references),
        folder_name=folder_name,
        description=description,
        frontmatter=parsed.frontmatter,
        frontmatter_problem=parsed.problem,
        body_start_line=parsed.body_start_line,
        body_text=body,
        broken_references=tuple(broken),
        reference_depths=tuple(depths),
    )


def measure_skills(
    path: Path,
    *,
    window: int = DEFAULT_WINDOW,
    settings: RuleSettings | None = None,
) -> SkillsReport:
    """Measure the skill (or catalogue of skills) at ``path`` and judge it by S101–S106.

    Raises ``CouldNotJudge`` when ``path`` is missing or holds no SKILL.md, and
    ``UsageError`` for a window that is not a positive whole number.
    """
    from pytest_toll.skills import rules as skill_rules

    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise UsageError(f"window must be a positive whole number of tokens, not {window!r}")
    settings = settings or RuleSettings()
    path = Path(path)
    counter = tokens.O200kCounter()
    skills = tuple(measure_skill(folder, counter) for folder in find_skill_folders(path))
    totals = {
        "metadata": sum(skill.metadata for skill in skills),
        "body": sum(skill.body for skill in skills),
        "references": sum(skill.references_total for skill in skills),
    }
    findings = worst_first(skill_rules.check(skills, settings))
    return SkillsReport(
        path=_display(path),
        skills=skills,
        totals=totals,
        findings=tuple(findings),
        window=window,
    )


# --- text report ------------------------------------------------------------------------


def _share(tokens_: int, window: int) -> str:
    share = 100 * tokens_ / window
    return f"{share:.2g}%" if share < 1 else f"{share:.1f}%"


def render_text(report: SkillsReport) -> str:
    """The terminal report: one row per skill, its reference files, totals, findings."""
    header = ("metadata", "body", "lines", "references", "skill")
    rows = [
        (
            f"{skill.metadata:,}",
            f"{skill.body:,}",
            f"{skill.body_lines:,}",
            f"{skill.references_total:,}",
            f"{skill.name}  ({skill.path})",
        )
        for skill in report.skills
    ]
    totals = report.totals
    total_row = (
        f"{totals['metadata']:,}",
        f"{totals['body']:,}",
        "",
        f"{totals['references']:,}",
        f"total ({len(report.skills)} skill{'s' if len(report.skills) != 1 else ''})",
    )
    widths = [max(len(row[i]) for row in [header, *rows, total_row]) for i in range(4)]

    def line(row: Sequence[str]) -> str:
        return "  ".join(cell.rjust(width) for cell, width in zip(row, widths)) + f"  {row[4]}"

    out = [line(header)]
    for skill, row in zip(report.skills, rows):
        out.append(line(row))
        indent = " " * (sum(widths) + 2 * len(widths))
        for reference in skill.references:
            amount = "binary, not counted" if reference.binary else f"{reference.tokens:,}"
            out.append(f"{indent}  {reference.path}: {amount}")
    out.append(line(total_row))
    out.append(
        f"always loaded: {totals['metadata']:,} tokens of metadata, "
        f"~{_share(totals['metadata'], report.window)} of a {report.window:,}-token window; "
        f"bodies load on activation, references on demand"
    )
    out.append(f"method: {tokens.O200K} ({report.tokenizer})")
    if report.findings:
        out.append("")
        out.extend(str(finding) for finding in report.findings)
    return "\n".join(out)
