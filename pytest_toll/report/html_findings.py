"""The HTML page's findings: why each entry failed or warned, and every finding's effect.

A failing run's page must say *why*, per entry, in words a newcomer can act on: the
judgement (over budget, above its pin, could not be measured) and each rule finding with
what it does to the gate (an ``error`` fails it, a ``warn`` is shown, ``info`` is never
graded). Every text from the data is escaped by :func:`pytest_toll.report.svg.esc`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from pytest_toll.report.data import entry_label
from pytest_toll.report.svg import esc

#: What a finding of each severity does to the gate (the findings tables' last column).
EFFECT = {
    "error": "fails the gate",
    "warn": "shown, does not fail",
    "info": "never graded",
}
_RANK = {"error": 0, "warn": 1, "info": 2}
# Outcomes that fail an entry on their own, and what each means.
_JUDGEMENT = {
    "regressed": "above its pin",
    "over_budget": "over its budget",
    "error": "could not be measured",
}


def _subject(finding: Mapping[str, Any]) -> str:
    return str(finding.get("subject") or finding.get("tool") or finding.get("skill") or "")


def worst_first(findings: Iterable[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    return sorted(findings, key=lambda finding: _RANK.get(str(finding.get("severity")), 3))


def _finding_text(finding: Mapping[str, Any]) -> str:
    severity = str(finding.get("severity", ""))
    subject = _subject(finding)
    hint = finding.get("hint")
    return (
        f"<b>{esc(finding.get('rule', ''))}</b> {esc(severity)}"
        f"{' ' + esc(subject) if subject else ''}: {esc(finding.get('message', ''))}"
        f"{' — ' + esc(hint) if hint else ''} "
        f'<span class="meta">({esc(EFFECT.get(severity, severity))})</span>'
    )


def entry_reasons(entry: Mapping[str, Any]) -> list[str]:
    """Why one entry failed or warned, as HTML list items (none when it did neither)."""
    findings = worst_first(
        finding
        for finding in entry.get("findings") or []
        if finding.get("severity") in ("error", "warn")
    )
    outcome = str(entry.get("outcome", ""))
    reasons = []
    if outcome in _JUDGEMENT and entry.get("failed"):
        reasons.append(f"{esc(_JUDGEMENT[outcome])}: {esc(entry.get('message') or outcome)}")
    elif entry.get("failed") and not any(f.get("severity") == "error" for f in findings):
        reasons.append(esc(entry.get("message") or "failed"))
    reasons.extend(_finding_text(finding) for finding in findings)
    return reasons


def session_findings_section(session: Mapping[str, Any]) -> str:
    """Each entry that failed or warned, and why; failed entries first."""
    entries = sorted(
        session.get("entries") or [],
        key=lambda entry: (not entry.get("failed"), entry_label(entry)),
    )
    items = []
    for entry in entries:
        reasons = entry_reasons(entry)
        if not reasons:
            continue
        verdict = (
            '<span class="bad">FAILED</span>'
            if entry.get("failed")
            else '<span class="warn">warned</span>'
        )
        items.append(
            f"<li>{verdict} <b>{esc(entry_label(entry))}</b><ul>"
            + "".join(f"<li>{reason}</li>" for reason in reasons)
            + "</ul></li>"
        )
    if not items:
        return "<h2>Why entries failed or warned</h2><p>none: no entry failed or warned</p>"
    return (
        "<h2>Why entries failed or warned</h2>"
        "<p>each entry's judgement and rule findings; an <b>error</b> finding fails its entry, "
        "a <b>warn</b> is shown, <b>info</b> is never graded</p>"
        f'<ul class="changes">{"".join(items)}</ul>'
    )


Table = Callable[[Sequence[str], Iterable[Sequence[object]], Sequence[bool]], str]


def findings_section(findings: Sequence[Mapping[str, Any]], table: Table) -> str:
    """The findings of the reports a verb measured (``toll weigh``, ``toll skills``), each
    with what it does to a gate. ``table`` is the page's sortable table builder."""
    if not findings:
        return "<h2>Findings</h2><p>none</p>"
    rows = [
        (
            finding.get("rule", ""),
            finding.get("severity", ""),
            _subject(finding),
            finding.get("message", ""),
            EFFECT.get(str(finding.get("severity")), ""),
        )
        for finding in worst_first(findings)
    ]
    return "<h2>Findings</h2>" + table(
        ("rule", "severity", "subject", "message", "effect"), rows, (False,) * 5
    )
