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


def file_pins_of(kind: str, entry: Mapping[str, Any]) -> dict[str, dict[str, int]]:
    """The per-file pins of a ledger entry, by part (``{}`` for a kind without them, or an
    entry written before they were: it is judged on its parts alone)."""
    row = KINDS[kind]
    raw = entry.get(row.file_pins_key) if row.file_pins_key else None
    if not isinstance(raw, Mapping):
        return {}
    pins: dict[str, dict[str, int]] = {}
    for part in row.file_parts:
        files = raw.get(part)
        if isinstance(files, Mapping):
            pins[part] = {
                str(path): value for path, value in files.items() if _int_or_none(value) is not None
            }
    return pins


def _file_rows(
    measured: Mapping[str, Mapping[str, int]] | None, pins: Mapping[str, Mapping[str, int]]
) -> dict[str, list[PartResult]]:
    """Each part's files as rows (path, measured, pin): measured ones first, then the pinned
    files no longer measured (a removed reference), as a server's removed tool shows."""
    rows: dict[str, list[PartResult]] = {}
    for part in dict.fromkeys([*(measured or {}), *pins]):
        now = (measured or {}).get(part) or {}
        pinned = pins.get(part) or {}
        listed = [PartResult(path, tokens, pinned.get(path)) for path, tokens in now.items()]
        listed += [PartResult(path, None, pin) for path, pin in pinned.items() if path not in now]
        if listed:
            rows[part] = listed
    return rows


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
    file_pins = file_pins_of(kind, entry)
    if measurement is None:
        parts = [PartResult(part, None, value) for part, value in part_pins.items()]
        return EntryResult(
            kind, name, nodeid, line, None, None, pin, budget, OUTCOME_ERROR, True,
            error or "could not be measured", [], parts, files=_file_rows(None, file_pins),
        )  # fmt: skip
    files = _file_rows(measurement.files, file_pins)
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
        if KINDS[kind].total_pin_key is not None:
            # A total pinned on its own (a test's) is gated beside its parts.
            regressed = regressed or (pin is not None and total > pin + policy.tolerance)
            improved = improved or (pin is not None and total < pin)
            unpinned = pin is None
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
    if file_pins:
        # Each file pinned is gated on its own: one that grew fails even when another shrank;
        # a new file beside pinned ones grew from nothing, a removed one is an improvement.
        rows = [row for part_rows in files.values() for row in part_rows]
        regressed = regressed or any(
            row.measured > (row.pin or 0) + policy.tolerance
            for row in rows
            if row.measured is not None
        )
        improved = improved or any(
            row.pin is not None and (row.measured is None or row.measured < row.pin) for row in rows
        )
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
            KINDS[kind].gated_other_pins, files, bool(file_pins),
            outcome, total, pin, budget, policy, accepted, others,
            parts if gated_parts else [],
            [str(finding.get("rule")) for finding in error_findings],
        ),
        [dict(finding) for finding in measurement.findings], parts,
        other_pins=others, detail=measurement.detail, files=files,
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


def _files_of(part: str, files: Mapping[str, list[PartResult]], most: int = 3) -> str:
    """The files behind a grown part, largest first (" (now in a.md 1,200, b.md 300)"), when
    the ledger pins the part's total alone (written before its files were pinned): where
    its tokens are, for the reader to find the one that grew."""
    sizes = {row.name: row.measured for row in files.get(part) or () if row.measured is not None}
    if not sizes:
        return ""
    ranked = sorted(sizes.items(), key=lambda item: (-item[1], item[0]))
    named = ", ".join(f"{path} {tokens:,}" for path, tokens in ranked[:most])
    more = f" and {len(ranked) - most} more" if len(ranked) > most else ""
    return f" (now in {named}{more})"


def _files_grown(rows: list[PartResult], tolerance: int) -> str:
    """The pinned files of a part that grew past their pins, and new ones (growth from
    zero): ``references/style.md 111 → 163, references/new.md new 20``."""
    grown = [
        f"{row.name} {row.pin:,} → {row.measured:,}"
        if row.pin is not None
        else f"{row.name} new {row.measured:,}"
        for row in rows
        if row.measured is not None and row.measured > (row.pin or 0) + tolerance
    ]
    return ", ".join(grown)


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
    files: Mapping[str, list[PartResult]],
    files_pinned: bool,
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
        grown = _grown_parts(gated, files, files_pinned, policy.tolerance)
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
    # An accepted growth does not fail the entry: a failing rule does, so it is named first.
    if failing_rules and (outcome in (PASSED, IMPROVED, NEW) or accepted):
        rules = ", ".join(sorted(set(failing_rules)))
        text = f"fails rule {rules} (severity error)" + (f"; {text}" if text else "")
    return text


def _grown_parts(
    gated: list[PartResult],
    files: Mapping[str, list[PartResult]],
    files_pinned: bool,
    tolerance: int,
) -> list[str]:
    """Each gated part that grew, and the files in it that grew (``references +52 over its
    pin 111: references/style.md 111 → 163``); a part whose own total held but one of its
    pinned files grew is named by that file (``references: references/style.md 111 → 163``)."""
    any_pinned = any(part.pin is not None for part in gated)
    texts: list[str] = []
    for part in gated:
        in_files = _files_grown(files.get(part.name) or [], tolerance) if files_pinned else ""
        if (
            part.measured is None
            or part.measured <= (part.pin or 0)
            or not (part.pin is not None or any_pinned)
        ):
            if in_files:
                texts.append(f"{part.name}: {in_files}")
            continue
        if part.pin is None:
            texts.append(f"{part.name} +{part.measured:,} (new, not pinned)")
            continue
        text = f"{part.name} +{part.measured - part.pin:,} over its pin {part.pin:,}"
        if files_pinned:
            texts.append(text + (f": {in_files}" if in_files else ""))
        else:
            texts.append(text + _files_of(part.name, files))
    return texts


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
    if kind.gated_parts and kind.total_pin_key is None:
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
    # A test of one part and no part pins: a part pin would repeat its total.
    repeats_total = (
        kind.gated_parts
        and total_key is not None
        and len(result.parts) == 1
        and all(part.pin is None for part in result.parts)
    )
    if part_key is not None and not repeats_total:
        updates.update(_row_updates((*base, part_key), result.parts, kind.open_parts, policy))
    file_key = kind.file_pins_key
    if file_key is not None:
        pinned = any(row.pin is not None for rows in result.files.values() for row in rows)
        for part, rows in result.files.items():
            if all(row.measured is None for row in rows):
                # Every file of the part is gone: its map goes, no empty {} left behind.
                key = (*base, file_key, part)
                updates[key] = DELETE
            else:
                updates.update(_row_updates((*base, file_key, part), rows, pinned, policy))
    return updates


def _row_updates(
    base: tuple[str, ...], rows: Iterable[PartResult], open_rows: bool, policy: Policy
) -> dict[tuple[str, ...], Any]:
    """The writes for one map of pins (a server's tools, a skill's files of one part): a
    pin that went lower, a first pin, and a removed row's pin deleted. Where the rows are
    named by what was measured (``open_rows``), a new one beside pinned ones is growth
    from zero: pinned only with --toll-allow-increase, like any rise."""
    pinned = open_rows and any(row.pin is not None for row in rows)
    updates: dict[tuple[str, ...], Any] = {}
    for row in rows:
        key = (*base, row.name)
        if row.measured is None:
            # Gone from the measurement (a removed tool): its pin goes too.
            updates[key] = DELETE
            continue
        if row.pin is None and pinned and row.measured and not policy.allow_increase:
            continue
        value = _new_value(row.measured, row.pin, policy)
        if value is not None and value != row.pin:
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
                and set(entry) <= {"pin", kind.part_pins_key, *kind.gated_other_pins}
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
        rows: list[tuple[tuple[str, ...], str, PartResult]] = [
            ((kind.part_pins_key, part.name), part.name, part) for part in result.parts
        ]
        rows += [
            ((str(kind.file_pins_key), part, row.name), f"{part} {row.name}", row)
            for part, file_rows in result.files.items()
            for row in file_rows
        ]
        for keys, shown, row in rows:
            value = updates.get((*kind.keys(result.name), *keys))
            if value is None or value is DELETE:
                continue
            written.append({"entry": result.label, "part": shown, "from": row.pin, "to": value})
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
        kind, name, nodeid, line, None, None, pin, budget, STALE, policy.strict, message, [], parts,
        files=_file_rows(None, file_pins_of(kind, entry)),
    )  # fmt: skip
