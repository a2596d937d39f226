"""``toll skills`` as a real process: the JSON contract and the exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from pytest_toll.core import tokens
from tests.cli import run_toll as toll

DESCRIPTION = "Fill in PDF forms from a JSON record. Use when a form is attached."


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_json_contract_and_exit_1_on_an_error_finding(tmp_path: Path) -> None:
    body = "Read [the fields](references/fields.md) and references/gone.md.\n"
    write(
        tmp_path / "skills/pdf-forms/SKILL.md",
        f"---\nname: pdf-forms\ndescription: {DESCRIPTION}\n---\n{body}",
    )
    write(tmp_path / "skills/pdf-forms/references/fields.md", "name, date, signature")
    result = toll("skills", "skills", "--json", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    metadata = tokens.count(f"pdf-forms: {DESCRIPTION}")
    fields = tokens.count("name, date, signature")
    assert json.loads(result.stdout) == {
        "kind": "skills",
        "tokenizer": "o200k_base",
        "skills": [
            {
                "name": "pdf-forms",
                "path": "skills/pdf-forms",
                "metadata": metadata,
                "body": tokens.count(body),
                "body_lines": 1,
                "references": [{"path": "references/fields.md", "tokens": fields}],
                "references_total": fields,
            }
        ],
        "totals": {"metadata": metadata, "body": tokens.count(body), "references": fields},
        "findings": [
            {
                "rule": "S106",
                "severity": "error",
                "skill": "pdf-forms",
                "message": "reference 'references/gone.md' does not exist in the skill folder",
            }
        ],
    }


def test_text_report_exit_0_and_window_share(tmp_path: Path) -> None:
    write(
        tmp_path / "pdf-forms/SKILL.md",
        f"---\nname: pdf-forms\ndescription: {DESCRIPTION}\n---\nbody\n",
    )
    result = toll("skills", "pdf-forms", "--window", "200_000", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    metadata = tokens.count(f"pdf-forms: {DESCRIPTION}")
    assert result.stdout.splitlines()[-2] == (
        f"always loaded: {metadata} tokens of metadata, ~{100 * metadata / 200_000:.2g}% of a "
        "200,000-token window; bodies load on activation, references on demand"
    )


def test_warnings_alone_exit_0(tmp_path: Path) -> None:
    write(tmp_path / "pdf/SKILL.md", "---\nname: pdf\ndescription: Helps with PDFs.\n---\nbody\n")
    result = toll("skills", "pdf", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-2:] == [
        "S102 warn pdf: description is thin: 16 characters, under 40 — say what the skill does "
        "and when to use it",
        'S102 warn pdf: description never says when to use the skill — add a "Use when …" '
        "sentence: a host picks skills by their descriptions",
    ]


def test_nothing_to_measure_is_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = toll("skills", "empty", cwd=tmp_path)
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr == (
        "toll: error: empty: no SKILL.md found (not a skill folder or a folder of skill folders)\n"
    )
    assert toll("skills", "missing", cwd=tmp_path).returncode == 2


def test_bad_window_is_exit_2(tmp_path: Path) -> None:
    for window in ("0", "-5", "lots"):
        result = toll("skills", ".", "--window", window, cwd=tmp_path)
        assert result.returncode == 2
        assert "--window" in result.stderr


def test_importing_the_verb_stays_light() -> None:
    # The verb imports the skills job at its top (the house rule), but never the tokenizer
    # or a YAML library; building the parser for another verb does not import it at all.
    code = (
        "import sys, pytest_toll.cli\n"
        "pytest_toll.cli.build_parser('count')\n"
        "assert 'pytest_toll.skills.measuring' not in sys.modules\n"
        "import pytest_toll.cli.skills\n"
        "pytest_toll.cli.build_parser('skills')\n"
        "assert 'tiktoken' not in sys.modules and 'yaml' not in sys.modules\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
