"""Skills measured on real folders built in tmp dirs: the three levels, discovery, totals."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.skills.measuring import measure_skills
from tests.skills.skill_folders import ALPHA, BETA, GOOD, meta, rules, write_skill


def test_one_skill_measured_at_three_levels_exactly(tmp_path: Path) -> None:
    body = (
        "# Release notes\n\n"
        "Read [the style guide](references/style.md) first.\n"
        "Then run `python scripts/collect.py --since v1.2` and fill\n"
        "assets/template.md.\n"
    )
    style = "Write in the past tense.\nOne sentence per change.\n"
    script = "import sys\nprint(sys.argv)\n"
    template = "## Added\n\n## Fixed\n"
    folder = write_skill(
        tmp_path / "release-notes",
        body=body,
        files={
            "references/style.md": style,
            "scripts/collect.py": script,
            "assets/template.md": template,
            "references/unused.md": "never linked, never counted",
        },
    )
    report = measure_skills(folder)
    # The script is run (``python scripts/collect.py``): its source is the executed part,
    # not loaded text.
    refs = [tokens.count(template), tokens.count(style)]
    assert report.as_dict() == {
        "kind": "skills",
        "tokenizer": "o200k_base",
        "skills": [
            {
                "name": "release-notes",
                "path": folder.as_posix(),
                "metadata": meta("release-notes"),
                "body": tokens.count(body),
                "body_lines": 5,
                "references": [
                    {"path": "assets/template.md", "tokens": refs[0]},
                    {"path": "references/style.md", "tokens": refs[1]},
                ],
                "references_total": sum(refs),
                "executed": [{"path": "scripts/collect.py", "tokens": tokens.count(script)}],
                "executed_total": tokens.count(script),
            }
        ],
        "totals": {
            "metadata": meta("release-notes"),
            "body": tokens.count(body),
            "references": sum(refs),
            "executed": tokens.count(script),
        },
        "findings": [],
    }


def test_catalogue_found_recursively_with_totals_and_window_share(tmp_path: Path) -> None:
    catalogue = tmp_path / "skills"
    write_skill(catalogue / "alpha", description=ALPHA)
    write_skill(catalogue / "team" / "beta", description=BETA, body="beta body\n")
    # A SKILL.md inside a skill's references is an example, not a second skill.
    write_skill(
        catalogue / "gamma", description=GOOD, files={"references/example/SKILL.md": "---\n---\n"}
    )
    write_skill(catalogue / "node_modules" / "vendored")
    (catalogue / "empty").mkdir()
    report = measure_skills(catalogue, window=200_000)
    assert [(s.name, s.path) for s in report.skills] == [
        ("alpha", f"{catalogue.as_posix()}/alpha"),
        ("gamma", f"{catalogue.as_posix()}/gamma"),
        ("beta", f"{catalogue.as_posix()}/team/beta"),
    ]
    metadata = meta("alpha", ALPHA) + meta("beta", BETA) + meta("gamma")
    default_body = tokens.count("# Steps\n\n1. Read the changelog.\n")
    assert report.totals == {
        "metadata": metadata,
        "body": 2 * default_body + tokens.count("beta body\n"),
        "references": 0,
    }
    assert report.metadata_share == metadata / 200_000
    assert rules(report) == []


def test_a_skill_md_path_measures_its_folder(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "alpha")
    assert measure_skills(folder / "SKILL.md").skills[0].path == folder.as_posix()


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: None, "no such file or directory"),
        (
            lambda p: p.mkdir(),
            "no SKILL.md found (not a skill folder or a folder of skill folders)",
        ),
        (lambda p: p.write_text("x"), "not a skill folder (a folder holding SKILL.md)"),
    ],
)
def test_nothing_to_measure_could_not_judge(tmp_path: Path, make: object, message: str) -> None:
    target = tmp_path / "target"
    make(target)  # type: ignore[operator]
    with pytest.raises(CouldNotJudge) as caught:
        measure_skills(target)
    assert str(caught.value) == f"{target}: {message}"


def test_window_must_be_positive(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "alpha")
    with pytest.raises(UsageError, match="window must be a positive whole number"):
        measure_skills(folder, window=0)


def test_crlf_and_bom_measure_exactly_like_their_lf_twin(tmp_path: Path) -> None:
    files = {"references/a.md": "line one\nline two\n"}
    body = "Read references/a.md.\nThen answer.\n"
    plain = measure_skills(write_skill(tmp_path / "lf" / "notes", body=body, files=files))
    crlf_files = {"references/a.md": "line one\r\nline two\r\n"}
    for newline, bom in [("\r\n", False), ("\n", True), ("\r\n", True)]:
        twin = write_skill(
            tmp_path / f"{len(newline)}{bom}" / "notes",
            body=body,
            files=crlf_files,
            newline=newline,
            bom=bom,
        )
        report = measure_skills(twin)
        assert rules(report) == []
        assert {**report.skills[0].as_dict(), "path": ""} == {
            **plain.skills[0].as_dict(),
            "path": "",
        }
    assert plain.skills[0].body == tokens.count(body)
    assert plain.skills[0].references[0].tokens == tokens.count("line one\nline two\n")


def test_binary_asset_is_listed_but_not_counted(tmp_path: Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR" + bytes(range(256))
    folder = write_skill(
        tmp_path / "logo",
        body="Use ![logo](assets/logo.png) and references/notes.md.\n",
        files={"assets/logo.png": png, "references/notes.md": "notes"},
    )
    skill = measure_skills(folder).skills[0]
    assert skill.as_dict()["references"] == [
        {"path": "assets/logo.png", "tokens": None},
        {"path": "references/notes.md", "tokens": tokens.count("notes")},
    ]
    assert skill.references[0].binary
    assert skill.references_total == tokens.count("notes")


def test_symlinked_catalogue_entries_followed_once_without_looping(tmp_path: Path) -> None:
    checkout = write_skill(tmp_path / "checkout" / "alpha")
    catalogue = tmp_path / "catalogue"
    catalogue.mkdir()
    (catalogue / "alpha").symlink_to(checkout, target_is_directory=True)
    (catalogue / "loop").symlink_to(catalogue, target_is_directory=True)
    report = measure_skills(catalogue)
    assert [s.path for s in report.skills] == [f"{catalogue.as_posix()}/alpha"]


def test_large_binary_asset_is_listed_not_counted(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "video", body="Play assets/clip.mp4.\n")
    (folder / "assets").mkdir()
    with (folder / "assets" / "clip.mp4").open("wb") as clip:
        clip.write(b"\0\0\0\x18ftypmp42")
        clip.truncate(64 * 1024 * 1024)  # sparse: 64 MiB that costs no disk
    skill = measure_skills(folder).skills[0]
    assert skill.as_dict()["references"] == [{"path": "assets/clip.mp4", "tokens": None}]
