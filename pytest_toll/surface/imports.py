"""``@path`` imports in a memory file, found as Claude Code finds them, and expanded.

What Claude Code documents (its memory page, "CLAUDE.md imports", read through the search
tool at docs.anthropic.com/en/docs/claude-code/memory and its translations): a CLAUDE.md
"can import additional files using @path/to/import syntax"; "both relative and absolute
paths are allowed", including a file in the user's home (``@~/…``); "imports are not
evaluated inside markdown code spans and code blocks"; and "imported files can recursively
import additional files" five files deep counting the root (four hops: the depth each host
follows is its row of :mod:`pytest_toll.core.hosts`). A relative path is taken from the
folder of the importing file. Gemini CLI's GEMINI.md imports follow the same shape (its
``memoryImportProcessor`` stops at ``maxDepth`` 5 below the root file). Claude Code leaves
block HTML comments out of what it loads: :func:`strip_block_comments`.

What pytest-toll adds, because a gate must not guess: an import that cannot be followed
(a missing file, a cycle, a hop past the host's depth, a path that leaves the repository — ``~`` and
absolute paths usually do) is a finding (M101), and the file is never read. An ``@word``
with no slash and no dot that names no file is a mention (``@octocat``), not an import.
"""

from __future__ import annotations

import bisect
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

#: Claude Code's depth: five files counting the one that imports first, so four hops.
MAX_IMPORT_HOPS = 4

# An @ at the start of a line or after whitespace, then a run of non-space characters.
_IMPORT = re.compile(r"(?:^|(?<=\s))@([^\s`]+)")
_TRAILING = ".,;:!?)]}>\"'"
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})")
# A block comment: <!-- at the start of a line (up to three spaces in), to the next -->.
_BLOCK_COMMENT = re.compile(r"^ {0,3}<!--.*?-->[ \t]*(?:\n|$)", re.DOTALL | re.MULTILINE)


@dataclass(frozen=True)
class ImportTarget:
    """One ``@path`` written in a file: the text after @ and its 1-based line."""

    target: str
    line: int


_BACKTICKS = re.compile(r"`+")


def _code_span_ranges(line: str) -> list[tuple[int, int]]:
    """Character ranges of inline code spans (a backtick run closed by the next run of the
    same length; a run with no such run after it is literal backticks).

    Linear in the line: each run's next run of the same length is found once, walking the
    runs backwards (a search from each run for its closer was quadratic: a megabyte of runs
    of rising length took minutes)."""
    runs = [(match.start(), match.end()) for match in _BACKTICKS.finditer(line)]
    following: list[int | None] = [None] * len(runs)
    latest: dict[int, int] = {}
    for index in range(len(runs) - 1, -1, -1):
        length = runs[index][1] - runs[index][0]
        following[index] = latest.get(length)
        latest[length] = index
    ranges: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        closer = following[index]
        if closer is None:
            index += 1  # an unmatched run is literal backticks
            continue
        ranges.append((runs[index][0], runs[closer][1]))
        index = closer + 1
    return ranges


def find_imports(text: str) -> Iterator[ImportTarget]:
    """Each ``@path`` of ``text`` outside fenced code blocks and inline code spans."""
    fence: str | None = None
    for number, line in enumerate(text.split("\n"), start=1):
        opening = _FENCE_OPEN.match(line)
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        if opening:
            fence = opening.group(1)
            continue
        spans = _code_span_ranges(line)
        starts = [start for start, _ in spans]
        for match in _IMPORT.finditer(line):
            # Spans are sorted and apart: only the last one starting at or before the match
            # can hold it (a bisection, not a look at every span).
            at = bisect.bisect_right(starts, match.start()) - 1
            if at >= 0 and match.start() < spans[at][1]:
                continue
            target = match.group(1).rstrip(_TRAILING)
            if target:
                yield ImportTarget(target, number)


def strip_block_comments(text: str) -> str:
    """``text`` without its block HTML comments (a comment that opens a line, through the
    line it closes on), outside fenced code blocks: what Claude Code loads of a memory file.
    A comment inside a line of prose is kept, as is everything in a code block."""
    kept: list[str] = []
    fence: str | None = None
    prose: list[str] = []

    def flush() -> None:
        if prose:
            kept.append(_BLOCK_COMMENT.sub("", "".join(prose)))
            prose.clear()

    for line in text.splitlines(keepends=True):
        opening = _FENCE_OPEN.match(line)
        if fence is not None:
            kept.append(line)
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        if opening:
            flush()
            fence = opening.group(1)
            kept.append(line)
            continue
        prose.append(line)
    flush()
    return "".join(kept)


def looks_like_path(target: str) -> bool:
    """A target with a slash, a dot or a ``~`` is meant as a file; ``@octocat`` is not."""
    return "/" in target or "." in target or target.startswith("~")


def resolve(target: str, importing_file: Path) -> Path:
    """Where an import points: ``~`` is the home folder, an absolute path is itself, and a
    relative path is taken from the importing file's folder."""
    if target.startswith("~"):
        return Path(os.path.expanduser(target))
    path = Path(target)
    return path if path.is_absolute() else importing_file.parent / path
