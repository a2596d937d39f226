"""A test's verdict as plain data: what it measured and captured, its budgets, its ledger
entry and the policy in; the result (or none) and the warnings to issue out. The pytester
runs of tests/plugin and tests/capture drive the same function through the plugin."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_toll.calls.capture import (
    ANTHROPIC_MESSAGES,
    OPENAI_CHAT,
    CaptureReport,
    SentRequest,
    measure_sent,
)
from pytest_toll.core.kinds import RUN_PIN
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import Policy
from pytest_toll.gate.verdict import NOTHING_CAPTURED, Verdict, judge_test

NODEID = "test_agent.py::test_prompt"
MEASURED = EntryMeasurement(40, "o200k", {"prompt": 40})
PINNED = {"pin": 40}
NOTHING = CaptureReport()


def body(text: str) -> bytes:
    return json.dumps(
        {"model": "claude-sonnet-5", "messages": [{"role": "user", "content": text}]}
    ).encode()


def sent_good(*texts: str) -> CaptureReport:
    return measure_sent(
        [
            SentRequest(ANTHROPIC_MESSAGES, "api.anthropic.com", "/v1/messages", body(text))
            for text in texts
        ]
    )


def sent_bad(count: int) -> CaptureReport:
    return measure_sent(
        [SentRequest(OPENAI_CHAT, "api.openai.com", "/v1/chat/completions", b"{oops")] * count
    )


def verdict(**given: Any) -> Verdict:
    given.setdefault("errored", False)
    given.setdefault("measurement", None)
    given.setdefault("captured", None)
    given.setdefault("budgets", ())
    given.setdefault("run_budgets", ())
    given.setdefault("entry", {})
    given.setdefault("line", None)
    given.setdefault("policy", Policy())
    return judge_test(NODEID, **given)


def error_of(found: Verdict) -> str:
    assert found.result is not None
    assert (found.result.outcome, found.result.failed, found.result.measured) == (
        "error",
        True,
        None,
    )
    return found.result.message


# --- nothing to judge against: no result --------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        pytest.param({"errored": True, "measurement": MEASURED}, id="errored"),
        pytest.param({}, id="measured nothing"),
        pytest.param({"errored": True}, id="errored, measured nothing"),
    ],
)
def test_no_budget_no_pin_and_nothing_measured_or_a_failure_is_no_result(
    given: dict[str, Any],
) -> None:
    assert verdict(**given) == Verdict(None, ())


# --- an error: gated, but nothing to judge --------------------------------------------


@pytest.mark.parametrize(
    "given",
    [
        pytest.param({"budgets": (100,)}, id="budget"),
        pytest.param({"entry": PINNED, "line": 3}, id="pin"),
        pytest.param({"run_budgets": (100,), "captured": sent_good("hello")}, id="run budget"),
    ],
)
def test_a_gated_test_that_failed_is_an_error_not_a_pass(given: dict[str, Any]) -> None:
    found = verdict(errored=True, measurement=MEASURED, **given)
    assert error_of(found) == "the test did not pass: its measurement is neither judged nor pinned"
    assert found.warnings == ()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"budgets": (100,)}, "marked toll(budget=…) but measured nothing: measure with the toll"),
        ({"entry": PINNED}, "pinned in the ledger but measured nothing: measure with the toll"),
        (
            {"entry": PINNED, "captured": NOTHING},
            "pinned in the ledger but measured nothing: capture its requests",
        ),
    ],
)
def test_a_gated_test_that_measured_nothing_is_an_error(
    given: dict[str, Any], message: str
) -> None:
    assert error_of(verdict(**given)).startswith(message)


def test_a_request_that_could_not_be_measured_is_an_error_even_ungated() -> None:
    one = verdict(captured=sent_bad(1))
    assert error_of(one).startswith("could not judge captured request #1 openai.chat_completions: ")
    assert "more" not in error_of(one)
    assert error_of(verdict(captured=sent_bad(3))).endswith(" (and 2 more)")
    # It wins over a measurement: a failed measurement is never a pass.
    assert error_of(verdict(captured=sent_bad(1), measurement=MEASURED)).startswith("could not")


def test_a_run_budget_without_a_capture_is_an_error() -> None:
    found = verdict(measurement=MEASURED, run_budgets=(None, 500))
    assert error_of(found) == (
        "marked toll(run_budget=…) but captured nothing: the run budget grades the requests "
        "a test captures (toll(capture=True) or toll.capture())"
    )


# --- a capture that sent nothing ------------------------------------------------------


def test_nothing_captured_warns_and_grades_nothing_when_no_pin_guards_it() -> None:
    warned = (f"{NODEID}: {NOTHING_CAPTURED}",)
    assert verdict(captured=NOTHING) == Verdict(None, warned)
    # Its budget grades nothing: the warning said so.
    assert verdict(captured=NOTHING, budgets=(10,), run_budgets=(10,)) == Verdict(None, warned)
    # A pinned test that stops sending is an error, and warns too.
    pinned = verdict(captured=NOTHING, entry=PINNED)
    assert error_of(pinned).endswith("capture its requests") and pinned.warnings == warned


def test_under_strict_nothing_captured_fails_instead_of_warning() -> None:
    found = verdict(captured=NOTHING, policy=Policy(strict=True))
    assert error_of(found) == f"{NOTHING_CAPTURED}; --toll-strict fails it"
    assert found.warnings == ()


# --- judged ---------------------------------------------------------------------------


def test_the_lowest_of_the_marker_and_fixture_budgets_applies() -> None:
    over = verdict(measurement=MEASURED, budgets=(50, 30))
    assert over.result is not None
    assert (over.result.budget, over.result.outcome, over.result.failed) == (
        30,
        "over_budget",
        True,
    )
    under = verdict(measurement=MEASURED, budgets=(None, 60))
    assert under.result is not None
    assert (under.result.budget, under.result.failed) == (60, False)


def test_without_a_ledger_entry_a_measurement_is_new_and_passes() -> None:
    found = verdict(measurement=MEASURED)
    assert found.result is not None
    assert (found.result.outcome, found.result.failed, found.result.line) == ("new", False, None)
    assert (found.result.kind, found.result.name, found.result.nodeid) == ("tests", NODEID, NODEID)
    assert found.result.message == "not pinned yet — pin with --toll-update"
    assert found.result.capture is None


def test_against_its_pin_with_the_entrys_line() -> None:
    found = verdict(measurement=MEASURED, entry={"pin": 39}, line=7, policy=Policy(tolerance=1))
    assert found.result is not None
    assert (found.result.outcome, found.result.pin, found.result.line) == ("passed", 39, 7)
    regressed = verdict(measurement=MEASURED, entry={"pin": 38}, policy=Policy(tolerance=1))
    assert regressed.result is not None and regressed.result.outcome == "regressed"


def test_a_capture_grades_its_sum_by_the_lowest_run_budget_and_travels_on_the_result() -> None:
    captured = sent_good("What changed in the release?", "And before that, in the one before?")
    largest = captured.largest
    assert largest is not None and largest.tokens is not None
    measurement = EntryMeasurement(largest.tokens, "o200k", {"largest": largest.tokens})
    found = verdict(
        measurement=measurement, captured=captured, run_budgets=(captured.total - 1, None)
    )
    assert found.result is not None
    assert found.result.capture == captured.as_dict()
    (run,) = found.result.other_pins
    assert (run["key"], run["measured"], run["budget"]) == (
        RUN_PIN,
        captured.total,
        captured.total - 1,
    )
    assert (found.result.outcome, found.result.failed) == ("over_budget", True)
    assert found.warnings == ()
    within = verdict(measurement=measurement, captured=captured, run_budgets=(captured.total,))
    assert within.result is not None and not within.result.failed


def test_a_capture_regression_names_the_parts_of_the_request_it_grades() -> None:
    """#36 item 6g: the pin grades the largest request; the failure says which request that
    is and what it holds, part by part, beside the part split of every other row."""
    captured = sent_good("short", "a longer message this time, with more words in it")
    largest = captured.largest
    assert largest is not None and largest.report is not None
    measurement = EntryMeasurement(largest.report.graded_tokens, "o200k", {})
    found = verdict(measurement=measurement, captured=captured, entry={"pin": 5})
    assert found.result is not None and found.result.outcome == "regressed"
    capture = found.result.capture
    assert capture is not None
    parts = ", ".join(
        f"{name} {tokens:,}" for name, tokens in capture["requests"][1]["parts"].items()
    )
    assert found.result.message.endswith(f"; largest request #2: {parts}")
