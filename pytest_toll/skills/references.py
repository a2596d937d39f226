"""The files a skill's body points to: found in its Markdown, resolved, and read safely.

Nothing outside a skill folder is ever read: a reference is resolved (symlinks included) and
checked for containment *before* it is opened, and opened without following a last-moment
symlink.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import MAX_SKILL_FILE_BYTES
from pytest_toll.core.textio import describe_size
from pytest_toll.skills.records import SKILL_FILE, BrokenReference

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


def is_inside(path: str, root: str) -> bool:
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
    if not is_inside(lexical, root_real):
        return BrokenReference(target, "escape", "points outside the skill folder (../)")
    relative = Path(os.path.relpath(lexical, root_real)).as_posix()
    try:
        real = os.path.realpath(lexical)
    except (OSError, ValueError) as error:
        return BrokenReference(target, "unreadable", f"cannot be resolved: {error}")
    if not is_inside(real, root_real):
        return BrokenReference(
            target, "escape", "is a symlink that resolves outside the skill folder"
        )
    if not os.path.lexists(real):
        return BrokenReference(target, "missing", "does not exist in the skill folder")
    if os.path.isdir(real) or relative in (".", SKILL_FILE):
        return None
    return _Resolved(relative, real)


_SNIFF_BYTES = 1 << 16


class SkillFileTooLarge(CouldNotJudge):
    """A skill's file is over ``MAX_SKILL_FILE_BYTES``: the skill cannot be measured."""


def read_inside(real: str, limit: int = MAX_SKILL_FILE_BYTES) -> bytes | None:
    """The bytes of a regular file already resolved inside the skill folder; None if binary.

    ``O_NOFOLLOW`` refuses a final component swapped for a symlink since it was resolved;
    ``O_NONBLOCK`` keeps a FIFO from hanging the measurement (it is then refused as not a
    regular file). A NUL byte in the first 64 KiB marks a binary file, which is then not
    read any further: a skill's video or archive asset costs no time or memory. A text file
    over ``limit`` is ``SkillFileTooLarge`` (the skill's total would otherwise be short).
    """
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(real, flags)
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", real)
        chunks = [os.read(descriptor, _SNIFF_BYTES)]
        if b"\0" in chunks[0]:
            return None
        size = len(chunks[0])
        while size <= limit and (chunk := os.read(descriptor, 1 << 20)):
            chunks.append(chunk)
            size += len(chunk)
        if size > limit:
            raise SkillFileTooLarge(
                f"{os.path.basename(real)}: larger than the {describe_size(limit)} read limit "
                "for a skill file; the skill is not measured"
            )
        return b"".join(chunks)
    finally:
        os.close(descriptor)
