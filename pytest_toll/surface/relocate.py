"""``toll fix --surface``: always-on text moved where it loads on demand, every saving
measured on the written result.

Three moves, each planned on a temporary copy of the repository, applied there, and the
copy re-measured before the move is kept (a move that saves nothing is undone and named):

1. a memory file's **procedure** (:func:`pytest_toll.surface.sections.procedure_test`)
   becomes a skill in the project skill folder of a host that loads the file, and the file
   keeps one line pointing at it (a host or a reader without skills still finds it). Saved:
   each host's bill (:mod:`pytest_toll.surface.bill`) before minus after, the new skill's
   listing on the after side. A host that does not load the file, or lists no skill from
   that folder, saves nothing: its row says why.
2. a **skill body** over ``body_tokens`` (:data:`BODY_TOKENS`, the S104 point where a body
   should use references) moves its largest top-level sections to ``references/<slug>.md``,
   a link line in their place, until it is under; saved: body tokens per use, re-measured
   by the skills measurer. A move that adds an S1xx warning is undone.
3. an **AGENTS.md chain past Codex's cut** (M102): each root section about one existing
   folder (:func:`pytest_toll.surface.sections.folder_of`) moves to that folder's
   AGENTS.md (its AGENTS.override.md when it has one: Codex reads one file per folder,
   the override first). Codex concatenates the files from the repository root down to the
   working folder (openai/codex ``codex-rs/core/src/project_doc.rs`` at commit
   0bd53e457bf7dc40ff77fe2780e9c3070505b3b7: ``discover_project_doc_paths`` walks the git
   root to the cwd, ``read_project_docs`` reads each under the remaining
   ``project_doc_max_bytes``), so the moved text still loads in a session started in that
   folder, and no longer fills a session started anywhere else. Re-measured: bytes past the
   cut at the root and in each folder written to.

Every read goes through the Files door; the copy (:mod:`pytest_toll.surface.workcopy`) is
written with ``write_atomically``, and its ``write_fix`` writes exactly the reported files
under the repository, refusing a path that leaves it, a symlink, or a file changed since it
was measured.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import INFO, RuleOverrides
from pytest_toll.core.hosts import HOSTS, Host
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.parse import parse_skill_file
from pytest_toll.surface.bill import HostBill, has_files, host_bill
from pytest_toll.surface.files import relative
from pytest_toll.surface.memory import CODEX_MAX_BYTES, LOST, measure_memory
from pytest_toll.surface.records import ALWAYS_ON
from pytest_toll.surface.relocate_report import (
    REFERENCE,
    SKILL,
    SPLIT,
    CutChange,
    HostChange,
    HostTotal,
    Move,
    SurfaceFix,
)
from pytest_toll.surface.sections import (
    Section,
    children,
    folder_of,
    keeps_in_body,
    procedure_test,
    shift_headings,
    slug,
    split_sections,
)
from pytest_toll.surface.workcopy import Copy

#: A skill body over this many tokens moves sections to references/ (S104's
#: ``skill_body_tokens_without_references``: past it a body should use references).
BODY_TOKENS = 2000
#: A section moved out of a skill body must save at least this many tokens per use (a link
#: line in its place costs a dozen; a smaller move is noise in the body's outline).
MIN_BODY_SAVING = 100
#: The cross-host skill folder, preferred when a host reads it (Codex reads it and its own).
SHARED_SKILLS = ".agents/skills"


def _lines_without(text: str, section: Section, replacement: list[str]) -> str:
    lines = text.split("\n")
    removed = lines[section.start : section.end]
    keep_gap = bool(removed) and not removed[-1].strip() and bool(replacement)
    return "\n".join(
        [*lines[: section.start], *replacement, *([""] if keep_gap else []), *lines[section.end :]]
    )


def _top_down(
    sections: Sequence[Section], test: Callable[[Section], str | None]
) -> list[tuple[Section, str]]:
    """The outermost sections ``test`` accepts (a file's one ``#`` title is never one)."""
    titles = [s for s in sections if s.level == 1]
    chosen: list[tuple[Section, str]] = []
    for section in sections:
        if len(titles) == 1 and section == titles[0]:
            continue
        if any(c.start <= section.start < c.end for c, _ in chosen):
            continue
        because = test(section)
        if because:
            chosen.append((section, because))
    return chosen


def _skill_text(name: str, title: str, source: str, lines: list[str], level: int) -> str:
    shown = title if len(title) <= 200 else title[:199] + "…"
    description = (
        f'Use when a task calls for "{shown}": the step-by-step procedure moved from {source} '
        "(read on every request) to this skill (read when used)."
    )
    body = shift_headings(lines, level - 1)
    return (
        f"---\nname: {name}\ndescription: {json.dumps(description, ensure_ascii=False)}\n---\n\n"
        + "\n".join(body).rstrip("\n")
        + "\n"
    )


def _bytes_past(report_files: Sequence[object]) -> int:
    return sum(
        getattr(f, "bytes_total", 0) - getattr(f, "bytes_read", 0)
        for f in report_files
        if getattr(f, "loaded", "") in (ALWAYS_ON, LOST)
    )


class _Planner:
    def __init__(
        self,
        copy: Copy,
        hosts: Sequence[Host],
        body_tokens: int,
        max_bytes: int,
        settings: RuleOverrides,
    ) -> None:
        self.copy = copy
        self.hosts = list(hosts)
        self.body_tokens = body_tokens
        self.max_bytes = max_bytes
        self.settings = settings
        self.moves: list[Move] = []
        self.notes: list[str] = list(copy.notes)
        self.cut: list[CutChange] = []
        self.first = self.bills()
        self.current = self.first
        self.saved: dict[str, int] = {host.name: 0 for host in self.hosts}

    def bills(self) -> dict[str, HostBill]:
        return {
            host.name: host_bill(self.copy.path, host, max_bytes=self.max_bytes)
            for host in self.hosts
        }

    def _changes(
        self, after: dict[str, HostBill], source: str, reached: dict[str, str]
    ) -> list[HostChange]:
        """Per host: the bill's drop, counted when the host loaded ``source`` and reaches
        the moved text (``reached``: host -> why not, empty when it does)."""
        changes = []
        for host in self.hosts:
            before, now = self.current[host.name], after[host.name]
            if f"memory/{source}" not in before.parts:
                why, counted = f"does not load {source}", False
            else:
                why = reached.get(host.name, "")
                counted = not why
            changes.append(HostChange(host.name, before.total, now.total, counted, why))
        return changes

    def _keep(self, move: Move, after: dict[str, HostBill]) -> None:
        self.moves.append(move)
        for change in move.hosts:
            self.saved[change.host] += change.saving
        self.current = after

    # --- 1. procedures -> skills ------------------------------------------------------

    def procedures(self) -> None:
        sources: dict[str, list[Host]] = {}
        for host in self.hosts:
            for part in self.current[host.name].parts:
                name = part.removeprefix("memory/")
                if part.startswith("memory/") and "/" not in name:
                    sources.setdefault(name, []).append(host)
        for source, loaders in sorted(sources.items()):
            folders = [f for host in loaders for f in host.skill_folders]
            if not folders:
                names = ", ".join(host.name for host in loaders)
                self.notes.append(
                    f"{source}: {names} lists no project skills (core/hosts.py); its "
                    "procedures stay"
                )
                continue
            folder = SHARED_SKILLS if SHARED_SKILLS in folders else folders[0]
            self._procedures_of(source, folder)

    def _procedures_of(self, source: str, folder: str) -> None:
        text = self.copy.text(source)
        if text is None:
            return
        sections = split_sections(text)
        lines = text.split("\n")
        self._procedures_in(source, folder, sections, lines, None)

    def _procedures_in(
        self,
        source: str,
        folder: str,
        sections: list[Section],
        lines: list[str],
        within: Section | None,
    ) -> None:
        """The outermost procedures (inside ``within``), bottom-up so earlier lines keep
        their place; a procedure that cannot move is searched for smaller ones inside it."""
        inside = [s for s in sections if within is None or within.start < s.start < within.end]
        chosen = _top_down(inside, lambda s: procedure_test(lines[s.start : s.end]))
        for section, because in reversed(chosen):
            if not self._procedure(source, folder, section, because):
                self._procedures_in(source, folder, sections, lines, section)

    def _unique(self, folder: str, name: str) -> str:
        taken = {m.target for m in self.moves}
        candidate, number = name, 1
        while (self.copy.path / folder / candidate).exists() or any(
            t.startswith(f"{folder}/{candidate}/") for t in taken
        ):
            number += 1
            candidate = f"{name[:60]}-{number}"
        return candidate

    def _procedure(self, source: str, folder: str, section: Section, because: str) -> bool:
        text = self.copy.text(source) or ""
        lines = text.split("\n")[section.start : section.end]
        name = self._unique(folder, slug(section.title))
        target = f"{folder}/{name}/SKILL.md"
        snapshot = self.copy.snapshot()
        pointer = f"{section.title}: see the `{name}` skill ({target})."
        self.copy.write(target, _skill_text(name, section.title, source, lines, section.level))
        self.copy.write(source, _lines_without(text, section, [pointer]))
        after = self.bills()
        reached = {
            h.name: f"lists no skill from {folder}: it reaches the procedure only by the "
            "pointer line"
            for h in self.hosts
            if f"skills/{name}" not in after[h.name].parts
        }
        changes = self._changes(after, source, reached)
        problems = self._skill_problems(self.copy.path / folder / name)
        line = self._original_line(source, text.split("\n")[section.start], section.start)
        move = Move(SKILL, source, line, section.title, target, because, tuple(changes))
        if problems or not any(c.saving > 0 for c in changes):
            self.copy.restore(snapshot)
            why = problems or "its skill costs more than it saves"
            self.notes.append(f"{source}:{line} {section.title!r} stays: {why}")
            return False
        self._keep(move, after)
        return True

    def _original_line(self, name: str, heading: str, index: int) -> int:
        """The 1-based line of a heading in the file as the repository has it: an earlier
        move (the split) took lines out above it, never added any."""
        original = self.copy.original.get(name)
        if original is None:
            return index + 1  # not edited yet: the lines are the repository's
        lines = original.split("\n")
        found = [n for n in range(index, len(lines)) if lines[n] == heading]
        return (found[0] if found else index) + 1

    def _skill_problems(self, folder: Path) -> str:
        try:
            report = measure_skills(folder, settings=self.settings.within("skills"))
        except CouldNotJudge as error:
            return str(error)
        bad = [f for f in report.findings if f.severity != INFO]
        return "; ".join(f"{f.rule} {f.message}" for f in bad)

    # --- 2. long skill bodies -> references --------------------------------------------

    def references(self) -> None:
        folders = dict.fromkeys(f for host in self.hosts for f in host.skill_folders)
        for folder in folders:
            try:
                report = measure_skills(self.copy.path / folder)
            except CouldNotJudge:
                continue  # no such folder, or no skill in it
            for skill in report.skills:
                if skill.body > self.body_tokens:
                    self._split_body(Path(skill.path), skill.body)

    def _measure_one(self, folder: Path) -> tuple[int, int]:
        report = measure_skills(folder, settings=self.settings.within("skills"))
        skill = report.skills[0]
        return skill.body, sum(1 for f in report.findings if f.severity != INFO)

    def _split_body(self, folder: Path, body_tokens: int) -> None:
        skill_file = relative(folder / "SKILL.md", self.copy.path)
        text = self.copy.text(skill_file) or ""
        parsed = parse_skill_file(text)
        sections = split_sections(parsed.body)
        levels = sorted({s.level for s in sections})
        titles = [s for s in sections if s.level == 1]
        top = [level for level in levels if not (level == 1 and len(titles) == 1)]
        if not top:
            return
        body_lines = parsed.body.split("\n")
        candidates = [
            s
            for s in sections
            if s.level == top[0] and not keeps_in_body(body_lines[s.start : s.end])
        ]
        sizes = {
            s: len("\n".join(body_lines[s.start : s.end])) for s in candidates
        }  # characters: the order only; the saving is re-measured below
        offset = parsed.body_start_line - 1
        _, problems_before = self._measure_one(folder)
        share = {s: sizes[s] / max(1, len(parsed.body)) * body_tokens for s in candidates}
        chosen: list[Section] = []
        estimate = float(body_tokens)
        for section in sorted(candidates, key=lambda s: -sizes[s]):
            if estimate <= self.body_tokens:
                break
            chosen.append(section)
            estimate -= share[section]
        for section in sorted(chosen, key=lambda s: -s.start):
            current = self.copy.text(skill_file) or ""
            lines = current.split("\n")
            moved = lines[offset + section.start : offset + section.end]
            name = slug(section.title, "section")
            reference = f"references/{name}.md"
            number = 1
            while (folder / reference).exists():
                number += 1
                reference = f"references/{name}-{number}.md"
            target = relative(folder / reference, self.copy.path)
            snapshot = self.copy.snapshot()
            shifted = Section(
                section.level, section.title, offset + section.start, offset + section.end
            )
            pointer = f"{section.title}: see [{reference}]({reference})."
            before, _ = self._measure_one(folder)
            self.copy.write(target, "\n".join(moved).rstrip("\n") + "\n")
            self.copy.write(skill_file, _lines_without(current, shifted, [pointer]))
            after, problems = self._measure_one(folder)
            if before - after < MIN_BODY_SAVING or problems > problems_before:
                self.copy.restore(snapshot)
                why = (
                    "it adds an S1xx finding"
                    if problems > problems_before
                    else f"it saves under {MIN_BODY_SAVING} tokens per use"
                )
                self.notes.append(f"{skill_file}:{shifted.line} {section.title!r} stays: {why}")
                continue
            move = Move(
                REFERENCE, skill_file, shifted.line, section.title, target,
                f"body over {self.body_tokens:,} tokens", (), (before, after),
            )  # fmt: skip
            self.moves.append(move)

    # --- 3. AGENTS.md past Codex's cut -> per folder ------------------------------------

    def _past(self, host: Host, cwd: str) -> int:
        working = self.copy.path if cwd == "." else self.copy.path / cwd
        report = measure_memory(self.copy.path, host.memory, cwd=working, max_bytes=self.max_bytes)
        return _bytes_past(report.files)

    def split(self) -> None:
        codex = next((h for h in self.hosts if h.memory_max_bytes is not None), None)
        if codex is None:
            return
        source = next(
            (name for name in codex.memory_files if self.copy.text(name) is not None), None
        )
        if source is None or self._past(codex, ".") == 0:
            return
        text = self.copy.text(source) or ""
        lines = text.split("\n")
        sections = split_sections(text)

        def about(section: Section) -> str | None:
            folder = folder_of(lines[section.start : section.end], self.copy.root)
            kids = children(section, sections)
            if folder and all(
                folder_of(lines[k.start : k.end], self.copy.root) in (folder, None) for k in kids
            ):
                return folder
            return None

        # Folders are judged in the repository: the copy holds its files, not its empty folders.
        chosen = _top_down(sections, about)
        if not chosen:
            self.notes.append(f"{source} is past Codex's cut, but no section is about one folder")
            return
        folders = sorted({folder for _, folder in chosen})
        for folder in folders:  # an empty folder of the repository: a working folder still
            (self.copy.path / folder).mkdir(parents=True, exist_ok=True)
        before = {cwd: self._past(codex, cwd) for cwd in [".", *folders]}
        applied = []
        for section, folder in reversed(chosen):
            target = self._move_to_folder(source, section, folder)
            bills = self.current, self.bills()
            applied.append((section, folder, target, bills))
            self.current = bills[1]
        self.cut = [CutChange(cwd, before[cwd], self._past(codex, cwd)) for cwd in before]
        # Whether a host reaches the moved text is judged once every section has moved: a
        # folder's file is past the cut until the root is short enough.
        for section, folder, target, (earlier, later) in applied:
            reached: dict[str, str] = {}
            for host in self.hosts:
                report = measure_memory(
                    self.copy.path, host.memory, cwd=self.copy.path / folder,
                    max_bytes=self.max_bytes,
                )  # fmt: skip
                if not any(f.path == target and f.loaded != LOST for f in report.files):
                    reached[host.name] = f"does not read {target}: the moved text is lost to it"
            self.current = earlier
            changes = self._changes(later, source, reached)
            move = Move(
                SPLIT, source, section.line, section.title, target, f"about {folder}/",
                tuple(changes),
            )  # fmt: skip
            self._keep(move, later)

    def _move_to_folder(self, source: str, section: Section, folder: str) -> str:
        """Move the section to the folder's memory file (in the copy); that file's name."""
        text = self.copy.text(source) or ""
        moved = text.split("\n")[section.start : section.end]
        names = [f"{folder}/{n}" for n in ("AGENTS.override.md", "AGENTS.md")]
        target = next((n for n in names if self.copy.text(n) is not None), names[1])
        existing = self.copy.text(target)
        block = "\n".join(moved).rstrip("\n") + "\n"
        self.copy.write(
            target, block if existing is None else existing.rstrip("\n") + "\n\n" + block
        )
        self.copy.write(source, _lines_without(text, section, []))
        return target

    def report(self, root: Path) -> SurfaceFix:
        totals = tuple(
            HostTotal(
                h.name, self.first[h.name].total, self.current[h.name].total, self.saved[h.name]
            )
            for h in self.hosts
        )
        return SurfaceFix(
            root.as_posix(), tuple(self.moves), totals, tuple(self.cut), self.copy.writes(),
            tuple(self.notes),
        )  # fmt: skip


def fix_surface(
    root: Path,
    hosts: Sequence[Host] | None = None,
    *,
    body_tokens: int = BODY_TOKENS,
    max_bytes: int = CODEX_MAX_BYTES,
    settings: RuleOverrides | None = None,
) -> SurfaceFix:
    """Every move for the repository at ``root``, each measured on a copy with it applied."""
    root = Path(root)
    if not root.is_dir():
        raise CouldNotJudge(f"{root}: not a folder")
    chosen = list(hosts or [host for host in HOSTS.values() if has_files(root, host)])
    with tempfile.TemporaryDirectory(prefix="toll-fix-") as temporary:
        copy = Copy(root, Path(temporary) / "repository")
        planner = _Planner(copy, chosen, body_tokens, max_bytes, settings or RuleOverrides())
        # The split first: while the root file is past the cut, a section taken out of it
        # only lets more of its tail in, and a procedure moved would save Codex nothing.
        planner.split()
        planner.procedures()
        planner.references()
        return planner.report(root)
