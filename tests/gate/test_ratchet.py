"""Judgement and the ratchet plan, as pure functions over plain data."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.gate.ledger import DELETE
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import (
    Policy,
    judge,
    plan_entry,
    plan_update,
    stale_result,
)
from pytest_toll.report.data import EntryResult

DEFAULT = Policy()


def server(
    total: int, entry: dict[str, Any], policy: Policy = DEFAULT, **parts: int
) -> EntryResult:
    return judge(
        kind="servers",
        name="files",
        nodeid="toll.yaml::servers::files",
        line=3,
        entry=entry,
        measurement=EntryMeasurement(total, "o200k", parts),
        policy=policy,
    )


@pytest.mark.parametrize(
    ("total", "entry", "policy", "outcome", "failed", "message"),
    [
        (100, {"pin": 100}, Policy(), "passed", False, ""),
        (101, {"pin": 100}, Policy(), "regressed", True, "regressed by 1 tok against the pin 100"),
        (101, {"pin": 100}, Policy(tolerance=1), "passed", False, ""),
        (
            103,
            {"pin": 100},
            Policy(tolerance=2),
            "regressed",
            True,
            "regressed by 3 tok against the pin 100 (tolerance 2)",
        ),
        (
            90,
            {"pin": 100},
            Policy(),
            "improved",
            False,
            "improved by 10 tok — ratchet with --toll-update",
        ),
        (
            90,
            {"pin": 100},
            Policy(update=True),
            "improved",
            False,
            "improved by 10 tok — pin lowered",
        ),
        (90, {}, Policy(), "new", False, "not pinned yet — pin with --toll-update"),
        (
            90,
            {"budget": 80},
            Policy(),
            "over_budget",
            True,
            "90 tok is over the budget of 80 by 10",
        ),
        (
            90,
            {"budget": 80, "pin": 95},
            Policy(),
            "over_budget",
            True,
            "90 tok is over the budget of 80 by 10",
        ),
        (
            120,
            {"pin": 100},
            Policy(update=True, allow_increase=True),
            "regressed",
            False,
            "regressed by 20 tok against the pin 100 — pin raised (--toll-allow-increase)",
        ),
        (
            120,
            {"pin": 100},
            Policy(update=True),
            "regressed",
            True,
            "regressed by 20 tok against the pin 100 — not raised: --toll-update only lowers "
            "pins; to accept the increase, run again with --toll-update --toll-allow-increase",
        ),
    ],
)
def test_outcomes(
    total: int, entry: dict[str, Any], policy: Policy, outcome: str, failed: bool, message: str
) -> None:
    result = server(total, entry, policy)
    assert (result.outcome, result.failed, result.message) == (outcome, failed, message)
    assert result.delta == (None if "pin" not in entry else total - entry["pin"])


def test_error_findings_fail_warnings_do_not() -> None:
    warn = {"rule": "E122", "severity": "warn", "subject": "a", "message": "thin"}
    error = {"rule": "E127", "severity": "error", "subject": "a", "message": "too big"}
    for findings, failed in (((warn,), False), ((warn, error), True)):
        result = judge(
            kind="servers",
            name="s",
            nodeid="n",
            line=1,
            entry={"pin": 5},
            measurement=EntryMeasurement(5, "o200k", {}, findings),
            policy=Policy(),
        )
        assert (result.outcome, result.failed) == ("passed", failed)


def test_an_unmeasured_entry_is_an_error_never_a_pass() -> None:
    result = judge(
        kind="servers",
        name="s",
        nodeid="n",
        line=1,
        entry={"pin": 5, "tools": {"a": 5}},
        measurement=None,
        policy=Policy(update=True),
        error="servers.s: server exited with status 3",
    )
    assert (result.outcome, result.failed, result.measured) == ("error", True, None)
    assert result.message == "servers.s: server exited with status 3"
    assert plan_entry(result, Policy(update=True)) == {}


def test_plan_lowers_adds_and_removes_part_pins_but_never_raises() -> None:
    policy = Policy(update=True)
    result = server(
        90, {"pin": 100, "tools": {"a": 50, "b": 50, "gone": 3}}, policy, a=40, b=55, c=1
    )
    assert result.ratchet == {"from": 100, "to": 90}
    assert plan_entry(result, policy) == {
        ("servers", "files", "pin"): 90,
        ("servers", "files", "tools", "a"): 40,
        ("servers", "files", "tools", "c"): 1,
        ("servers", "files", "tools", "gone"): DELETE,
    }
    raising = Policy(update=True, allow_increase=True)
    assert plan_entry(server(110, {"pin": 100}, raising), raising) == {
        ("servers", "files", "pin"): 110
    }
    assert plan_entry(server(110, {"pin": 100}, policy), policy) == {}


def test_skill_levels_are_gated_each_on_their_own() -> None:
    pin = {"metadata": 90, "body": 2000, "references": 0}
    result = judge(
        kind="skills",
        name="pdf",
        nodeid="toll.yaml::skills::pdf",
        line=2,
        entry={"path": "skills/pdf", "pin": pin},
        measurement=EntryMeasurement(
            2040, "o200k", {"metadata": 100, "body": 1940, "references": 0}
        ),
        policy=Policy(update=True),
    )
    # The total went down (2090 -> 2040), but the always-loaded metadata grew by 10.
    assert (result.outcome, result.failed, result.pin, result.measured) == (
        "regressed",
        True,
        2090,
        2040,
    )
    assert plan_entry(result, Policy(update=True)) == {("skills", "pdf", "pin", "body"): 1940}
    assert result.ratchet == {"from": 2090, "to": 2030}


def test_stale_entries_fail_only_when_strict_and_pin_only_tests_are_removed() -> None:
    loose = stale_result("tests", "t.py::gone", "t.py::gone", 4, {"pin": 3}, Policy())
    strict = stale_result("tests", "t.py::gone", "t.py::gone", 4, {"pin": 3}, Policy(strict=True))
    assert (loose.outcome, loose.failed, strict.failed) == ("stale", False, True)
    kept = stale_result("tests", "t.py::kept", "t.py::kept", 5, {"budget": 9, "pin": 3}, Policy())
    ledger_tests = {"t.py::gone": {"pin": 3}, "t.py::kept": {"budget": 9, "pin": 3}}
    plan = plan_update([loose, kept], Policy(update=True), ledger_tests=ledger_tests)
    assert plan == {("tests", "t.py::gone"): DELETE}
    # An entry with no result at all (skipped, errored, not collected) is left alone.
    assert plan_update([], Policy(update=True), ledger_tests=ledger_tests) == {}


def test_an_unpinned_entry_fails_under_strict_unless_updating() -> None:
    measurement = EntryMeasurement(10, "o200k", {})
    for policy, failed in (
        (Policy(), False),
        (Policy(strict=True), True),
        (Policy(strict=True, update=True), False),
    ):
        result = judge(
            kind="tests", name="t.py::x", nodeid="t.py::x", line=None, entry={},
            measurement=measurement, policy=policy,
        )  # fmt: skip
        assert (result.outcome, result.failed) == ("new", failed)
        assert ("--toll-strict fails on it" in result.message) == failed


pins = st.one_of(st.none(), st.integers(min_value=0, max_value=5000))
tool_names = st.sampled_from(["a", "b", "c", "d"])


@settings(max_examples=300, deadline=None)
@given(
    total=st.integers(min_value=0, max_value=5000),
    pin=pins,
    measured_parts=st.dictionaries(tool_names, st.integers(min_value=0, max_value=900)),
    pinned_parts=st.dictionaries(tool_names, st.integers(min_value=0, max_value=900)),
    allow_increase=st.booleans(),
)
def test_the_ratchet_never_raises_unasked_and_settles_in_one_update(
    total: int,
    pin: int | None,
    measured_parts: dict[str, int],
    pinned_parts: dict[str, int],
    allow_increase: bool,
) -> None:
    policy = Policy(update=True, allow_increase=allow_increase)
    entry: dict[str, Any] = {"tools": dict(pinned_parts)}
    if pin is not None:
        entry["pin"] = pin
    result = server(total, entry, policy, **measured_parts)
    plan = plan_entry(result, policy)
    for key, value in plan.items():
        old = entry.get("pin") if key[-1] == "pin" else pinned_parts.get(key[-1])
        if value is DELETE:
            assert key[-1] in pinned_parts and key[-1] not in measured_parts
        elif old is not None and not allow_increase:
            assert value < old
    # Apply the plan: judging the same measurement again plans nothing more.
    for key, value in plan.items():
        if key[-1] == "pin":
            entry["pin"] = value
        elif value is DELETE:
            del entry["tools"][key[-1]]
        else:
            entry["tools"][key[-1]] = value
    again = server(total, entry, policy, **measured_parts)
    assert plan_entry(again, policy) == {}
    if allow_increase or pin is None:
        assert (again.pin, again.outcome) == (total, "passed")
    else:
        assert again.pin == min(pin, total)


def test_a_skills_executed_part_is_gated_but_outside_its_total_and_budget() -> None:
    # Scripts a skill runs (issue #25, item 5): pinned and gated on their own, but their
    # source is not loaded, so it is neither in the total nor held to the budget.
    pin = {"metadata": 90, "body": 2000, "references": 0, "executed": 5000}
    measured = {"metadata": 90, "body": 2000, "references": 0, "executed": 5000}

    def skill(entry: dict[str, Any], parts: dict[str, int], policy: Policy) -> EntryResult:
        total = sum(value for name, value in parts.items() if name != "executed")
        return judge(
            kind="skills",
            name="docx",
            nodeid="toll.yaml::skills::docx",
            line=2,
            entry=entry,
            measurement=EntryMeasurement(total, "o200k", parts),
            policy=policy,
        )

    passed = skill({"path": "s", "budget": 2500, "pin": pin}, measured, Policy())
    assert (passed.outcome, passed.failed, passed.pin, passed.measured) == (
        "passed",
        False,
        2090,
        2090,
    )
    grown = skill({"path": "s", "pin": pin}, {**measured, "executed": 5100}, Policy())
    assert (grown.outcome, grown.failed, grown.message) == (
        "regressed",
        True,
        "regressed: executed +100 over its pin 5,000",
    )
    # A ledger written before the part existed: the part is new, nothing fails, an update
    # pins it and leaves the other pins alone.
    old_pin = {"metadata": 90, "body": 2000, "references": 5000}
    moved = {"metadata": 90, "body": 2000, "references": 0, "executed": 5000}
    update = Policy(update=True)
    result = skill({"path": "s", "pin": old_pin}, moved, update)
    assert (result.outcome, result.failed) == ("improved", False)
    assert plan_entry(result, update) == {
        ("skills", "docx", "pin", "references"): 0,
        ("skills", "docx", "pin", "executed"): 5000,
    }
    assert result.ratchet == {"from": 7090, "to": 2090}


def _memory(parts: dict[str, int], pin: dict[str, int], policy: Policy = DEFAULT) -> EntryResult:
    return judge(
        kind="memory",
        name="claude",
        nodeid="toll.yaml::memory::claude",
        line=2,
        entry={"pin": pin},
        measurement=EntryMeasurement(sum(parts.values()), "o200k", parts),
        policy=policy,
    )


def test_a_new_memory_file_beside_pinned_ones_is_growth_from_zero() -> None:
    pinned = {"CLAUDE.md": 50, "docs/style.md": 20}
    result = _memory({"CLAUDE.md": 50, "docs/style.md": 15, "docs/new.md": 9}, pinned)
    # docs/style.md shrank by 5; the new import still fails the gate, by name.
    assert (result.outcome, result.failed) == ("regressed", True)
    assert result.message == "regressed: docs/new.md +9 (new, not pinned)"
    update = Policy(update=True, allow_increase=True)
    assert plan_entry(_memory({"CLAUDE.md": 50, "docs/new.md": 9}, pinned, update), update) == {
        ("memory", "claude", "pin", "docs/new.md"): 9,
        ("memory", "claude", "pin", "docs/style.md"): DELETE,
    }
    # A first measurement (nothing pinned yet) is new, not growth.
    assert _memory({"CLAUDE.md": 50}, {}).outcome == "new"


def test_a_skill_level_left_unpinned_is_not_growth() -> None:
    result = judge(
        kind="skills",
        name="pdf",
        nodeid="toll.yaml::skills::pdf",
        line=2,
        entry={"path": "skills/pdf", "pin": {"metadata": 90, "body": 2000}},
        measurement=EntryMeasurement(
            2100, "o200k", {"metadata": 90, "body": 2000, "references": 10}
        ),
        policy=DEFAULT,
    )
    assert (result.outcome, result.failed) == ("passed", False)


def test_an_accepted_growth_that_still_fails_names_the_failing_rule() -> None:
    # --toll-allow-increase raises the pin, so what fails the entry is its error finding:
    # the message must say so, not only that the pin was raised.
    raising = Policy(update=True, allow_increase=True)
    result = judge(
        kind="servers",
        name="files",
        nodeid="toll.yaml::servers::files",
        line=3,
        entry={"pin": 100},
        measurement=EntryMeasurement(
            110, "o200k", {}, findings=({"rule": "E101", "severity": "error", "message": "x"},)
        ),
        policy=raising,
    )
    assert result.failed
    assert result.message.startswith("fails rule E101 (severity error); regressed"), result.message
    assert "pin raised (--toll-allow-increase)" in result.message
