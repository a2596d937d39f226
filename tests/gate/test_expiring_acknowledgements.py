"""Acknowledgements that expire (issue #37 item 5): ``until: YYYY-MM-DD`` on an acknowledged
finding holds through that day; after it the finding counts at the rule's own severity again
and its message says since when. ``toll init`` writes none."""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import pytest

from pytest_toll.cli import main
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import ERROR, WARN, RuleOverrides, current_day
from pytest_toll.gate.ledger import ledger_from_text
from pytest_toll.gate.starter import Discovery, Starter
from tests.plugin.inner import QUIET

DEMO_SKILL = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills" / "release-notes"

DEBT = {
    "E125": {
        "severity": "warn",
        "reason": "kept until the v2 API lands",
        "subjects": ["old_tool"],
        "until": "2026-11-30",
    }
}


@pytest.mark.parametrize(
    ("today", "severity"),
    [(date(2026, 11, 29), WARN), (date(2026, 11, 30), WARN), (date(2026, 12, 1), ERROR)],
)
def test_an_acknowledgement_holds_through_its_last_day_only(today: date, severity: str) -> None:
    rules = RuleOverrides.parse(DEBT, today=today)
    found = rules.finding("E125", ERROR, "old_tool", "too long")
    assert found is not None and found.severity == severity


def test_an_expired_acknowledgement_says_since_when_it_counts_again() -> None:
    held = RuleOverrides.parse(DEBT, today=date(2026, 11, 30)).finding(
        "E125", ERROR, "old_tool", "too long"
    )
    lapsed = RuleOverrides.parse(DEBT, today=date(2027, 1, 15)).finding(
        "E125", ERROR, "old_tool", "too long"
    )
    assert held is not None and held.message == (
        "too long (acknowledged in the ledger: kept until the v2 API lands; until 2026-11-30)"
    )
    assert lapsed is not None and lapsed.message == (
        "too long (acknowledged until 2026-11-30, counts again since 2026-12-01: "
        "kept until the v2 API lands)"
    )


def test_an_expired_acknowledgement_falls_back_to_the_rules_own_default() -> None:
    rules = RuleOverrides.parse(
        {"S104": {"severity": "off", "reason": "later", "until": "2020-01-01"}},
        today=date(2020, 1, 2),
    )
    # Off while it held: nothing reported; expired: the rule's default (here warn) again.
    found = rules.finding("S104", WARN, "x", "long body")
    assert found is not None and found.severity == WARN and "since 2020-01-02" in found.message
    assert (
        RuleOverrides.parse(
            {"S104": {"severity": "off", "reason": "later", "until": "2020-01-01"}},
            today=date(2020, 1, 1),
        ).finding("S104", WARN, "x", "long body")
        is None
    )


def test_the_day_carries_into_a_plugins_components() -> None:
    rules = RuleOverrides.parse(
        {
            "S101": {
                "severity": "warn",
                "reason": "r",
                "subjects": ["skills/a"],
                "until": "2026-01-01",
            }
        },
        today=date(2026, 6, 1),
    ).within("skills")
    found = rules.finding("S101", ERROR, "a", "name differs")
    assert found is not None and found.severity == ERROR and "since 2026-01-02" in found.message


def test_a_date_a_yaml_loader_made_is_taken_as_well() -> None:
    rules = RuleOverrides.parse(
        {"S101": {"severity": "warn", "reason": "r", "until": date(2026, 1, 1)}},
        today=date(2026, 1, 2),
    )
    found = rules.finding("S101", ERROR, "a", "m")
    assert found is not None and found.severity == ERROR


def test_the_ledger_schema_takes_a_day_and_refuses_anything_else() -> None:
    head = "version: 1\nrules:\n  E126: {severity: warn, reason: kept, until: "
    ledger_from_text(head + "2026-12-31}\n", Path("toll.yaml"))
    with pytest.raises(UsageError, match=r"toll.yaml:3: rules.E126"):
        ledger_from_text(head + "tomorrow}\n", Path("toll.yaml"))
    with pytest.raises(UsageError, match=r"rules.E126.until: must be a day"):
        RuleOverrides.parse({"E126": {"severity": "warn", "reason": "kept", "until": "2026-02-30"}})


@pytest.mark.slow
def test_init_writes_no_expiry_and_the_gate_fails_once_one_has_passed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = pytester.path / "skills" / "notes"
    shutil.copytree(DEMO_SKILL, folder)  # its name says release-notes: S101 at init
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    capsys.readouterr()
    ledger = pytester.path / "toll.yaml"
    written = ledger.read_text(encoding="utf-8")
    assert "S101: {severity:" in written and "until:" not in written

    def with_until(day: str) -> None:
        ledger.write_text(
            written.replace(
                'subjects: ["release-notes"]}', f'subjects: ["release-notes"], until: {day}}}'
            ),
            encoding="utf-8",
        )

    with_until("2999-12-31")
    held = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert held.ret == 0, held.stdout.str()
    held.stdout.fnmatch_lines(["*S101 warn release-notes: *not yet reviewed*until 2999-12-31*"])
    with_until("2020-01-31")
    due = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert due.ret == 1, due.stdout.str()
    due.stdout.fnmatch_lines(
        [
            "*S101 error release-notes: *acknowledged until 2020-01-31, counts again since 2020-02-01*"
        ]
    )


def test_toll_today_names_the_day_acknowledgements_are_judged_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """To see which debt falls due by a coming day, or to make a run reproducible (the docs'
    examples pin it); an explicit ``today`` still wins, and a bad value is refused by name."""
    assert current_day({"TOLL_TODAY": "2026-12-01"}) == date(2026, 12, 1)
    assert current_day({"TOLL_TODAY": " "}) == date.today()
    assert current_day({}) == date.today()
    with pytest.raises(UsageError, match=r"TOLL_TODAY: must be a day as YYYY-MM-DD"):
        current_day({"TOLL_TODAY": "next week"})
    monkeypatch.setenv("TOLL_TODAY", "2026-12-01")
    due = RuleOverrides.parse(DEBT).finding("E125", ERROR, "old_tool", "too long")
    assert due is not None and due.severity == ERROR
    assert "counts again since 2026-12-01" in due.message
    monkeypatch.setenv("TOLL_TODAY", "2026-11-30")
    held = RuleOverrides.parse(DEBT).finding("E125", ERROR, "old_tool", "too long")
    assert held is not None and held.severity == WARN
    explicit = RuleOverrides.parse(DEBT, today=date(2027, 1, 1))
    lapsed = explicit.finding("E125", ERROR, "old_tool", "too long")
    assert lapsed is not None and lapsed.severity == ERROR


def test_toll_init_dates_what_it_found_by_toll_today(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOLL_TODAY", "2026-11-30")
    assert Starter(Discovery(Path("."))).today == "2026-11-30"


def test_a_toll_today_that_is_not_a_day_stops_the_gate_before_it_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even with no acknowledgement to read it: a typo must not leave the clock's day in use."""
    pytester.path.joinpath("toll.yaml").write_text("version: 1\n", encoding="utf-8")
    monkeypatch.setenv("TOLL_TODAY", "tomorrow")
    result = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*TOLL_TODAY: must be a day as YYYY-MM-DD, not 'tomorrow'*"])


def test_a_ledger_with_an_until_date_is_rewritten_by_an_update(tmp_path: Path) -> None:
    # YAML reads an unquoted 2026-12-31 as a date; the writer's read-back check compares with
    # the reader's plain text, so a date left as a date refused every update of the ledger.
    from pytest_toll.gate.ledger import load_ledger, rewrite_ledger

    ledger = tmp_path / "toll.yaml"
    ledger.write_text(
        "version: 1\n"
        "rules:\n"
        "  S106: {severity: warn, reason: the folder is made by setup, until: 2026-12-31}\n"
        "tests:\n"
        "  t.py::a: {pin: 9}\n",
        encoding="utf-8",
    )
    rewrite_ledger(ledger, {("tests", "t.py::a", "pin"): 7})
    written = load_ledger(ledger).data
    assert written["tests"]["t.py::a"] == {"pin": 7}
    assert written["rules"]["S106"]["until"] == "2026-12-31"
    assert "until: 2026-12-31}" in ledger.read_text(encoding="utf-8")
