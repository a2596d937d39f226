"""Agent Skills at their three progressive-disclosure levels, measured.

A host lists every installed skill by its ``metadata`` (``name + ": " + description``) at the
start of each session, loads the ``body`` of SKILL.md (the text after the frontmatter) when
the skill is activated, and reads the ``references`` the body points to (files inside the
skill folder, named by the body or by a file it loads) on demand; scripts it runs are its
``executed`` part, kept apart (see :mod:`pytest_toll.skills.loading`). This module finds skills, measures each level in o200k tokens and
hands the records to :mod:`pytest_toll.skills.rules` for the S101–S106 judgement.

Two promises shape the code:

- nothing outside a skill folder is ever read (see :mod:`pytest_toll.skills.references`);
- a broken skill is a finding, never a crash: unreadable SKILL.md, missing or broken
  frontmatter and non-string fields all become S101 findings on a skill that is still listed.

Line endings are normalised to ``\\n`` before counting, so a checkout with CRLF line endings
(git on Windows) measures exactly what its LF twin measures and pins do not drift by platform.
"""

from __future__ import annotations

import os
from pathlib import Path

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import RuleOverrides, worst_first
from pytest_toll.core.limits import DEFAULT_WINDOW, MAX_WALK_DEPTH
from pytest_toll.core.textio import decode_text, is_inside
from pytest_toll.skills import rules as skill_rules
from pytest_toll.skills.loading import SkillFiles, gather
from pytest_toll.skills.parse import (
    ParsedSkillFile,
    line_count,
    parse_skill_file,
)
from pytest_toll.skills.records import (
    SKILL_FILE,
    BrokenReference,
    Skill,
    metadata_text,
)
from pytest_toll.skills.references import SkillFileTooLarge, read_inside
from pytest_toll.skills.report import SkillsReport

# Directories never searched for skills: they hold vendored or generated trees, not a
# catalogue, and walking them is slow.
_SKIPPED_DIRECTORIES = frozenset({".git", ".hg", ".svn", "node_modules", "__pycache__"})


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

    real_root = os.path.realpath(path)
    top = len(path.parts)
    for directory, subdirectories, files in os.walk(path, onerror=refuse, followlinks=True):
        if len(Path(directory).parts) - top >= MAX_WALK_DEPTH:
            subdirectories[:] = []  # a bound on a hostile tree (the Files door's depth)
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
        # A symlinked folder that leaves the folder searched is followed only when it is a
        # skill itself (a catalogue of links to checked-out skills): a link to / or a home
        # folder must not turn a skills search into a walk of the disk.
        subdirectories[:] = sorted(
            d
            for d in subdirectories
            if d not in _SKIPPED_DIRECTORIES
            and (
                is_inside(os.path.realpath(os.path.join(directory, d)), real_root)
                or os.path.isfile(os.path.join(directory, d, SKILL_FILE))
            )
        )
    if not found:
        raise CouldNotJudge(
            f"{path}: no {SKILL_FILE} found (not a skill folder or a folder of skill folders)"
        )
    return sorted(found)


# --- measurement ------------------------------------------------------------------------


def _folder_name(folder: Path) -> str:
    # abspath, not resolve: in a catalogue of symlinks the host sees the link's name.
    return os.path.basename(os.path.abspath(folder))


def _display(folder: Path) -> str:
    return folder.as_posix()


def measure_skill(folder: Path, counter: tokens.O200kCounter) -> Skill:
    """One skill folder measured at its three levels; problems become fields, not errors."""
    folder_name = _folder_name(folder)
    root_real = os.path.realpath(folder)
    skill_file = os.path.join(root_real, SKILL_FILE)
    broken: list[BrokenReference] = []
    text = ""
    problem: str | None = None
    real_skill_file = os.path.realpath(skill_file)
    if not is_inside(real_skill_file, root_real):
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
        except SkillFileTooLarge:
            raise
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
    files = gather(root_real, body, counter) if problem is None else SkillFiles()
    broken.extend(files.broken)
    references = files.references
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
        reference_depths=tuple(files.depths),
        executed=tuple(files.executed),
        notes=tuple(files.notes),
    )


def measure_skills(
    path: Path,
    *,
    window: int = DEFAULT_WINDOW,
    settings: RuleOverrides | None = None,
) -> SkillsReport:
    """Measure the skill (or catalogue of skills) at ``path`` and judge it by S101–S106.

    Raises ``CouldNotJudge`` when ``path`` is missing or holds no SKILL.md, and
    ``UsageError`` for a window that is not a positive whole number.
    """
    if isinstance(window, bool) or not isinstance(window, int) or window <= 0:
        raise UsageError(f"window must be a positive whole number of tokens, not {window!r}")
    settings = settings or RuleOverrides()
    path = Path(path)
    counter = tokens.O200kCounter()
    skills = tuple(measure_skill(folder, counter) for folder in find_skill_folders(path))
    totals = {
        "metadata": sum(skill.metadata for skill in skills),
        "body": sum(skill.body for skill in skills),
        "references": sum(skill.references_total for skill in skills),
    }
    # A part only skills that run scripts have: every other report and pin stays as it was.
    if any(skill.executed for skill in skills):
        totals["executed"] = sum(skill.executed_total for skill in skills)
    findings = worst_first(skill_rules.check(skills, settings))
    return SkillsReport(
        path=_display(path),
        skills=skills,
        totals=totals,
        findings=tuple(findings),
        window=window,
    )
