"""SKILL.md split into its YAML frontmatter and its body, never raising on a broken file.

Line endings are normalised to ``\\n`` before anything is counted, so a checkout with CRLF
line endings (git on Windows) measures exactly what its LF twin measures and pins do not
drift by platform.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.errors import describe_type
from pytest_toll.core.parse import ParseError, load_yaml
from pytest_toll.skills.records import SKILL_FILE

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
    loaded, problem = load_frontmatter_yaml(yaml_text)
    if problem is not None:
        return ParsedSkillFile(None, body, body_start, problem)
    if loaded is None:
        return ParsedSkillFile(None, body, body_start, f"{SKILL_FILE} frontmatter is empty")
    if not isinstance(loaded, dict):
        return ParsedSkillFile(
            None,
            body,
            body_start,
            f"{SKILL_FILE} frontmatter must be a mapping of fields, not {describe_type(loaded, 'yaml')}",
        )
    return ParsedSkillFile(loaded, body, body_start)


def load_frontmatter_yaml(text: str, name: str = SKILL_FILE) -> tuple[Any, str | None]:
    """Safe-loaded frontmatter YAML of the file ``name`` (through the Parsing door: depth,
    alias and number bounds), or why it is not YAML (line numbers as in the file). Skills,
    subagents and commands share it."""
    try:
        # +2: the YAML starts on the line after the opening ---.
        return load_yaml(text, name, first_line=2), None
    except ParseError as error:
        where = f" line {error.line}" if error.line else ""
        reason = error.why.removeprefix("not valid YAML: ")
        return None, f"{name}{where}: frontmatter is not valid YAML: {reason}"


def line_count(text: str) -> int:
    """Lines as an editor numbers them: a final line without a newline still counts."""
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)
