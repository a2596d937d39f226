"""The JSON shape of skill records and their findings."""

from __future__ import annotations

from pytest_toll.core.findings import ERROR, Finding


def test_findings_render_with_the_skill_key() -> None:
    finding = Finding("S106", ERROR, "forms", "reference 'x' is missing", "fix it")
    assert finding.as_dict("skill") == {
        "rule": "S106",
        "severity": "error",
        "skill": "forms",
        "message": "reference 'x' is missing",
        "hint": "fix it",
    }
