"""Rule findings shared by every job (E1xx definitions, S1xx skills, TL0xx transcripts).

A rule has an id, a default severity and default thresholds; users override either
(``rules: {E125: off, E127: error}`` and ``limits:`` in toll.yaml, or CLI flags). Severity
``error`` fails (exit 1, a failed ledger item); ``warn`` and ``info`` only print; ``off``
is not reported at all.

An acknowledgement's ``until`` is compared with today's date, or with ``TOLL_TODAY``
(``YYYY-MM-DD``) when it is set: to see which acknowledged debt falls due by a coming day
before it does, or to make a run reproducible.
"""

from __future__ import annotations

import os
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from datetime import date, timedelta
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


#: The variable that names the day acknowledgements are judged on instead of the clock's.
TODAY_VARIABLE = "TOLL_TODAY"


def current_day(environ: Mapping[str, str] | None = None) -> date:
    """``TOLL_TODAY`` (``YYYY-MM-DD``) when set, else the clock's date; a value that is not a
    day is a usage error naming the variable, never silently the clock's."""
    value = (os.environ if environ is None else environ).get(TODAY_VARIABLE, "").strip()
    if not value:
        return date.today()
    day = _until(value, TODAY_VARIABLE)
    assert day is not None
    return day


#: How ``toll init`` starts the reason of an override it writes for a finding that existed
#: when the ledger was made; such a finding says so on every run until a person rewrites it.
INIT_REASON_PREFIX = "found by toll init on "


@dataclass(frozen=True)
class Acknowledgement:
    """A rule override written with its reason (``{severity, reason, subjects, until}``).

    With ``subjects`` it covers findings about those subjects only (tools, skills, shapes);
    the same rule on any other subject keeps its default severity, so a new finding still
    fails. The reason is repeated on each finding it covers. With ``until`` (a date) it holds
    through that day only: debt a team has agreed to pay by then, which fails again after.
    """

    severity: Severity
    reason: str
    subjects: frozenset[str] | None = None
    until: date | None = None

    def covers(self, subject: str | None) -> bool:
        return self.subjects is None or (subject is not None and subject in self.subjects)

    def expired(self, today: date) -> bool:
        """Past its ``until`` day: the findings it covered count again."""
        return self.until is not None and today > self.until

    @property
    def lapsed_note(self) -> str:
        """What a finding says once its acknowledgement has expired: since when it counts."""
        assert self.until is not None
        since = (self.until + timedelta(days=1)).isoformat()
        return (
            f"acknowledged until {self.until.isoformat()}, counts again since {since}: "
            f"{self.reason}"
        )

    @property
    def note(self) -> str:
        """What a covered finding says about its override."""
        if self.until is not None:
            return f"{self._note()}; until {self.until.isoformat()}"
        return self._note()

    def _note(self) -> str:
        if self.unreviewed:
            found_on = self.reason[len(INIT_REASON_PREFIX) :].partition(":")[0]
            return (
                f"there when the ledger was made ({found_on}), not yet reviewed: fix it, "
                "or write in the ledger's reason why it stays"
            )
        return f"acknowledged in the ledger: {self.reason}"

    @property
    def unreviewed(self) -> bool:
        """Still the text ``toll init`` wrote: nobody has looked at this finding yet."""
        return self.reason.startswith(INIT_REASON_PREFIX)


@dataclass(frozen=True)
class RuleOverrides:
    """User overrides: per-rule severities and named thresholds (e.g. ``tool_tokens``)."""

    severities: Mapping[str, Severity] = field(default_factory=dict)
    thresholds: Mapping[str, float] = field(default_factory=dict)
    #: Overrides given with a reason, by rule (they take precedence over ``severities``).
    acknowledged: Mapping[str, Acknowledgement] = field(default_factory=dict)
    #: The day an acknowledgement's ``until`` is compared with; None is :func:`current_day`
    #: (``TOLL_TODAY``, else the clock's), read when a finding is judged.
    today: date | None = None

    @classmethod
    def parse(
        cls,
        severities: Mapping[str, Any] | None = None,
        thresholds: Mapping[str, Any] | None = None,
        source: str = "rules",
        *,
        known_rules: Collection[str] | None = None,
        known_thresholds: Collection[str] | None = None,
        today: date | None = None,
    ) -> RuleOverrides:
        """Validate user-given overrides, naming ``source`` in any error.

        A rule's value is a severity, or a mapping ``{severity, reason, subjects}`` (an
        acknowledgement, see :class:`Acknowledgement`; ``today`` is the day its ``until`` is
        compared with, :func:`current_day` when None). With ``known_rules`` /
        ``known_thresholds``, an unknown name is an error: a typo must not silently leave
        a gate at its default.
        """
        _reject_unknown(severities, known_rules, source, "rule")
        _reject_unknown(thresholds, known_thresholds, source, "threshold")
        checked: dict[str, Severity] = {}
        acknowledged: dict[str, Acknowledgement] = {}
        for rule, value in (severities or {}).items():
            if isinstance(value, Mapping):
                acknowledged[str(rule)] = _acknowledgement(value, f"{source}.{rule}")
                continue
            checked[str(rule)] = _severity(value, f"{source}.{rule}")
        limits: dict[str, float] = {}
        for name, value in (thresholds or {}).items():
            limits[str(name)] = require_non_negative_number(value, f"{source}.{name}")
        return cls(checked, limits, acknowledged, today)

    def severity(self, rule: str, default: Severity) -> Severity:
        return self.severities.get(rule, default)

    def within(self, component: str) -> RuleOverrides:
        """The overrides as the parts under ``component/`` see them.

        A bundle (a plugin) names its findings ``component/subject`` (``skills/pdf``), so
        that is how a person, and ``toll init``, acknowledge them; the skills and subagent
        rules inside it judge the bare subject. An acknowledgement's subjects are read here
        without the prefix; one without subjects covers everything, as before.
        """
        lead = f"{component}/"
        acknowledged = {
            rule: acknowledgement
            if acknowledgement.subjects is None
            else replace(
                acknowledgement,
                subjects=frozenset(
                    subject[len(lead) :]
                    for subject in acknowledgement.subjects
                    if subject.startswith(lead)
                ),
            )
            for rule, acknowledgement in self.acknowledged.items()
        }
        return replace(self, acknowledged=acknowledged)

    def threshold(self, name: str, default: float) -> float:
        return self.thresholds.get(name, default)

    def finding(
        self, rule: str, default: Severity, subject: str | None, message: str, hint: str = ""
    ) -> Finding | None:
        """A finding at its effective severity, or None when the rule is turned off."""
        acknowledgement = self.acknowledged.get(rule)
        if acknowledgement is not None and acknowledgement.covers(subject):
            if acknowledgement.expired(self.today or current_day()):
                # The debt is due: the rule's own severity again, and the finding says so.
                level = self.severity(rule, default)
                message = f"{message} ({acknowledgement.lapsed_note})"
            else:
                level = acknowledgement.severity
                message = f"{message} ({acknowledgement.note})"
        else:
            level = self.severity(rule, default)
        if level == OFF:
            return None
        return Finding(rule, level, subject, message, hint)


def _severity(value: Any, where: str) -> Severity:
    # YAML reads a bare ``off`` as False.
    level = OFF if value is False else value
    if level not in SEVERITIES:
        raise UsageError(f"{where}: severity must be one of {', '.join(SEVERITIES)}, not {value!r}")
    return cast(Severity, level)


def _acknowledgement(value: Mapping[str, Any], where: str) -> Acknowledgement:
    unknown = sorted(set(map(str, value)) - {"severity", "reason", "subjects", "until"})
    if unknown:
        raise UsageError(
            f"{where}.{unknown[0]}: unknown key (expected severity, reason, subjects, until)"
        )
    if "severity" not in value:
        raise UsageError(f"{where}: an override with a reason needs a severity")
    reason = value.get("reason")
    if not isinstance(reason, str) or not reason.strip():
        raise UsageError(f"{where}.reason: say why the rule is overridden (a non-empty string)")
    subjects = value.get("subjects")
    if subjects is not None and (
        not isinstance(subjects, list) or not all(isinstance(item, str) for item in subjects)
    ):
        raise UsageError(f"{where}.subjects: must be a list of names")
    return Acknowledgement(
        _severity(value["severity"], f"{where}.severity"),
        reason.strip(),
        None if subjects is None else frozenset(subjects),
        _until(value.get("until"), f"{where}.until"),
    )


def _until(value: Any, where: str) -> date | None:
    """An acknowledgement's last day: ``YYYY-MM-DD`` (the ledger reader keeps dates as text;
    a YAML loader that makes them dates is taken as well)."""
    if value is None or (isinstance(value, date) and not hasattr(value, "hour")):
        return value
    if isinstance(value, str):
        try:
            if len(value) == 10:
                return date.fromisoformat(value)
        except ValueError:
            pass
    raise UsageError(f"{where}: must be a day as YYYY-MM-DD, not {value!r}")


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


def capped_per_file(findings: Iterable[Finding], limit: int) -> list[Finding]:
    """At most ``limit`` findings about each file (a subject ``file:line`` is about
    ``file``), in order; the rest of a file's become one finding saying how many more there
    are, of the worst severity among them. A hostile file of a hundred thousand broken
    imports is a report of ``limit + 1`` lines, not a hundred thousand."""
    kept: list[Finding] = []
    dropped: dict[str, list[Finding]] = {}
    counts: dict[str, int] = {}
    for finding in findings:
        file = (finding.subject or "").partition(":")[0]
        counts[file] = counts.get(file, 0) + 1
        if counts[file] <= limit:
            kept.append(finding)
        else:
            dropped.setdefault(file, []).append(finding)
    for file, rest in dropped.items():
        worst = min(rest, key=lambda f: _RANK.get(f.severity, 9))
        rules = ", ".join(sorted({f.rule for f in rest}))
        kept.append(
            Finding(
                worst.rule,
                worst.severity,
                file or None,
                f"and {len(rest):,} more findings ({rules}) in this file, not listed",
            )
        )
    return kept
