"""Third-party text made inert for a terminal and a CI log.

Tool, skill, shape and test names, descriptions and what a server says are written by
someone else. Printed as they are, a newline in one starts a line of its choosing (a GitHub
workflow command such as ``::error::`` or ``::stop-commands::`` counts at the start of a
line, after any whitespace, and the runner's older ``##[command]`` form anywhere in one), an
ESC starts a terminal escape (clear the screen, hide text, rewrite the title), a carriage
return overwrites what a line said, and a bidi override (U+202E) shows text in an order other
than the one it has. So such text is shown with every such character as a visible escape:

- :func:`shown` for a piece of third-party text a renderer puts in a line: scrubbed of
  known secrets, made inert, then cut to a width if one is given;
- :func:`inert` for a piece of third-party text inside one rendered line (a name, a message):
  every control character, the newline too, becomes ``\\n``, ``\\u001b``, ``\\u202e``…;
- :func:`inert_lines` for whole lines about to be printed (the CLI's output, the pytest
  summary and failure sections): the line breaks stay, everything else is escaped, and a line
  that would read as a workflow command does not.

The escapes are JSON's (``\\n``, ``\\r``, ``\\t``, ``\\u001b``): a ``--json`` report printed
through the CLI's guard stays valid JSON with the same data, since JSON has already escaped
every character below U+0020 and reads ``\\u009b`` as the character it escapes. A backslash
is left as it is (a Windows path stays readable).
"""

from __future__ import annotations

import re
from typing import Literal

from pytest_toll.core.secrets import cut, scrub

#: C0 controls, DEL and C1 controls; bidi embeddings, overrides and isolates, and the marks
#: that steer them; the Unicode line and paragraph separators, which some viewers break on.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")
_UNSAFE_IN_LINES = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
#: A workflow command: ``::`` at the start of a line once leading whitespace is trimmed (as
#: the runner trims it); the runner's older form, ``##[``, anywhere in a line.
_COMMAND_AT_START = re.compile(r"^(\s*):(?=:)")
#: The same, found anywhere in a text of many lines (one scan instead of one per line).
_ANY_COMMAND_LINE = re.compile(r"^[^\S\n]*::", re.MULTILINE)
_OLD_COMMAND = "##["


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    return f"\\u{ord(char):04x}"


def _no_command(line: str) -> str:
    """``line`` unable to read as a workflow command: a leading ``::`` shows its first colon
    as ``\\u003a``, and ``##[`` as ``#\\u0023[``."""
    line = _COMMAND_AT_START.sub(r"\1\\u003a", line, count=1)
    return line.replace(_OLD_COMMAND, "#\\u0023[") if _OLD_COMMAND in line else line


def has_unsafe(text: str) -> bool:
    """Whether ``text`` holds a control, bidi or line-break character :func:`inert` escapes
    (a YAML writer quotes and escapes such a name instead of writing it as it is)."""
    return _UNSAFE.search(text) is not None


def escaped(text: str) -> str:
    """``text`` with every control, bidi and line-break character an escape, and nothing
    else changed: for a format where a line's start means nothing (an HTML page, an SVG)."""
    return _UNSAFE.sub(_escape, text)


def inert(text: object) -> str:
    """``text`` as one inert piece of a line: no control, bidi or line-break character, and
    no workflow command should it start a line."""
    shown = str(text)
    return _no_command(_UNSAFE.sub(_escape, shown))


def inert_lines(text: str) -> str:
    """Lines about to be printed, inert: line breaks and tabs kept, every other control and
    bidi character escaped, no line a workflow command. A ``\\r\\n`` ends a line as ``\\n``."""
    text = _UNSAFE_IN_LINES.sub(_escape, text.replace("\r\n", "\n"))
    if _OLD_COMMAND not in text and not _ANY_COMMAND_LINE.search(text):
        return text
    return "\n".join(_no_command(line) for line in text.split("\n"))


def shown(text: object, limit: int | None = None, *, keep: Literal["head", "tail"] = "head") -> str:
    """Third-party ``text`` as a renderer puts it in a line: scrubbed first (a secret is
    recognised in the form it was given, before any escaping), then inert, then cut to
    ``limit`` characters (head or tail) when given."""
    safe = inert(scrub(str(text)))
    return safe if limit is None else cut(safe, limit, keep=keep)
