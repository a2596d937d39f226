"""The session report as SARIF 2.1.0, for code-scanning views of rule findings and gate failures.

Each result points at the toll.yaml line of its entry: that is where a reviewer acts (raise
a budget, turn a rule off, look at the server the entry names). A rule finding that knows the
line that caused it (a SKILL.md line, a CLAUDE.md import, a tool's description in the
server's source: :mod:`pytest_toll.report.places`) points there instead, with the ledger
line as its related location; so does a gate failure whose entry knows where the part that
grew most is written. Two kinds of results:

- rule findings (E1xx, S1xx, TL0xx) at their severity — error, warning (warn) or note (info);
- gate failures (``toll/regressed``, ``toll/over-budget``, ``toll/error``, ``toll/stale``),
  always errors, because they fail the run.

Every rule carries help text. The tool's ``informationUri`` and each rule's ``helpUri`` come
from the installed package's ``[project.urls]`` (:mod:`pytest_toll.core.project`) and are left
out when it names no address, rather than pointing somewhere guessed.
"""

from __future__ import annotations

from typing import Any

from pytest_toll._version import __version__
from pytest_toll.core import project
from pytest_toll.report.data import ReportDict
from pytest_toll.report.places import failure_place, finding_place
from pytest_toll.report.rule_help import rule_help

SARIF_VERSION = "2.1.0"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

_LEVEL = {"error": "error", "warn": "warning", "info": "note"}
#: What to do about a gate failure, shown as the rule's help text.
GATE_HELP = {
    "toll/regressed": "Shrink what grew (the comment lists the biggest per-tool changes), or "
    "accept it on purpose: pytest --toll --toll-update --toll-allow-increase, and review the "
    "diff of toll.yaml.",
    "toll/over-budget": "Shrink the definitions or skill, or raise the entry's budget in "
    "toll.yaml on purpose.",
    "toll/error": "Make the source measurable (start the server, fix the path), then rerun.",
    "toll/stale": "Remove the entry from toll.yaml, or run what it names.",
}


GATE_RULES = {
    "regressed": ("toll/regressed", "A measured cost rose above its pin in toll.yaml."),
    "over_budget": ("toll/over-budget", "A measured cost is above its budget in toll.yaml."),
    "error": ("toll/error", "A cost could not be measured, so it cannot pass."),
    "stale": ("toll/stale", "A toll.yaml entry was not measured in a full run."),
}


def _location(uri: str, line: int | None) -> dict[str, Any]:
    physical: dict[str, Any] = {"artifactLocation": {"uri": uri}}
    if not uri.startswith("/"):
        physical["artifactLocation"]["uriBaseId"] = "%SRCROOT%"
    else:
        physical["artifactLocation"]["uri"] = "file://" + uri
    if line is not None and line > 0:
        physical["region"] = {"startLine": line}
    return {"physicalLocation": physical}


def render(report: ReportDict, ledger_uri: str) -> dict[str, Any]:
    """A SARIF log with one run; ``ledger_uri`` is toll.yaml relative to the repository root."""
    rules: dict[str, dict[str, Any]] = {}
    results: list[dict[str, Any]] = []
    for entry in report.get("entries", []):
        label = f"{entry['kind']}::{entry['name']}"
        location = _location(ledger_uri, entry.get("line"))
        outcome = entry.get("outcome")
        if entry.get("failed") and outcome in GATE_RULES:
            rule_id, description = GATE_RULES[outcome]
            rules.setdefault(
                rule_id,
                {
                    "id": rule_id,
                    "shortDescription": {"text": description},
                    "fullDescription": {
                        "text": f"{description} pytest --toll fails the run on it."
                    },
                    "help": {"text": GATE_HELP[rule_id]},
                    "defaultConfiguration": {"level": "error"},
                },
            )
            message = entry.get("message") or (
                f"{label}: measured {entry.get('measured')}, pin {entry.get('pin')}, "
                f"budget {entry.get('budget')}"
            )
            failure: dict[str, Any] = {
                "ruleId": rule_id,
                "level": "error",
                "message": {"text": f"{label}: {message}" if entry.get("message") else message},
                "locations": [location],
                "partialFingerprints": {"tollEntry": f"{rule_id}:{label}"},
            }
            grown = failure_place(entry, ledger_uri)
            if grown is not None:
                # At the part that grew most (a SKILL.md's body, a tool's description).
                failure["locations"] = [_location(*grown)]
                related = {"id": 1, **location, "message": {"text": f"the ledger entry {label}"}}
                failure["relatedLocations"] = [related]
            results.append(failure)
        for finding in entry.get("findings", []):
            level = _LEVEL.get(str(finding.get("severity")), "note")
            rule_id = str(finding.get("rule"))
            title, help_text = rule_help(rule_id)
            rules.setdefault(
                rule_id,
                {
                    "id": rule_id,
                    "shortDescription": {"text": f"{rule_id}: {title}"},
                    "fullDescription": {"text": f"{rule_id}: {title}."},
                    "help": {"text": help_text},
                },
            )
            subject = finding.get("subject")
            text = f"{label}: " + (f"{subject}: " if subject else "") + str(finding.get("message"))
            if finding.get("hint"):
                text += f" ({finding['hint']})"
            result: dict[str, Any] = {
                "ruleId": rule_id,
                "level": level,
                "message": {"text": text},
                "locations": [location],
                "partialFingerprints": {"tollEntry": f"{rule_id}:{label}:{subject or ''}"},
            }
            place = finding_place(finding, ledger_uri)
            if place is not None:
                result["locations"] = [_location(*place)]
                related = {"id": 1, **location, "message": {"text": f"the ledger entry {label}"}}
                result["relatedLocations"] = [related]
            results.append(result)
    docs = project.documentation_url()
    if docs:
        for rule in rules.values():
            rule["helpUri"] = docs
    driver: dict[str, Any] = {"name": "pytest-toll", "version": __version__}
    information = project.home_url()
    if information:
        driver["informationUri"] = information
    driver["rules"] = [rules[key] for key in sorted(rules)]
    return {
        "$schema": SARIF_SCHEMA,
        "version": SARIF_VERSION,
        "runs": [
            {
                "tool": {"driver": driver},
                "results": results,
            }
        ],
    }
