"""Judgement and the ratchet: a measurement against its ledger entry, and what an update writes.

Pure functions over plain data (no pytest, no tokenizer), so the plugin, the CLI and the
tests share one definition of "regressed", "improved" and "what --toll-update changes".
Where each kind keeps its pins, and which of them are gated, is the kinds registry's
(:mod:`pytest_toll.core.kinds`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.kinds import KINDS
from pytest_toll.core.settings import SETTINGS
from pytest_toll.gate.ledger import DELETE
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.report.data import (
    IMPROVED,
    NEW,
    OUTCOME_ERROR,
    OVER_BUDGET,
    PASSED,
    REGRESSED,
    STALE,
    EntryResult,
    Outcome,
    PartResult,
)


@dataclass(frozen=True)
class Policy:
    """How to judge: the tolerance above a pin, and what an update may do (by default, as
    the settings' defaults say)."""

    tolerance: int = SETTINGS["tolerance"].default
    update: bool = SETTINGS["update"].default
    allow_increase: bool = SETTINGS["allow_increase"].default
    strict: bool = SETTINGS["strict"].default


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int_or_none(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def pins_of(kind: str, entry: Mapping[str, Any]) -> tuple[int | None, dict[str, int]]:
    """The total pin and the part pins of a ledger entry (the total of skills is derived)."""
    part_key = KINDS[kind].part_pins_key
    raw_parts = entry.get(part_key) if part_key else None
    parts = (
        {str(name): value for name, value in raw_parts.items() if _int_or_none(value) is not None}
        if isinstance(raw_parts, Mapping)
        else {}
    )
    total_key = KINDS[kind].total_pin_key
    if total_key is not None:
        return _int_or_none(entry.get(total_key)), parts
    outside = KINDS[kind].parts_outside_total
    loaded = [value for name, value in parts.items() if name not in outside]
    return (sum(loaded) if loaded else None), parts


def lowest_budget(*budgets: int | None) -> int | None:
    given = [budget for budget in budgets if budget is not None]
    return min(given) if given else None


def judge(
    *,
    kind: str,
    name: str,
    nodeid: str,
    line: int | None,
    entry: Mapping[str, Any],
    measurement: EntryMeasurement | None,
    policy: Policy,
    error: str = "",
    extra_budget: int | None = None,
    extra_other_budgets: Mapping[str, int | None] | None = None,
) -> EntryResult:
    """Judge one measurement (or a failure to measure) against its ledger ``entry``.

    ``extra_budget`` is a budget from elsewhere (a test's ``toll(budget=N)`` marker); the
    lower of it and the ledger's budget applies. ``extra_other_budgets`` does the same for
    the kind's gated other pins, by pin key (``run_pin``: ``toll(run_budget=N)``).
    """
    pin, part_pins = pins_of(kind, entry)
    gated_parts = KINDS[kind].gated_parts
    budget = lowest_budget(_int_or_none(entry.get("budget")), extra_budget)
    if measurement is None:
        parts = [PartResult(part, None, value) for part, value in part_pins.items()]
        return EntryResult(
            kind, name, nodeid, line, None, None, pin, budget, OUTCOME_ERROR, True,
            error or "could not be measured", [], parts,
        )  # fmt: skip
    parts = [
        PartResult(part, value, part_pins.get(part)) for part, value in measurement.parts.items()
    ]
    # Pinned parts that were not measured this time (a tool was removed) still show.
    parts.extend(
        PartResult(part, None, value)
        for part, value in part_pins.items()
        if part not in measurement.parts
    )
    others = _other_pins(kind, entry, measurement, extra_other_budgets or {})
    total = measurement.total
    over_budget = (budget is not None and total > budget) or any(
        other.get("budget") is not None and other["measured"] > other["budget"] for other in others
    )
    if gated_parts:
        compared = [
            (part.measured, part.pin)
            for part in parts
            if part.pin is not None and part.measured is not None
        ]
        if KINDS[kind].open_parts and part_pins:
            # A file or component not pinned yet, beside pinned ones, grew from nothing.
            compared += [(part.measured, 0) for part in parts if part.pin is None and part.measured]
        regressed = any(measured > pinned + policy.tolerance for measured, pinned in compared)
        improved = any(measured < pinned for measured, pinned in compared)
        unpinned = not part_pins
    elif KINDS[kind].pinned_by_rules_only:
        # Gated by its own rules (findings); only its other pins can improve or be new.
        regressed = False
        improved = any(
            other["pin"] is not None and other["measured"] < other["pin"] for other in others
        )
        unpinned = any(other["pin"] is None for other in others)
    else:
        regressed = pin is not None and total > pin + policy.tolerance
        improved = pin is not None and total < pin
        unpinned = pin is None
    gated_others = [other for other in others if "budget" in other and other["pin"] is not None]
    regressed = regressed or any(
        other["measured"] > other["pin"] + policy.tolerance for other in gated_others
    )
    improved = improved or any(other["measured"] < other["pin"] for other in gated_others)
    outcome: Outcome
    if over_budget:
        outcome = OVER_BUDGET
    elif regressed:
        outcome = REGRESSED
    elif unpinned:
        outcome = NEW
    elif improved:
        outcome = IMPROVED
    else:
        outcome = PASSED
    error_findings = [f for f in measurement.findings if f.get("severity") == "error"]
    accepted = regressed and policy.update and policy.allow_increase
    # Under --toll-strict the ledger must cover what is measured: an unpinned entry fails
    # (an update pins it, so it does not fail then).
    unpinned_strict = outcome == NEW and policy.strict and not policy.update
    failed = over_budget or (regressed and not accepted) or bool(error_findings) or unpinned_strict
    result = EntryResult(
        kind, name, nodeid, line, total, measurement.method, pin, budget, outcome, failed,
        _message(
            KINDS[kind].gated_other_pins, (measurement.detail or {}).get("skill_files") or {},
            outcome, total, pin, budget, policy, accepted, others,
            parts if gated_parts else [],
            [str(finding.get("rule")) for finding in error_findings],
        ),
        [dict(finding) for finding in measurement.findings], parts,
        other_pins=others, detail=measurement.detail,
    )  # fmt: skip
    if policy.update:
        result.ratchet = _pin_change(result, policy)
    return result


def _ratio(value: float) -> str:
    # Fixed point, never 3e-06: the message is read on every report, the HTML page too.
    return f"{value:.6f}".rstrip("0").rstrip(".") or "0"


def _other_pins(
    kind: str,
    entry: Mapping[str, Any],
    measurement: EntryMeasurement,
    extra_budgets: Mapping[str, int | None],
) -> list[dict[str, Any]]:
    """The entry's other pins as the report lists them; a gated one has its ``budget``
    (the lower of the ledger's and ``extra_budgets``', or None)."""
    gated = {**KINDS[kind].gated_other_pins, **measurement.other_budgets}
    others: list[dict[str, Any]] = []
    for key, value in measurement.other_pins.items():
        pinned = _number(_at_path(entry, key))
        other: dict[str, Any] = {"key": key, "measured": value, "pin": pinned}
        if key in gated:
            other["budget"] = lowest_budget(
                _int_or_none(_at_path(entry, gated[key])), extra_budgets.get(key)
            )
        others.append(other)
    return others


def _measure_of(pin_key: str) -> str:
    """What an other pin holds, as a measurement: ``run_pin`` pins the ``run``."""
    return pin_key.removesuffix("_pin")


def _files_of(part: str, files: Mapping[str, Mapping[str, int]], most: int = 3) -> str:
    """The files behind a grown part, largest first (" — now: a.md 1,200, b.md 300"): the
    ledger pins the part's total, so this is where its tokens are, for the reader to find the
    one that grew."""
    sizes = files.get(part) or {}
    if not sizes:
        return ""
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{path} {tokens:,}" for path, tokens in ranked[:most])
    more = f" and {len(ranked) - most} more" if len(ranked) > most else ""
    return f" (now in {named}{more})"


def _at_path(entry: Mapping[str, Any], key: str) -> Any:
    """``entry[key]``, where a dotted key (``results.search.pin``) is a path inside it."""
    value: Any = entry
    for part in key.split("."):
        if not isinstance(value, Mapping):
            return None
        value = value.get(part)
    return value


def _message(
    budget_keys: Mapping[str, str],
    files: Mapping[str, Mapping[str, int]],
    outcome: Outcome,
    total: int,
    pin: int | None,
    budget: int | None,
    policy: Policy,
    accepted: bool,
    others: list[dict[str, Any]],
    gated: list[PartResult],
    failing_rules: list[str],
) -> str:
    if outcome == OVER_BUDGET:
        # A measurement is named as one ("run"), not by the pin that holds it ("run_pin"),
        # beside the ledger key of the budget it broke.
        over = [
            f"{_measure_of(other['key'])} measured {other['measured']:,.0f} tok, over its "
            f"{budget_keys.get(other['key'], 'budget')} of {other['budget']:,} by "
            f"{other['measured'] - other['budget']:,.0f}"
            for other in others
            if other.get("budget") is not None and other["measured"] > other["budget"]
        ]
        if budget is not None and total > budget:
            over.insert(0, f"{total:,} tok is over the budget of {budget:,} by {total - budget:,}")
        text = "; ".join(over)
    elif outcome == REGRESSED:
        grown = [
            f"{part.name} +{(part.measured or 0) - (part.pin or 0):,} over its pin {part.pin:,}"
            + _files_of(part.name, files)
            if part.pin is not None
            else f"{part.name} +{part.measured:,} (new, not pinned)"
            for part in gated
            if part.measured is not None
            and part.measured > (part.pin or 0)
            and (part.pin is not None or pin is not None)
        ]
        grown_others = [
            f"{_measure_of(other['key'])} +{other['measured'] - other['pin']:,.0f} over its "
            f"{other['key']} {other['pin']:,.0f}"
            for other in others
            if "budget" in other
            and other["pin"] is not None
            and other["measured"] > other["pin"] + policy.tolerance
        ]
        if grown_others and pin is not None and total > pin + policy.tolerance and not grown:
            grown.append(f"+{total - pin:,} tok over the pin {pin:,}")
        grown.extend(grown_others)
        if grown:
            text = f"regressed: {', '.join(grown)}"
        else:
            text = f"regressed by {total - (pin or 0):,} tok against the pin {pin:,}"
        if accepted:
            text += " — pin raised (--toll-allow-increase)"
        elif policy.tolerance:
            text += f" (tolerance {policy.tolerance:,})"
        if policy.update and not accepted:
            # A newcomer running --toll-update expects the pin to follow; say why it did not.
            text += (
                " — not raised: --toll-update only lowers pins; to accept the increase, run "
                "again with --toll-update --toll-allow-increase"
            )
    elif outcome == IMPROVED:
        lowered = [
            f"{other['key']}: {_ratio(other['measured'])} is below {_ratio(other['pin'])}"
            for other in others
            if other["pin"] is not None and other["measured"] < other["pin"]
        ]
        if pin is not None and pin > total:
            text = f"improved by {pin - total:,} tok"
        else:
            text = "improved" + (f" ({'; '.join(lowered)})" if lowered else "")
        text += " — pin lowered" if policy.update else " — ratchet with --toll-update"
    elif outcome == NEW:
        if policy.update:
            text = "pinned"
        elif policy.strict:
            text = "not pinned, and --toll-strict fails on it — pin with --toll-update"
        else:
            text = "not pinned yet — pin with --toll-update"
    else:
        text = ""
    if failing_rules and outcome in (PASSED, IMPROVED, NEW):
        rules = ", ".join(sorted(set(failing_rules)))
        text = f"fails rule {rules} (severity error)" + (f"; {text}" if text else "")
    return text


def _new_value(measured: Any, pin: Any, policy: Policy) -> Any:
    """The pin an update writes for one number, or None to leave it as it is."""
    if pin is None:
        return measured
    if measured < pin:
        return measured
    if measured > pin and policy.allow_increase:
        return measured
    return None


def _pin_change(result: EntryResult, policy: Policy) -> dict[str, int | None] | None:
    """The change of the entry's total pin an update makes (``from`` None: a new pin)."""
    if result.measured is None:
        return None
    kind = KINDS[result.kind]
    if kind.pinned_by_rules_only:
        return None  # no token pin (transcripts): its other pins are listed on their own
    if kind.gated_parts:
        new_total = 0
        for part in result.parts:
            if part.measured is None or part.name in kind.parts_outside_total:
                continue
            value = _new_value(part.measured, part.pin, policy)
            new_total += part.pin if value is None and part.pin is not None else (value or 0)
        if new_total == result.pin:
            return None
        return {"from": result.pin, "to": new_total}
    value = _new_value(result.measured, result.pin, policy)
    if value is None or value == result.pin:
        return None
    return {"from": result.pin, "to": value}


def plan_entry(result: EntryResult, policy: Policy) -> dict[tuple[str, ...], Any]:
    """The ledger writes ``--toll-update`` makes for one judged entry (none for an error)."""
    if result.measured is None or result.outcome in (OUTCOME_ERROR, STALE):
        return {}
    kind = KINDS[result.kind]
    updates: dict[tuple[str, ...], Any] = {}
    base = kind.keys(result.name)
    key: tuple[str, ...]
    # The total first: a new entry reads {pin: …, run_pin: …}.
    total_key = kind.total_pin_key
    if total_key is not None:
        value = _new_value(result.measured, result.pin, policy)
        if value is not None and value != result.pin:
            key = (*base, total_key)
            updates[key] = value
    for other in result.other_pins:
        new = _new_value(other["measured"], other["pin"], policy)
        if new is not None and new != other["pin"]:
            key = (*base, *str(other["key"]).split("."))
            updates[key] = new
    part_key = kind.part_pins_key
    if part_key is not None:
        for part in result.parts:
            if part.measured is None:
                # Gone from the measurement (a removed tool): its pin goes too.
                key = (*base, part_key, part.name)
                updates[key] = DELETE
                continue
            value = _new_value(part.measured, part.pin, policy)
            if value is not None and value != part.pin:
                key = (*base, part_key, part.name)
                updates[key] = value
    return updates


def plan_update(
    results: Iterable[EntryResult],
    policy: Policy,
    *,
    ledger_tests: Mapping[str, Any] | None = None,
) -> dict[tuple[str, ...], Any]:
    """Every ledger write of an update, in report order.

    Only entries that were measured produce writes. A stale ``tests:`` entry (its test no
    longer exists: the plugin makes stale results for those alone) that holds nothing but
    a machine-written pin is removed; one with a human budget stays, and is reported stale.
    An entry with no result (skipped, errored, deselected, not collected) is left alone.
    """
    updates: dict[tuple[str, ...], Any] = {}
    for result in results:
        if result.outcome == STALE:
            kind = KINDS[result.kind]
            entry = (ledger_tests or {}).get(result.name)
            if (
                kind.python_tests
                and isinstance(entry, Mapping)
                and set(entry) <= {"pin", *kind.gated_other_pins}
            ):
                updates[kind.keys(result.name)] = DELETE
            continue
        updates.update(plan_entry(result, policy))
    return updates


def part_pins_written(
    results: Iterable[EntryResult], updates: Mapping[tuple[str, ...], Any]
) -> list[dict[str, Any]]:
    """The part pins an update writes, each with its entry's label, the part, the pin it had
    (None: a new pin) and the one written: what the summary names, so a pin an update adds
    beside unchanged totals (a skill's first ``executed``) is never written silently."""
    written: list[dict[str, Any]] = []
    for result in results:
        kind = KINDS.get(result.kind)
        if kind is None or kind.part_pins_key is None:
            continue
        base = (*kind.keys(result.name), kind.part_pins_key)
        for part in result.parts:
            value = updates.get((*base, part.name))
            if value is None or value is DELETE:
                continue
            written.append(
                {"entry": result.label, "part": part.name, "from": part.pin, "to": value}
            )
    return written


def stale_result(
    kind: str, name: str, nodeid: str, line: int | None, entry: Mapping[str, Any], policy: Policy
) -> EntryResult:
    """A ledger entry nothing measured in a full run; it fails only under ``--toll-strict``."""
    pin, part_pins = pins_of(kind, entry)
    budget = _int_or_none(entry.get("budget"))
    message = "in the ledger but not measured in this run"
    if KINDS[kind].python_tests:
        message = "in the ledger but its test no longer exists (renamed or removed?)"
    if not policy.strict:
        message += "; --toll-strict fails on it"
    parts = [PartResult(part, None, value) for part, value in part_pins.items()]
    return EntryResult(
        kind, name, nodeid, line, None, None, pin, budget, STALE, policy.strict, message, [], parts
    )
