"""Markdown cut to a size without cutting its markup: a step summary, a pull-request comment.

GitHub drops a step summary over 1 MiB whole and refuses a comment over 65,536 characters,
so a long text must be cut. A cut by bytes can end inside a table row, an emphasis or a link,
or leave a code fence open so that it swallows whatever follows (in a step summary: the next
step's summary too). :func:`fit_markdown` cuts only where a block may end — at a blank line,
between two table rows, before a list item — closes a code fence it cuts inside, and says
that something was left out. :func:`close_open_fence` is what text appended after another
tool's Markdown needs first, when that Markdown left a fence open.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A fence opens or closes a code block: three or more backticks or tildes, indented at
#: most three spaces (CommonMark 4.5).
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LIST_ITEM = re.compile(r"^ {0,3}(?:[-+*]|\d{1,9}[.)])(?: |$)")


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _fence_states(lines: Sequence[str]) -> list[str | None]:
    """For each line, the fence open after it (its opening run, e.g. ``````), or None."""
    states: list[str | None] = []
    fence: str | None = None
    for line in lines:
        match = _FENCE.match(line)
        if fence is None:
            if match and not (match.group(1)[0] == "`" and "`" in line[match.end() :]):
                fence = match.group(1)
        elif (
            match
            and match.group(1)[0] == fence[0]
            and len(match.group(1)) >= len(fence)
            and not line[match.end() :].strip()
        ):
            fence = None
        states.append(fence)
    return states


def close_open_fence(markdown: str) -> str:
    """The line that closes the code fence ``markdown`` leaves open, with its newline; ""
    when every fence is closed."""
    states = _fence_states(markdown.splitlines())
    fence = states[-1] if states else None
    return f"{fence}\n" if fence else ""


def _is_table_row(line: str) -> bool:
    return line.lstrip().startswith("|")


def _may_end_after(lines: Sequence[str], index: int, fence: str | None) -> bool:
    """Whether the text may be cut after ``lines[index]`` without cutting a block's markup
    (inside a fence it may: the fence is closed)."""
    if fence is not None:
        return True
    line = lines[index]
    following = lines[index + 1] if index + 1 < len(lines) else ""
    if not line.strip() or not following.strip():
        return True
    if _is_table_row(line) and _is_table_row(following):
        # Between two rows, but never between a table's header and its delimiter row.
        return index > 0 and _is_table_row(lines[index - 1]) and "---" not in following
    return _LIST_ITEM.match(following) is not None


def fit_markdown(markdown: str, limit_bytes: int) -> str:
    """``markdown`` in at most ``limit_bytes`` of UTF-8, cut at a block boundary with any
    fence it cuts inside closed, and a line saying what was done; unchanged when it fits."""
    if _size(markdown) <= limit_bytes:
        return markdown
    note = f"\n_Cut to stay within {limit_bytes:,} bytes; the rest was left out._\n"
    lines = markdown.splitlines()
    fences = _fence_states(lines)
    room = limit_bytes - _size(note)
    kept_end = 0  # lines[:kept_end] are kept
    closer = ""
    used = 0
    for index, line in enumerate(lines):
        used += _size(line) + 1
        fence = fences[index]
        ending = f"{fence}\n" if fence else ""
        if used + _size(ending) > room:
            break
        if _may_end_after(lines, index, fence):
            kept_end, closer = index + 1, ending
    if kept_end == 0:
        alone = note.lstrip("\n")
        return alone if _size(alone) <= limit_bytes else ""
    body = "\n".join(lines[:kept_end]) + "\n" + closer
    return body + note
