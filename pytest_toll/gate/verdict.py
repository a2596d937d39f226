"""A test's verdict: what a Python test measured and captured, judged against its budgets and
its ledger entry.

One pure function over plain data (no pytest): the pytest adapter gathers what the test's
meter recorded, the requests it captured, the budgets of its ``toll`` marker and of
``toll.capture(...)``, its ``tests:`` entry and the policy, and gets back the
:class:`EntryResult` to record (or None: nothing to judge it against) and the warnings to
issue. Which of a test's failures are errors of the gate, never passes, is decided here:
a test that failed, a capture that could not be measured, a budget or pin with nothing
measured, a ``run_budget`` with nothing captured, and under ``--toll-strict`` a capture
that sent nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_toll.calls.capture import CaptureReport
from pytest_toll.core.kinds import RUN_PIN, TESTS_KIND
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import Policy, judge, lowest_budget
from pytest_toll.report.data import OVER_BUDGET, REGRESSED, EntryResult

NOTHING_CAPTURED = (
    "asked to capture LLM requests but captured none (Anthropic Messages, OpenAI Chat "
    "Completions or Responses, Bedrock, Vertex or Gemini, sent through httpx or a boto3 "
    "client while the test ran)"
)


@dataclass(frozen=True)
class Verdict:
    """The result to record (None: nothing to judge the test against) and the warnings."""

    result: EntryResult | None
    warnings: tuple[str, ...] = ()


def judge_test(
    nodeid: str,
    *,
    errored: bool,
    measurement: EntryMeasurement | None,
    captured: CaptureReport | None,
    budgets: Iterable[int | None],
    run_budgets: Iterable[int | None],
    entry: Mapping[str, Any],
    line: int | None,
    policy: Policy,
) -> Verdict:
    """Judge a test's measured total (and, when it captured, the sum of its requests against
    ``run_budget`` and ``run_pin``).

    ``measurement`` is what the ``toll`` fixture recorded (None: nothing; the largest
    captured request is one of its records), ``captured`` the requests the test sent (None:
    it never captured), ``budgets`` and ``run_budgets`` those of the marker and of
    ``toll.capture(...)`` (the lowest of each applies), ``entry`` its ``tests:`` entry (empty:
    none) and ``line`` where the ledger holds it, ``errored`` whether the test failed.
    """
    budget = lowest_budget(*budgets)
    run_budget = lowest_budget(*run_budgets)
    warnings: list[str] = []
    capture_error = _capture_error(captured, strict=policy.strict)
    if captured is not None and not captured.requests and not policy.strict:
        warnings.append(f"{nodeid}: {NOTHING_CAPTURED}")
    if run_budget is not None and captured is None and not capture_error:
        capture_error = (
            "marked toll(run_budget=…) but captured nothing: the run budget grades the "
            "requests a test captures (toll(capture=True) or toll.capture())"
        )
    measured = measurement is not None
    gated = budget is not None or run_budget is not None
    if (errored or not measured) and not gated and not entry and not capture_error:
        # A failing or non-measuring test with no budget and no pin: nothing to judge.
        return Verdict(None, tuple(warnings))
    sent_nothing = captured is not None and not captured.requests and not capture_error
    if sent_nothing and not measured and not entry:
        # It said so (the warning); its budget grades nothing. A pinned test that stops
        # sending is still an error below: its pin would otherwise go unguarded.
        return Verdict(None, tuple(warnings))
    judged: EntryMeasurement | None = None
    error = ""
    if errored:
        error = "the test did not pass: its measurement is neither judged nor pinned"
    elif capture_error:
        error = capture_error
    elif measurement is None:
        gate = "marked toll(budget=…)" if gated else "pinned in the ledger"
        how = "capture its requests" if captured is not None else "measure with the toll fixture"
        error = f"{gate} but measured nothing: {how}"
    elif captured is not None and captured.judged:
        judged = replace(measurement, other_pins={RUN_PIN: captured.total})
    else:
        judged = measurement
    result = judge(
        kind=TESTS_KIND.name,
        name=nodeid,
        nodeid=nodeid,
        line=line,
        entry=entry,
        measurement=judged,
        policy=policy,
        error=error,
        extra_budget=budget,
        extra_other_budgets={RUN_PIN: run_budget},
    )
    if captured is not None:
        result.capture = captured.as_dict()
        # When the largest request is what broke its pin or budget (not the run's sum alone).
        graded, pin, ceiling = result.measured, result.pin, result.budget
        over_pin = (
            result.outcome == REGRESSED
            and None not in (graded, pin)
            and int(graded or 0) > int(pin or 0) + policy.tolerance
        )
        over_budget = (
            result.outcome == OVER_BUDGET
            and None not in (graded, ceiling)
            and int(graded or 0) > int(ceiling or 0)
        )
        if over_pin or over_budget:
            result.message += _largest_request_parts(result.capture)
    return Verdict(result, tuple(warnings))


def _largest_request_parts(capture: Mapping[str, Any]) -> str:
    """``; largest request #3: messages 92, system 28, skills 0, tools 72``: which request
    the pin grades and its parts, so a failure names what the grown request holds (the pin
    is the request's total; its parts are not pinned one by one)."""
    number = capture.get("largest_number")
    for request in capture.get("requests") or ():
        if request.get("number") == number and request.get("parts"):
            parts = ", ".join(f"{name} {tokens:,}" for name, tokens in request["parts"].items())
            return f"; largest request #{number}: {parts}"
    return ""


def _capture_error(captured: CaptureReport | None, *, strict: bool) -> str:
    """Why a capture cannot be judged: a request that could not be measured (never a pass),
    or, under ``--toll-strict``, no request at all."""
    if captured is None:
        return ""
    if captured.unjudged:
        first = captured.unjudged[0]
        more = len(captured.unjudged) - 1
        also = f" (and {more} more)" if more else ""
        return f"could not judge captured request {first.describe()}: {first.error}{also}"
    if not captured.requests and strict:
        return f"{NOTHING_CAPTURED}; --toll-strict fails it"
    return ""
