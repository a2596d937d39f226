"""Findings at the line that caused them (issue #37 item 4): each measurer places a finding at
the SKILL.md line, the CLAUDE.md import, the subagent's file or the tool's description in the
server's source; SARIF and the GitHub annotations point there, the ledger line beside it."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

from pytest_toll.gate.locate import description_places
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import (
    measure_agents_entry,
    measure_memory_entry,
    measure_servers_entry,
    measure_skills_entry,
)
from pytest_toll.report import sarif
from pytest_toll.report.github_run import entry_annotations

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"
REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real_repos"


def _line_of(path: Path, needle: str) -> int:
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(number for number, line in enumerate(lines, 1) if needle in line)


def _by_rule(findings: Any) -> dict[str, dict[str, Any]]:
    return {str(finding["rule"]): dict(finding) for finding in findings}


def test_a_skill_finding_points_at_its_skill_md_line(tmp_path: Path) -> None:
    folder = tmp_path / "skills" / "notes"
    shutil.copytree(DEMO / "skills" / "release-notes", folder)  # name differs: S101
    skill_md = folder / "SKILL.md"
    skill_md.write_text(
        skill_md.read_text(encoding="utf-8") + "\nSee [the missing page](references/gone.md).\n",
        encoding="utf-8",
    )
    measured = measure_skills_entry("notes", {"path": "skills/notes"}, EntryContext(tmp_path))
    found = _by_rule(measured.findings)
    assert found["S101"]["file"] == "skills/notes/SKILL.md"
    assert found["S101"]["line"] == _line_of(skill_md, "name:")
    assert found["S106"]["file"] == "skills/notes/SKILL.md"
    assert found["S106"]["line"] == _line_of(skill_md, "references/gone.md")


def test_a_real_skills_references_point_at_the_lines_naming_them() -> None:
    """A real repository's skill (github/awesome-copilot, stored under tests/fixtures)."""
    root = REAL / "github__awesome-copilot"
    skill_md = root / "skills" / "acquire-codebase-knowledge" / "SKILL.md"
    entry = {"path": "skills/acquire-codebase-knowledge"}
    measured = measure_skills_entry("knowledge", entry, EntryContext(root))
    deep = [f for f in measured.findings if "assets/templates/STACK.md" in f["message"]]
    assert deep and deep[0]["file"] == "skills/acquire-codebase-knowledge/SKILL.md"
    assert deep[0]["line"] == _line_of(skill_md, "assets/templates/STACK.md")
    metadata = next(f for f in measured.findings if f["message"].startswith("metadata "))
    assert metadata["line"] == _line_of(skill_md, "metadata:")


def test_a_broken_import_points_at_its_line_in_claude_md(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text(
        "# Project\n\nRead the style guide.\n@docs/missing.md\n", encoding="utf-8"
    )
    measured = measure_memory_entry("claude", {}, EntryContext(tmp_path))
    found = _by_rule(measured.findings)
    assert (found["M101"]["file"], found["M101"]["line"]) == ("CLAUDE.md", 4)


def test_a_subagent_finding_points_at_its_description(tmp_path: Path) -> None:
    agents = tmp_path / ".claude" / "agents"
    agents.mkdir(parents=True)
    (agents / "tidy.md").write_text(
        "---\nname: tidy\ndescription: Tidies imports in Python files.\n---\nSort them.\n",
        encoding="utf-8",
    )
    measured = measure_agents_entry("tidy", {"path": ".claude/agents"}, EntryContext(tmp_path))
    found = _by_rule(measured.findings)
    assert (found["A102"]["file"], found["A102"]["line"]) == (".claude/agents/tidy.md", 3)


def test_a_tool_finding_points_at_its_description_in_the_servers_source(tmp_path: Path) -> None:
    """The demo's real stdio server, copied: its descriptions are found verbatim in it."""
    shutil.copy(DEMO / "notes_server.py", tmp_path / "notes_server.py")
    context = EntryContext(tmp_path, limits={"tool_tokens": 100})
    entry = {"command": [sys.executable, "notes_server.py"]}
    found = {f["subject"]: f for f in measure_servers_entry("notes", entry, context).findings}
    source = tmp_path / "notes_server.py"
    assert found["search_notes"]["rule"] == "E127"
    assert found["search_notes"]["file"] == "notes_server.py"
    assert found["search_notes"]["line"] == _line_of(source, "Search the team's notes by words")
    assert found["create_note"]["line"] == _line_of(source, '"Create a note. Use when')


def test_a_description_found_in_two_files_or_too_short_is_not_placed(tmp_path: Path) -> None:
    text = "Search the team's notes by words in their title or body."
    (tmp_path / "a.py").write_text(f'DESCRIPTION = "{text}"\n', encoding="utf-8")
    places = description_places({"search": text, "tiny": "Reads."}, tmp_path)
    assert set(places) == {"search"} and places["search"].line == 1
    # A README or a data file quoting it does not make it ambiguous: the code defines it.
    (tmp_path / "README.md").write_text(f"- search: {text}\n", encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps([{"description": text}]), encoding="utf-8")
    assert description_places({"search": text}, tmp_path)["search"].path.name == "a.py"
    (tmp_path / "b.ts").write_text(f'const d = "{text}";\n', encoding="utf-8")
    assert description_places({"search": text}, tmp_path) == {}


def test_the_description_line_wins_over_a_docstring_with_the_same_words(tmp_path: Path) -> None:
    """As in modelcontextprotocol/servers' time server: a method's docstring repeats the
    tool's description, and the Tool(description=…) further down is the definition."""
    text = "Convert time between timezones"
    (tmp_path / "server.py").write_text(
        f'def convert():\n    """{text}"""\n\nTOOL = Tool(\n    description="{text}",\n)\n',
        encoding="utf-8",
    )
    assert description_places({"convert_time": text}, tmp_path)["convert_time"].line == 5


def _report(ledger_line: int) -> dict[str, Any]:
    finding = {
        "rule": "S106",
        "severity": "error",
        "subject": "notes",
        "message": "reference 'references/gone.md' does not exist",
        "file": "skills/notes/SKILL.md",
        "line": 12,
    }
    unplaced = {"rule": "E128", "severity": "warn", "subject": None, "message": "heavy"}
    return {
        "entries": [
            {
                "kind": "skills",
                "name": "notes",
                "line": ledger_line,
                "outcome": "passed",
                "failed": True,
                "findings": [finding, unplaced],
            }
        ]
    }


def test_sarif_points_at_the_line_with_the_ledger_line_related() -> None:
    log = sarif.render(_report(7), "sub/toll.yaml")  # type: ignore[arg-type]
    placed, unplaced = log["runs"][0]["results"]
    location = placed["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "sub/skills/notes/SKILL.md"
    assert location["region"] == {"startLine": 12}
    related = placed["relatedLocations"][0]
    assert related["physicalLocation"]["artifactLocation"]["uri"] == "sub/toll.yaml"
    assert related["physicalLocation"]["region"] == {"startLine": 7}
    assert related["message"]["text"] == "the ledger entry skills::notes"
    assert unplaced["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == (
        "sub/toll.yaml"
    )
    assert "relatedLocations" not in unplaced
    json.dumps(log)


def test_annotations_point_at_the_line_and_name_the_ledger_entry() -> None:
    annotations = entry_annotations(_report(7), "toll.yaml")  # type: ignore[arg-type]
    finding = next(a for a in annotations if a.title and a.title.endswith("S106"))
    assert (finding.file, finding.line) == ("skills/notes/SKILL.md", 12)
    assert finding.message.endswith("ledger entry: toll.yaml:7")
    heavy = next(a for a in annotations if a.title and a.title.endswith("E128"))
    assert (heavy.file, heavy.line) == ("toll.yaml", 7)
