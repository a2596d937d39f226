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
from pytest_toll.core.textio import describe_size, is_inside
from pytest_toll.skills.records import SKILL_FILE, BrokenReference

# Markdown inline links and images: [text](target "title") / ![alt](<target>).
_INLINE_LINK = re.compile(r"!?\[[^\]\n]*\]\(\s*(<[^>\n]*>|[^)\s]+)(?:\s+[^)\n]*)?\)")
# Reference-style link definitions: [id]: target "title".
_LINK_DEFINITION = re.compile(r"^[ ]{0,3}\[[^\]\n]+\]:[ \t]*(<[^>\n]*>|\S+)", re.M)
# Fenced code blocks (``` or ~~~, closed by the same fence or the end of the text) and inline
# code spans (a run of backticks closed by an equal run on the same line).
_FENCED_BLOCK = re.compile(
    r"^[ ]{0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^[ ]{0,3}\1[ \t]*$|\Z)", re.M | re.S
)
# (No lookbehind before the opening run: a pattern that starts with a literal lets the regex
# engine skip to each backtick, measured ~8x faster on bench/skills.py's bodies.)
_CODE_SPAN = re.compile(r"(`+)(?!`)[^\n]+?(?<!`)\1(?!`)")
# Bare paths: into the folders skills conventionally hold, optionally ./ or ../-prefixed, or
# any other ./ or ../ path naming a file (checked in _bare_paths). The spec's own folders,
# and explicitly relative paths, are surely the skill's: missing, they are reported. A bare
# templates/, examples/ or docs/ path may as well name a file of the user's project, so it
# is counted when the skill holds it and otherwise left alone. Any other path with a slash
# (``shared/models.md``) is a *name*: counted when the skill holds that file.
SPEC_FOLDERS = ("references/", "scripts/", "assets/")
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
FILE_NAME = re.compile(r"\.[A-Za-z]\w{0,7}\Z")
# Any relative path of plain segments ending in a file name: ``shared/models.md``.
_NAMED_PATH = re.compile(r"[\w\-][\w.\-]*(?:/[\w.\-]+)*\.[A-Za-z]\w{0,7}")
# What a skill author writes for "one of several files": {lang}, <strategy>, *, … or ...
_PLACEHOLDER = re.compile(r"\{[\w\-. ,]+\}|<[\w\-. ]+>|\*+|…|\.\.\.")
# A host variable at the start of a path: ${CLAUDE_PLUGIN_ROOT}/scripts/x.sh, $SKILL_DIR/x.
_HOST_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+))/(.+)")
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.\-]*:")


def _is_path_character(character: str) -> bool:
    return character.isalnum() or character in "_.-/{}<>*…$"


@dataclass(frozen=True)
class Mention:
    """A place where a text names a file of the skill.

    ``form`` says how: ``link`` (a Markdown link), ``path`` (a bare path with a slash),
    ``name`` (a file name alone, ``FORMS.md``; see ``find_mentions``), ``placeholder`` (a pattern such as
    ``{lang}/README.md``) or ``host`` (``${CLAUDE_PLUGIN_ROOT}/…``, ``target`` holding what
    follows the variable and ``variable`` its name). ``strict``: a missing file is reported.
    """

    target: str
    strict: bool
    start: int
    form: str
    variable: str = ""
    in_code: bool = False


def code_spans(text: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The fenced code blocks and the inline code spans of a Markdown text (offsets)."""
    if "`" not in text and "~~~" not in text:
        return [], []
    fenced = [match.span() for match in _FENCED_BLOCK.finditer(text)]
    inline = [
        match.span()
        for match in _CODE_SPAN.finditer(text)
        if not any(low <= match.start() < high for low, high in fenced)
    ]
    return fenced, inline


def _inside(position: int, spans: Sequence[tuple[int, int]]) -> bool:
    return any(low <= position < high for low, high in spans)


def _trim_run(run: str) -> str:
    """A path run without the punctuation around it (emphasis, brackets, a full stop)."""
    while run and run[0] in "*<(,":
        if run[0] == "<" and ">" in run:
            break
        run = run[1:]
    while run and run[-1] in "*>).,:;":
        if run[-1] == ">" and run.count("<") >= run.count(">"):
            break
        run = run[:-1]
    return run.strip()


def _is_placeholder_path(path: str) -> bool:
    # Placeholders must make up whole pieces of a path of otherwise plain characters.
    if not _PLACEHOLDER.search(path):
        return False
    plain = _PLACEHOLDER.sub("x", path)
    return bool(re.fullmatch(r"[\w.\-/]+", plain)) and "/" in path


def _bare_paths(body: str, skip: Sequence[tuple[int, int]] = ()) -> Iterator[Mention]:
    """Bare relative paths in ``body`` outside the ``skip`` spans (the Markdown links).

    Every path holds a slash, and prose holds few: visiting each slash and taking the whole
    run of path characters around it measured several times faster than a regex scan of the
    text (bench/skills.py). A run glued to ``:`` or ``~`` is part of a URL or a home path.
    """
    position = body.find("/")
    while position != -1:
        start = position
        while start and _is_path_character(body[start - 1]):
            start -= 1
        end = position + 1
        braces = body.count("{", start, end) - body.count("}", start, end)
        # A comma continues the run only inside braces: paper.{tex,md} is one placeholder.
        while end < len(body) and (
            _is_path_character(body[end]) or (braces > 0 and body[end] == ",")
        ):
            braces += {"{": 1, "}": -1}.get(body[end], 0)
            end += 1
        position = body.find("/", end)
        if start and body[start - 1] in ":~/":
            continue
        if _inside(start, skip):
            continue
        raw = body[start:end]
        trimmed = _trim_run(raw)
        offset = start + raw.find(trimmed) if trimmed else start
        host = _HOST_VARIABLE.fullmatch(trimmed)
        if host is not None:
            rest = host.group(3).rstrip("./")
            if rest:
                yield Mention(rest, False, offset, "host", host.group(1) or host.group(2))
            continue
        if "$" in trimmed:
            continue
        if _is_placeholder_path(trimmed):
            yield Mention(trimmed.rstrip("/"), False, offset, "placeholder")
            continue
        path = trimmed.rstrip("./")
        if "{" in path or "<" in path or "*" in path or "…" in path:
            continue
        if _BARE_PATH.fullmatch(path):
            if path.startswith("."):
                rest = path.lstrip("./")
                if not rest.startswith(_CONVENTIONAL_FOLDERS) and not FILE_NAME.search(path):
                    continue
                yield Mention(path, True, offset, "path")
            else:
                yield Mention(path, path.startswith(SPEC_FOLDERS), offset, "path")
        elif "/" in path and _NAMED_PATH.fullmatch(path) and not path.startswith("/"):
            yield Mention(path, False, offset, "path")


def find_reference_targets(body: str) -> list[str]:
    """Relative file targets the body points to, in first-seen order, without duplicates.

    URLs, in-page anchors and e-mail links are not references; fragments and queries are
    dropped. Absolute paths are kept: they are reported as escaping the skill folder. File
    names without a folder (``FORMS.md``) are left out: see :func:`find_mentions`.
    """
    return [target for target, _ in find_references(body)]


def find_references(body: str) -> list[tuple[str, bool]]:
    """Each reference target with whether a missing file is worth reporting (``strict``).

    Every Markdown link outside code is strict; bare paths are strict as ``_bare_paths``
    says.
    """
    targets: list[tuple[str, bool]] = []
    seen: set[str] = set()
    for mention in find_mentions(body):
        if mention.target in seen:
            continue
        seen.add(mention.target)
        targets.append((mention.target, mention.strict))
    return targets


def link_target(raw: str) -> str | None:
    """The file a Markdown link target names, or None for a URL, an anchor or nothing."""
    target = raw.strip()
    if target.startswith("<") and target.endswith(">"):
        target = target[1:-1].strip()
    if not target or target.startswith(("#", "//")) or _SCHEME.match(target):
        return None
    target = unquote(target.split("#", 1)[0].split("?", 1)[0])
    return target or None


def find_mentions(body: str) -> list[Mention]:
    """Every mention of a file in ``body``: links, then bare paths, each in text order (the
    same target may repeat). File names alone (``FORMS.md``) are found from the skill
    folder's listing instead (:mod:`pytest_toll.skills.loading`): any word may look like one.

    A Markdown link written inside a code span or a fenced block is an example of Markdown,
    not a link: its target is only looked at as a bare path would be. Inside a fenced block
    nothing is strict (a folder tree drawn in a code block is an illustration); a missing
    file named in an inline code span is reported as in prose.
    """
    fenced, inline = code_spans(body)
    code = [*fenced, *inline]
    mentions: list[Mention] = []
    links: list[tuple[int, int]] = []
    for pattern in (_INLINE_LINK, _LINK_DEFINITION):
        for match in pattern.finditer(body):
            if _inside(match.start(), code):
                continue
            links.append(match.span())
            target = link_target(match.group(1))
            if target is None:
                continue
            if _is_placeholder_path(target):
                mentions.append(Mention(target, False, match.start(), "placeholder"))
                continue
            host = _HOST_VARIABLE.fullmatch(target)
            if host is not None:
                variable = host.group(1) or host.group(2)
                mentions.append(Mention(host.group(3), False, match.start(), "host", variable))
                continue
            mentions.append(Mention(target, True, match.start(), "link"))
    # Markdown written out as an example (a link inside inline code): nothing in it is strict.
    example_links = [
        (low + match.start(), low + match.end())
        for low, high in inline
        if "](" in body[low:high]
        for match in _INLINE_LINK.finditer(body[low:high])
    ]
    # The bare-path scan skips the links, or it would find pieces of their targets.
    for mention in _bare_paths(body, links):
        in_fence = _inside(mention.start, fenced)
        in_code = in_fence or _inside(mention.start, inline)
        strict = mention.strict and not in_fence and not _inside(mention.start, example_links)
        mentions.append(
            Mention(mention.target, strict, mention.start, mention.form, mention.variable, in_code)
        )
    return mentions


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
