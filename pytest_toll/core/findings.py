"""Rule findings shared by every job (E1xx definitions, S1xx skills, TL0xx transcripts).

A rule has an id, a default severity and default thresholds; users override either
(``rules: {E125: off, E127: error}`` and ``limits:`` in toll.yaml, or CLI flags). Severity
``error`` fails (exit 1, a failed ledger item); ``warn`` and ``info`` only print; ``off``
is not reported at all.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, cast

from pytest_toll.core.errors import UsageError, require_non_negative_number
from pytest_toll.core.inert import shown

#: How bad a finding is. ``off`` is only ever a setting: a rule turned off reports nothing.
Severity = Literal["error", "warn", "info", "off"]

# The severities by name. ``ERROR`` here is the severity "error" (a finding that fails the
# run) — not a transcript call's outcome, not an exit code.
ERROR: Final = "error"
WARN: Final = "warn"
INFO: Final = "info"
OFF: Final = "off"
SEVERITIES: tuple[Severity, ...] = (ERROR, WARN, INFO, OFF)
_RANK: dict[str, int] = {ERROR: 0, WARN: 1, INFO: 2}


@dataclass(frozen=True)
class Finding:
    """One rule hit: which rule, how bad, about what (a tool, skill or shape), and a fix hint."""

    rule: str
    severity: Severity
    subject: str | None
    message: str
    hint: str = ""

    def as_dict(self, subject_key: str = "subject") -> dict[str, Any]:
        data: dict[str, Any] = {
            "rule": self.rule,
            "severity": self.severity,
            subject_key: self.subject,
            "message": self.message,
        }
        if self.hint:
            data["hint"] = self.hint
        return data

    def __str__(self) -> str:
        # The subject (a tool or skill name) and the message quote third-party text.
        where = f" {shown(self.subject)}:" if self.subject else ""
        hint = f" — {shown(self.hint)}" if self.hint else ""
        return f"{self.rule} {self.severity}{where} {shown(self.message)}{hint}"


@dataclass(frozen=True)
class RuleOverrides:
    """User overrides: per-rule severities and named thresholds (e.g. ``tool_tokens``)."""

    severities: Mapping[str, Severity] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(default_factory=dict)

    @classmethod
    def parse(
        cls,
        severities: Mapping[str, Any] | None = None,
        thresholds: Mapping[str, Any] | None = None,
        source: str = "rules",
        *,
        known_rules: Collection[str] | None = None,
        known_thresholds: Collection[str] | None = None,
    ) -> RuleOverrides:
        """Validate user-given overrides, naming ``source`` in any error.

        With ``known_rules`` / ``known_thresholds``, an unknown name is an error: a typo
        must not silently leave a gate at its default.
        """
        _reject_unknown(severities, known_rules, source, "rule")
        _reject_unknown(thresholds, known_thresholds, source, "threshold")
        checked: dict[str, Severity] = {}
        for rule, value in (severities or {}).items():
            # YAML reads a bare ``off`` as False.
            level = OFF if value is False else value
            if level not in SEVERITIES:
                raise UsageError(
                    f"{source}.{rule}: severity must be one of {', '.join(SEVERITIES)}, "
                    f"not {value!r}"
                )
            checked[str(rule)] = cast(Severity, level)
        limits: dict[str, float] = {}
        for name, value in (thresholds or {}).items():
            limits[str(name)] = require_non_negative_number(value, f"{source}.{name}")
        return cls(checked, limits)

    def severity(self, rule: str, default: Severity) -> Severity:
        return self.severities.get(rule, default)

    def threshold(self, name: str, default: float) -> float:
        return self.thresholds.get(name, default)

    def finding(
        self, rule: str, default: Severity, subject: str | None, message: str, hint: str = ""
    ) -> Finding | None:
        """A finding at its effective severity, or None when the rule is turned off."""
        level = self.severity(rule, default)
        if level == OFF:
            return None
        return Finding(rule, level, subject, message, hint)


def _reject_unknown(
    given: Mapping[str, Any] | None, known: Collection[str] | None, source: str, what: str
) -> None:
    if not given or known is None:
        return
    for name in given:
        if name not in known:
            raise UsageError(
                f"{source}.{name}: unknown {what} (expected one of: {', '.join(sorted(known))})"
            )


def worst_first(findings: Iterable[Finding]) -> list[Finding]:
    return sorted(findings, key=lambda f: (_RANK.get(f.severity, 9), f.rule, f.subject or ""))


def has_errors(findings: Iterable[Finding]) -> bool:
    return any(finding.severity == ERROR for finding in findings)
