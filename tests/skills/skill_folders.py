"""Skill folders for the skills tests: written for real in tmp dirs, and read back."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pytest_toll.core import tokens
from pytest_toll.skills.report import SkillsReport

GOOD = "Turn a changelog into release notes. Use when the user asks for release notes."
ALPHA = "Draw charts from CSV files. Use when the user asks for a plot."
BETA = "Fill in PDF forms from a JSON record. Use when a form is attached."


def write_skill(
    folder: Path,
    name: str | None = None,
    description: str = GOOD,
    body: str = "# Steps\n\n1. Read the changelog.\n",
    files: Mapping[str, str | bytes] | None = None,
    extra: str = "",
    newline: str = "\n",
    bom: bool = False,
) -> Path:
    """A skill folder: SKILL.md with a frontmatter, plus any files (paths relative to it)."""
    folder.mkdir(parents=True, exist_ok=True)
    text = (
        f"---\nname: {folder.name if name is None else name}\n"
        f"description: {description}\n{extra}---\n{body}"
    )
    data = text.replace("\n", newline).encode()
    (folder / "SKILL.md").write_bytes(b"\xef\xbb\xbf" + data if bom else data)
    for relative, content in (files or {}).items():
        target = folder / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return folder


def rules(report: SkillsReport) -> list[tuple[str, str, str | None, str]]:
    return [(f.rule, f.severity, f.subject, f.message) for f in report.findings]


def meta(name: str, description: str = GOOD) -> int:
    return tokens.count(f"{name}: {description}")


def skill_md(folder: Path, text: str | bytes) -> Path:
    folder.mkdir(parents=True)
    data = text.encode() if isinstance(text, str) else text
    (folder / "SKILL.md").write_bytes(data)
    return folder
