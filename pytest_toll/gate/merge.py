"""N shard reports -> one session report: one verdict, stale entries, one ratchet.

Each shard of a split suite wrote its JSON report (``pytest --toll --toll-json``); the merge
checks that they belong together — every shard of the matrix there once, the same ledger
bytes, the same pytest-toll, the same settings — unions the measured entries (an entry
measured in two shards must be measured identically), checks each ledger item was measured
by exactly one shard, then judges the union as one full run would: every measurement again
under the merge's policy (so ``--update``, ``--allow-increase`` and ``--strict`` mean what
they mean to ``pytest --toll``), stale entries over the union of what the shards collected,
and the ratchet through :func:`pytest_toll.gate.session.write_ratchet` (the one writer).

Anything that makes the set unjudgeable raises :class:`CouldNotJudge`: a missing shard is
never a pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.kinds import KINDS, TESTS_KIND
from pytest_toll.core.limits import MAX_INPUT_FILE_BYTES
from pytest_toll.core.settings import SETTINGS
from pytest_toll.core.textio import MissingFile, json_within_depth, read_file_bytes
from pytest_toll.gate.ledger import Ledger
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import Policy, judge, stale_result
from pytest_toll.gate.session import (
    collected_of,
    ledger_pricing,
    ledger_unmeasured_entries,
    write_ratchet,
)
from pytest_toll.gate.shard_checks import check_entries, check_figures
from pytest_toll.gate.shards import ledger_sha256
from pytest_toll.report.data import (
    OUTCOME_ERROR,
    SCHEMA_PATH,
    STALE,
    EntryResult,
    SessionReport,
)

#: Report fields every shard must share: a merge of different settings would judge nothing.
_SHARED = (
    "tool_version",
    "tokenizer",
    "ledger",
    "ledger_sha256",
    *(name for name, setting in SETTINGS.items() if setting.shards_agree),
)


@dataclass(frozen=True)
class ShardReport:
    """One shard's JSON report and the file it came from (named in every error)."""

    source: str
    data: Mapping[str, Any]

    @property
    def index(self) -> int:
        shard = self.data.get("shard")
        return int(shard["index"]) if isinstance(shard, Mapping) else 1

    @property
    def count(self) -> int:
        shard = self.data.get("shard")
        return int(shard["count"]) if isinstance(shard, Mapping) else 1


@dataclass
class Merged:
    """The merged report, and why the ledger could not be written (an error of the merge)."""

    report: SessionReport
    ledger_error: str | None = None


def load_shard_report(path: Path) -> ShardReport:
    """Read and validate one shard's report against ``report.schema.json`` and the figure
    rules (:func:`check_figures`). Only a regular file under the input limit is read: a
    FIFO would hang the merge and ``/dev/zero`` would never end."""
    import jsonschema

    try:
        raw = read_file_bytes(path, MAX_INPUT_FILE_BYTES, limit_name="MAX_INPUT_FILE_BYTES")
    except MissingFile:
        raise UsageError(f"{path}: no such shard report") from None
    except CouldNotJudge as error:
        raise UsageError(f"{error} (a shard report is a JSON file)") from None
    try:
        data = json_within_depth(raw)
    except ValueError as error:
        raise UsageError(f"{path}: not a readable JSON report: {error}") from None
    schema = json_within_depth(read_file_bytes(SCHEMA_PATH))
    errors = sorted(
        jsonschema.Draft202012Validator(schema).iter_errors(data), key=lambda e: list(e.path)
    )
    if errors:
        first = errors[0]
        where = "/".join(str(key) for key in first.path) or "(top level)"
        raise UsageError(f"{path}: not a pytest-toll report: {where}: {first.message}")
    if "collected" not in data or "ledger_sha256" not in data:
        raise UsageError(
            f"{path}: the report says nothing of what it collected (pytest-toll "
            f"{data.get('tool_version')}): run the shards with this pytest-toll"
        )
    check_figures(str(path), data)
    return ShardReport(str(path), data)


def _check_set(shards: Sequence[ShardReport], expected: int | None) -> int:
    """Every shard of the matrix exactly once, all alike; returns the shard count."""
    if not shards:
        raise UsageError("no shard reports given")
    first = shards[0]
    for shard in shards[1:]:
        for key in _SHARED:
            if shard.data.get(key) != first.data.get(key):
                what = "ledger (its sha256)" if key == "ledger_sha256" else key
                raise UsageError(
                    f"{first.source} and {shard.source} judged with a different {what}: "
                    f"{first.data.get(key)!r} vs {shard.data.get(key)!r}; merge shards of one run"
                )
    for shard in shards:
        if shard.data.get("shard") is None and (shard.data.get("partial") or len(shards) > 1):
            raise UsageError(
                f"{shard.source} is not a shard: run each part with --toll-shard K/N "
                "(or pytest-split's --splits N --group K)"
            )
    counts = sorted({shard.count for shard in shards})
    if len(counts) > 1:
        raise UsageError(f"the reports disagree on the number of shards: {counts}")
    count = counts[0]
    if expected is not None and expected != count:
        raise UsageError(f"--shards {expected}, but the reports are shards of {count}")
    seen: dict[int, str] = {}
    for shard in shards:
        if not 1 <= shard.index <= count:
            raise UsageError(
                f"{shard.source} says it is shard {shard.index} of {count}: shards are "
                f"numbered 1 to {count}"
            )
        if shard.index in seen:
            raise UsageError(
                f"{seen[shard.index]} and {shard.source} are both shard {shard.index}/{count}"
            )
        seen[shard.index] = shard.source
    missing = [index for index in range(1, count + 1) if index not in seen]
    if missing:
        names = ", ".join(f"{index}/{count}" for index in missing)
        raise CouldNotJudge(
            f"could not judge: shard {names} missing ({len(shards)} of {count} reports); "
            "a missing shard is never a pass"
        )
    return count


def _union(shards: Sequence[ShardReport]) -> dict[str, EntryResult]:
    """Every measured entry once; one measured in several shards must agree exactly."""
    entries: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for shard in shards:
        for entry in shard.data.get("entries", []):
            if entry.get("outcome") == STALE:
                continue  # a shard judges no stale entries; the merge does, over the union
            nodeid = str(entry["nodeid"])
            if nodeid in entries:
                source, other = entries[nodeid]
                if other != entry:
                    fields = [
                        f"{key} {other.get(key)!r} vs {entry.get(key)!r}"
                        if not isinstance(entry.get(key), list | dict)
                        else key
                        for key in sorted({*other, *entry})
                        if other.get(key) != entry.get(key) and key != "delta"
                    ]
                    raise UsageError(
                        f"{nodeid} was measured differently by {source} and {shard.source} "
                        f"({', '.join(fields)}): the shards did not measure the same code"
                    )
                continue
            entries[nodeid] = (shard.source, entry)
    return {nodeid: EntryResult.from_dict(entry) for nodeid, (_, entry) in entries.items()}


def _check_ledger_items(shards: Sequence[ShardReport]) -> None:
    """No ledger item measured by two shards."""
    owner: dict[str, str] = {}
    for shard in shards:
        for nodeid in shard.data["collected"].get("ledger_items", []):
            if nodeid in owner:
                raise UsageError(
                    f"{nodeid} was run by {owner[nodeid]} and by {shard.source}: only one shard "
                    "measures the ledger's items (--toll-shard: shard 1)"
                )
            owner[nodeid] = shard.source


def _unmeasured_ledger_items(ledger: Ledger, collected: set[str], ledger_name: str) -> list[str]:
    """Items of the ledger (its measured kinds) that no shard collected."""
    missing = []
    for kind in KINDS.values():
        if not kind.measured_from_ledger:
            continue
        section = ledger.data.get(kind.name)
        if not isinstance(section, Mapping):
            continue
        names = [kind.name] if kind.whole_section else list(ledger.section(kind.name))
        for name in names:
            nodeid = "::".join((ledger_name, *kind.keys(name)))
            if nodeid not in collected:
                missing.append(nodeid)
    return missing


def _gone_tests(
    ledger: Ledger, results: Sequence[EntryResult], collected: set[str], policy: Policy
) -> list[EntryResult]:
    """``tests:`` entries whose test no shard collected: gone from the suite (stale), as a
    full run's ``toll.yaml::stale::`` items say. A test collected but not measured (skipped,
    errored) is not stale: its pin is kept, as in a full run."""
    covered = {result.name for result in results if result.kind == TESTS_KIND.name}
    section = ledger.section(TESTS_KIND.name)
    return [
        stale_result(
            TESTS_KIND.name,
            name,
            name,
            ledger.line_of(TESTS_KIND.keys(name)),
            TESTS_KIND.entry_of(section, name),
            policy,
        )
        for name in map(str, section)
        if name not in covered and name not in collected
    ]


def _judge_again(result: EntryResult, ledger: Ledger, policy: Policy) -> EntryResult:
    """The shard's measurement judged under the merge's policy, as one full run judges it."""
    if result.measured is None or result.outcome in (OUTCOME_ERROR, STALE):
        return result
    kind = KINDS[result.kind]
    if kind.python_tests:
        entry = ledger.section(TESTS_KIND.name).get(result.name) or {}
    else:
        entry = kind.entry_of(ledger.section(kind.name), result.name)
    measurement = EntryMeasurement(
        total=result.measured,
        method=result.method or "",
        parts={part.name: part.measured for part in result.parts if part.measured is not None},
        findings=tuple(result.findings),
        other_pins={str(other["key"]): other["measured"] for other in result.other_pins},
        detail=result.detail,
        files={
            part: {row.name: row.measured for row in rows if row.measured is not None}
            for part, rows in result.files.items()
        },
    )
    judged = judge(
        kind=result.kind,
        name=result.name,
        nodeid=result.nodeid,
        line=result.line,
        entry=entry,
        measurement=measurement,
        policy=policy,
        extra_budget=result.budget,
    )
    judged.capture = result.capture
    return judged


def merge_shards(
    shards: Sequence[ShardReport],
    ledger: Ledger,
    *,
    update: bool = False,
    allow_increase: bool = False,
    strict: bool = False,
    expected: int | None = None,
) -> Merged:
    """One session report from every shard of a run; with ``update``, one ratchet.

    The tolerance is the shards' (they must agree); ``strict`` holds when asked here or when
    the shards ran strict.
    """
    if allow_increase and not update:
        raise UsageError("--allow-increase only applies with --update")
    _check_set(shards, expected)
    first = shards[0].data
    policy = Policy(
        tolerance=int(first["tolerance"]),
        update=update,
        allow_increase=allow_increase,
        strict=strict or any(bool(shard.data.get("strict")) for shard in shards),
    )
    digest = ledger_sha256(ledger.path) if ledger.exists else None
    if digest is None and first.get("ledger_sha256") is not None:
        raise UsageError(f"{ledger.path}: no ledger there, but the shards judged one (--ledger)")
    if digest != first.get("ledger_sha256"):
        raise UsageError(
            f"{ledger.path}: not the ledger the shards judged (its sha256 differs from "
            f"{shards[0].source}'s); merge on the commit the shards ran"
        )
    ledger_name = str(first["ledger"])
    partial = any(bool(shard.data.get("partial")) for shard in shards)
    for shard in shards:
        check_entries(shard.source, shard.data, ledger, ledger_name)
    _check_ledger_items(shards)
    collected: set[str] = set()
    for shard in shards:
        data = shard.data["collected"]
        collected.update(data.get("tests", []))
        collected.update(data.get("ledger_items", []))
    if not partial:
        missing = _unmeasured_ledger_items(ledger, collected, ledger_name)
        if missing:
            raise CouldNotJudge(
                f"could not judge: no shard measured {', '.join(missing)} "
                "(with --toll-shard, shard 1 measures the ledger's items)"
            )
    results = [_judge_again(result, ledger, policy) for result in _union(shards).values()]
    if not partial:
        results.extend(_gone_tests(ledger, results, collected, policy))
    report = SessionReport(
        unmeasured=ledger_unmeasured_entries(ledger, results),
        ledger=ledger_name,
        window=int(first["window"]),
        tolerance=int(first["tolerance"]),
        update=policy.update,
        allow_increase=policy.allow_increase,
        strict=policy.strict,
        partial=partial,
        entries=results,
        tokenizer=str(first.get("tokenizer", "o200k_base")),
        collected=collected_of(collected, ledger_name),
        ledger_sha256=digest,
    )
    report.pricing = ledger_pricing(report, ledger)
    merged = Merged(report)
    if policy.update:
        merged.ledger_error = write_ratchet(report, ledger, policy)
    return merged
