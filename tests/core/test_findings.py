from __future__ import annotations

import pytest

from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import Finding, RuleOverrides, has_errors, worst_first


def test_overrides_change_severity_and_off_drops_the_finding() -> None:
    settings = RuleOverrides.parse({"E125": False, "E127": "error"}, {"tool_tokens": 500})
    assert settings.finding("E125", "warn", None, "too many tools") is None
    hit = settings.finding("E127", "warn", "read_file", "900 tokens", "trim the schema")
    assert hit == Finding("E127", "error", "read_file", "900 tokens", "trim the schema")
    assert settings.threshold("tool_tokens", 800) == 500
    assert settings.threshold("total_tokens", 25000) == 25000
    assert str(hit) == "E127 error read_file: 900 tokens — trim the schema"
    assert hit.as_dict("tool") == {
        "rule": "E127",
        "severity": "error",
        "tool": "read_file",
        "message": "900 tokens",
        "hint": "trim the schema",
    }


@pytest.mark.parametrize(
    ("severities", "thresholds", "message"),
    [
        ({"E125": "loud"}, None, r"rules\.E125: severity must be one of error, warn, info, off"),
        (None, {"tool_tokens": -1}, r"rules\.tool_tokens: must be a non-negative number"),
        (None, {"tool_tokens": True}, r"rules\.tool_tokens: must be a non-negative number"),
    ],
)
def test_bad_overrides_name_their_source(
    severities: dict[str, object] | None, thresholds: dict[str, object] | None, message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        RuleOverrides.parse(severities, thresholds)


def test_worst_first_and_has_errors() -> None:
    info = Finding("E130", "info", "a", "x")
    warn = Finding("E122", "warn", "b", "x")
    error = Finding("E121", "error", "c", "x")
    assert worst_first([info, warn, error]) == [error, warn, info]
    assert has_errors([info, error]) and not has_errors([info, warn])


def test_unknown_names_are_errors_when_the_known_names_are_given() -> None:
    with pytest.raises(
        UsageError,
        match=r"--limit\.tool_tokenz: unknown threshold \(expected one of: tool_tokens, total_tokens\)",
    ):
        RuleOverrides.parse(
            None, {"tool_tokenz": 5}, "--limit", known_thresholds=["total_tokens", "tool_tokens"]
        )
    with pytest.raises(UsageError, match=r"--rule\.E999: unknown rule"):
        RuleOverrides.parse({"E999": "off"}, None, "--rule", known_rules=["E125"])
    assert (
        RuleOverrides.parse({"E125": "off"}, None, known_rules=["E125"]).severity("E125", "warn")
        == "off"
    )


def test_a_bundle_acknowledgement_covers_its_component_by_the_bare_subject() -> None:
    # A plugin names a skill's finding "skills/pdf"; the skills rules inside it judge "pdf".
    overrides = RuleOverrides.parse(
        {"S101": {"severity": "warn", "reason": "kept", "subjects": ["skills/pdf", "agents/x"]}}
    )
    skills = overrides.within("skills")
    covered = skills.finding("S101", "error", "pdf", "bad name")
    assert covered is not None and covered.severity == "warn"
    # The same rule on another skill, or the agents' subject read as a skill, still fails.
    for subject in ("docx", "x", "agents/x"):
        other = skills.finding("S101", "error", subject, "bad name")
        assert other is not None and other.severity == "error"
    agent = overrides.within("agents").finding("S101", "error", "x", "m")
    assert agent is not None and agent.severity == "warn"
