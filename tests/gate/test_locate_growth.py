"""A regression at the file that grew (issue #37 item 4): a skill whose SKILL.md grew, or a
server whose tool description grew, fails the gate; SARIF and the GitHub annotation point at
the SKILL.md or the description in the server's source, the ledger line beside it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import (
    measure_plugins_entry,
    measure_servers_entry,
    measure_skills_entry,
)
from pytest_toll.report import sarif
from pytest_toll.report.github_run import entry_annotations
from pytest_toll.report.places import failure_place

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
LAST_RULE = "Never invent a change that is not in the log or the changelog."
SEARCH_SENTENCE = 'Returns up to "\n            "`limit` matches'


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if needle in line)


def test_a_skill_entry_says_where_its_metadata_and_body_are_written(tmp_path: Path) -> None:
    shutil.copytree(DEMO / "skills" / "release-notes", tmp_path / "skills" / "release-notes")
    skill_md = tmp_path / "skills" / "release-notes" / "SKILL.md"
    measured = measure_skills_entry(
        "release-notes", {"path": "skills/release-notes"}, EntryContext(tmp_path)
    )
    places = (measured.detail or {})["places"]
    assert places["metadata"] == {
        "file": "skills/release-notes/SKILL.md",
        "line": _line_of(skill_md, "description:"),
    }
    assert places["body"] == {
        "file": "skills/release-notes/SKILL.md",
        "line": _line_of(skill_md, "# Release notes") - 1,  # the line after the frontmatter
    }


def test_a_server_entry_places_only_the_tools_that_grew_past_their_pin(tmp_path: Path) -> None:
    """The demo's real stdio server: an unchanged one searches no source; one whose
    search_notes grew names that tool's description line."""
    source = tmp_path / "notes_server.py"
    shutil.copy(DEMO / "notes_server.py", source)
    entry: dict[str, Any] = {
        "command": [sys.executable, "notes_server.py"],
        "tools": {"search_notes": 161, "read_note": 84, "create_note": 139, "delete_note": 78},
    }
    unchanged = measure_servers_entry("notes", entry, EntryContext(tmp_path))
    assert "places" not in (unchanged.detail or {})
    text = source.read_text(encoding="utf-8")
    assert SEARCH_SENTENCE in text
    source.write_text(
        text.replace(SEARCH_SENTENCE, 'Searches ignore case. Returns up to "\n "`limit` matches'),
        encoding="utf-8",
    )
    grown = measure_servers_entry("notes", entry, EntryContext(tmp_path))
    assert (grown.detail or {})["places"] == {
        "search_notes": {
            "file": "notes_server.py",
            "line": _line_of(source, "Search the team's notes by words"),
        }
    }


def _regressed(outcome: str = "regressed") -> dict[str, Any]:
    return {
        "entries": [
            {
                "kind": "skills",
                "name": "notes",
                "line": 7,
                "outcome": outcome,
                "failed": True,
                "message": "regressed: body +43 over its pin 146",
                "measured": 340,
                "pin": 297,
                "budget": 600,
                "delta": 43,
                "findings": [],
                "parts": [
                    {"name": "metadata", "measured": 41, "pin": 40, "delta": 1},
                    {"name": "body", "measured": 189, "pin": 146, "delta": 43},
                    {"name": "references", "measured": 111, "pin": 111, "delta": 0},
                ],
                "detail": {
                    "places": {
                        "metadata": {"file": "skills/notes/SKILL.md", "line": 3},
                        "body": {"file": "skills/notes/SKILL.md", "line": 5},
                    }
                },
            }
        ]
    }


def test_a_regression_points_at_the_part_that_grew_most() -> None:
    entry = _regressed()["entries"][0]
    assert failure_place(entry, "sub/toll.yaml") == ("sub/skills/notes/SKILL.md", 5)
    # An error (nothing measured) has no part that grew: it stays at the ledger line.
    assert failure_place({**entry, "outcome": "error"}, "toll.yaml") is None
    # Over budget with no part above its pin: the largest part it places.
    flat = [{**part, "delta": 0} for part in entry["parts"]]
    over = {**entry, "outcome": "over_budget", "parts": flat}
    assert failure_place(over, "toll.yaml") == ("skills/notes/SKILL.md", 5)
    # A part without a place is skipped for the next one that grew.
    only_metadata = {
        **entry,
        "detail": {"places": {"metadata": entry["detail"]["places"]["metadata"]}},
    }
    assert failure_place(only_metadata, "toll.yaml") == ("skills/notes/SKILL.md", 3)


def test_sarif_and_annotations_point_a_regression_at_the_file_that_grew() -> None:
    log = sarif.render(_regressed(), "sub/toll.yaml")  # type: ignore[arg-type]
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "toll/regressed"
    location = result["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "sub/skills/notes/SKILL.md"
    assert location["region"] == {"startLine": 5}
    related = result["relatedLocations"][0]["physicalLocation"]
    assert (related["artifactLocation"]["uri"], related["region"]) == (
        "sub/toll.yaml",
        {"startLine": 7},
    )
    (annotation,) = entry_annotations(_regressed(), "toll.yaml")  # type: ignore[arg-type]
    assert (annotation.file, annotation.line) == ("skills/notes/SKILL.md", 5)
    assert annotation.message.endswith("ledger entry: toll.yaml:7")


@pytest.mark.slow
def test_the_demo_with_a_grown_skill_md_fails_at_that_file(tmp_path: Path) -> None:
    """pytest --toll on a copy of the demo, as GitHub Actions runs it."""
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    skill_md = demo / "skills" / "release-notes" / "SKILL.md"
    text = skill_md.read_text(encoding="utf-8")
    assert LAST_RULE in text
    skill_md.write_text(
        text.replace(LAST_RULE, LAST_RULE[:-1] + ", and never name a person or a ticket."),
        encoding="utf-8",
    )
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("PYTEST_", "GITHUB_", "TOLL_")) or key == "PYTEST_ADDOPTS"
    }
    env.update(GITHUB_ACTIONS="true", GITHUB_WORKSPACE=str(demo))
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--toll",
            "--toll-sarif=out.sarif",
        ],
        cwd=demo,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 1, result.stdout + result.stderr
    regressed = [
        line for line in result.stdout.splitlines() if line.startswith("::error file=skills/")
    ]
    body_line = _line_of(skill_md, "# Release notes") - 1
    assert (
        regressed
        == [
            line
            for line in regressed
            if line.startswith(f"::error file=skills/release-notes/SKILL.md,line={body_line},")
        ]
        and len(regressed) == 1
    ), result.stdout
    assert "ledger entry: toll.yaml:" in regressed[0]
    results = json.loads((demo / "out.sarif").read_text(encoding="utf-8"))["runs"][0]["results"]
    skill = next(
        r for r in results if r["partialFingerprints"]["tollEntry"].endswith("release-notes")
    )
    assert skill["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "skills/release-notes/SKILL.md"
    )
    assert (
        skill["relatedLocations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "toll.yaml"
    )


def test_a_plugins_component_finding_points_at_its_file(tmp_path: Path) -> None:
    """Found on anthropics/skills, measured as a plugin: a skill's broken reference pointed
    at the plugin's ledger line, not at the SKILL.md line naming it (nor a subagent's at its
    file)."""
    plugin = tmp_path / "plugin"
    shutil.copytree(DEMO / "skills" / "release-notes", plugin / "skills" / "release-notes")
    skill_md = plugin / "skills" / "release-notes" / "SKILL.md"
    text = skill_md.read_text(encoding="utf-8")
    skill_md.write_text(
        text.replace(LAST_RULE, LAST_RULE + "\nSee [the glossary](references/glossary.md)."),
        encoding="utf-8",
    )
    agents = plugin / "agents"
    agents.mkdir()
    (agents / "tidy.md").write_text(
        "---\nname: tidy\ndescription: Tidies.\n---\nSort the imports.\n", encoding="utf-8"
    )
    measured = measure_plugins_entry("kit", {"path": "plugin"}, EntryContext(tmp_path))
    by_subject = {(f["rule"], f["subject"]): f for f in measured.findings}
    broken = by_subject[("S106", "skills/release-notes")]
    assert (broken["file"], broken["line"]) == (
        "plugin/skills/release-notes/SKILL.md",
        _line_of(skill_md, "references/glossary.md"),
    )
    about_tidy = [f for f in measured.findings if f["subject"] == "agents/tidy"]
    assert about_tidy, measured.findings
    assert all(f["file"] == "plugin/agents/tidy.md" for f in about_tidy)
