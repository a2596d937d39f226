"""References found in the body, resolved inside the folder and never read outside it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_toll.core import tokens
from pytest_toll.core.findings import ERROR
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.references import find_reference_targets
from tests.skills.skill_folders import GOOD, rules, write_skill


def test_reference_targets_from_links_and_bare_paths() -> None:
    body = (
        '[a](references/a.md#part) ![b](<assets/b c.png> "title") [c](https://x.io/assets/c.md)\n'
        "[mail](mailto:me@example.com) [anchor](#top) [d](./FORMS.md?x=1)\n"
        "[e]: references/e.md\n"
        "bare scripts/run.sh, and ./notes/more.txt. Not CHANGELOG.md or src/app.py.\n"
        "[f](references/a.md) [esc](../other/x.md) [abs](/etc/hosts) [sp](refs/my%20file.md)\n"
    )
    assert find_reference_targets(body) == [
        "references/a.md",
        "assets/b c.png",
        "./FORMS.md",
        "../other/x.md",
        "/etc/hosts",
        "refs/my file.md",
        "references/e.md",
        "scripts/run.sh",
        "./notes/more.txt",
        # Any path naming a file is a candidate, counted only when the skill holds it.
        "src/app.py",
    ]


def test_dotdot_and_absolute_escapes_are_never_read(tmp_path: Path) -> None:
    (tmp_path / "shared.md").write_text("shared secrets", encoding="utf-8")
    folder = write_skill(
        tmp_path / "skills" / "forms",
        body="See [shared](../../shared.md) and [hosts](/etc/hosts) and ../../shared.md.\n",
    )
    report = measure_skills(folder)
    assert rules(report) == [
        (
            "S106",
            ERROR,
            "forms",
            "reference '../../shared.md' points outside the skill folder (../)",
        ),
        (
            "S106",
            ERROR,
            "forms",
            "reference '/etc/hosts' is an absolute path outside the skill folder",
        ),
    ]
    assert report.skills[0].references == ()


@pytest.fixture
def opened_files(tmp_path: Path) -> Iterator[list[str]]:
    """Every path this process opens while the fixture is active (a real audit hook).

    A first measure beforehand loads what a process loads once (the vocabulary, the YAML
    and rules modules), so what the hook records is what measuring itself opens.
    """
    measure_skills(write_skill(tmp_path / "warm-up"))
    opened: list[str] = []
    active = [True]

    def hook(event: str, args: tuple[object, ...]) -> None:
        if active[0] and event == "open" and isinstance(args[0], str | bytes | os.PathLike):
            opened.append(os.fsdecode(args[0]))

    sys.addaudithook(hook)  # hooks cannot be removed; this one goes quiet after the test
    try:
        yield opened
    finally:
        active[0] = False


def test_symlink_escape_is_caught_and_never_opened(tmp_path: Path, opened_files: list[str]) -> None:
    secret = tmp_path / "outside" / "secret.md"
    secret.parent.mkdir()
    secret.write_text("api key: 1234", encoding="utf-8")
    folder = write_skill(
        tmp_path / "skills" / "leaky",
        body="Read references/secret.md and [dir](references/linked/notes.md).\n",
    )
    (folder / "references").mkdir()
    (folder / "references" / "secret.md").symlink_to(secret)
    (folder / "references" / "linked").symlink_to(secret.parent, target_is_directory=True)
    (secret.parent / "notes.md").write_text("outside notes", encoding="utf-8")
    opened_files.clear()
    report = measure_skills(folder)
    assert rules(report) == [
        (
            "S106",
            ERROR,
            "leaky",
            "reference 'references/linked/notes.md' is a symlink that resolves outside the skill folder",
        ),
        (
            "S106",
            ERROR,
            "leaky",
            "reference 'references/secret.md' is a symlink that resolves outside the skill folder",
        ),
    ]
    assert report.skills[0].references == ()
    outside = str((tmp_path / "outside").resolve())
    assert opened_files, "the audit hook saw nothing"
    assert [path for path in opened_files if path.startswith(outside)] == []
    assert all(path.startswith(str(folder.resolve())) for path in opened_files), opened_files


def test_symlink_inside_the_folder_is_followed(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path / "linky",
        body="Read references/alias.md.\n",
        files={"references/real.md": "the real text"},
    )
    (folder / "references" / "alias.md").symlink_to("real.md")
    skill = measure_skills(folder).skills[0]
    assert skill.as_dict()["references"] == [
        {"path": "references/alias.md", "tokens": tokens.count("the real text")}
    ]


def test_skill_md_symlinked_outside_is_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.md"
    outside.write_text(f"---\nname: sly\ndescription: {GOOD}\n---\nbody", encoding="utf-8")
    (tmp_path / "sly").mkdir()
    (tmp_path / "sly" / "SKILL.md").symlink_to(outside)
    report = measure_skills(tmp_path / "sly")
    assert rules(report) == [
        ("S101", ERROR, "sly", "SKILL.md was not read: it resolves outside the skill folder"),
        (
            "S106",
            ERROR,
            "sly",
            "reference 'SKILL.md' is a symlink that resolves outside the skill folder",
        ),
    ]
    assert report.totals == {"metadata": tokens.count("sly: "), "body": 0, "references": 0}


def test_fifo_reference_does_not_hang(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "piped", body="Read references/pipe.md.\n")
    (folder / "references").mkdir()
    os.mkfifo(folder / "references" / "pipe.md")
    assert rules(measure_skills(folder)) == [
        (
            "S106",
            ERROR,
            "piped",
            "reference 'references/pipe.md' cannot be read: not a regular file",
        )
    ]


def test_bare_paths_outside_the_spec_folders_are_counted_only_when_present(
    tmp_path: Path,
) -> None:
    body = (
        "Update docs/api.md and templates/page.html in the user's project.\n"
        "Start from examples/minimal.md; run scripts/gone.sh; see [the guide](docs/guide.md).\n"
    )
    folder = write_skill(tmp_path / "site", body=body, files={"examples/minimal.md": "min"})
    report = measure_skills(folder)
    assert report.skills[0].as_dict()["references"] == [
        {"path": "examples/minimal.md", "tokens": tokens.count("min")}
    ]
    assert rules(report) == [
        ("S106", ERROR, "site", "reference 'docs/guide.md' does not exist in the skill folder"),
        ("S106", ERROR, "site", "reference 'scripts/gone.sh' does not exist in the skill folder"),
    ]
