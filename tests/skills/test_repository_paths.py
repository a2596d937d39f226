"""Issue #36 item 7 (S106): what authors of project skills write is not a broken reference —
a path from the repository's root (``./scripts/test``, ``scripts/download_cli.py``) that
exists there, and a file the reader is told to create (``create a ./.env``). A path that
exists nowhere, and a missing input named near a creation verb, are still errors."""

from __future__ import annotations

from pathlib import Path

from pytest_toll.skills.measuring import measure_skills

BODY = """---
name: release
description: Cut a release of this repository. Use when the user asks to release.
---
# Release

1. Run `./scripts/test` and then `python scripts/download_cli.py`.
2. Create a ./.env file with the token, or write it to `local.env`.
3. Build the notes from [the draft](references/draft.md).
4. Create the report from [the data](references/input.md).
"""


def make(root: Path, *, git: bool) -> Path:
    skill = root / ".claude" / "skills" / "release"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(BODY, encoding="utf-8")
    (root / "scripts").mkdir()
    (root / "scripts" / "test").write_text("#!/bin/sh\n", encoding="utf-8")
    (root / "scripts" / "download_cli.py").write_text("print(1)\n", encoding="utf-8")
    if git:
        (root / ".git").mkdir()
    return skill


def s106(skill: Path) -> tuple[list[str], list[str]]:
    report = measure_skills(skill)
    errors = [f.message for f in report.findings if f.rule == "S106" and f.severity == "error"]
    notes = [f.message for f in report.findings if f.rule == "S106" and f.severity == "info"]
    return errors, notes


def test_repository_paths_and_files_to_create_are_not_broken(tmp_path: Path) -> None:
    errors, notes = s106(make(tmp_path, git=True))
    assert sorted(errors) == [
        "reference 'references/draft.md' does not exist in the skill folder",
        "reference 'references/input.md' does not exist in the skill folder",
    ]
    joined = "\n".join(notes)
    assert "'./scripts/test' is a file of the repository (named from its root)" in joined
    assert "'scripts/download_cli.py' is a file of the repository" in joined
    assert "'./.env' is a file the reader is told to create; not checked" in joined


def test_outside_a_repository_root_paths_are_still_missing(tmp_path: Path) -> None:
    errors, _ = s106(make(tmp_path, git=False))
    assert "reference './scripts/test' does not exist in the skill folder" in errors
