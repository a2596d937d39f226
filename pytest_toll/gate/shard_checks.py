"""What a shard report must be before ``toll merge`` believes it.

A shard's JSON report is input from another machine (or anyone who can write the file): its
figures become pins in the ledger the merge writes. The schema says what fields there are;
these rules say what the values may be:

- every figure (a count of tokens, a pin, a budget, a line, a shard's index) is a whole
  number that is not negative and under :data:`MAX_FIGURE` — never a bool, a float
  (``8.0``, ``1e3``), ``-5`` or ``10**30``; a ratio is finite and under the same bound;
- an entry's other pins are only those its kind has (a test's ``run_pin``, the transcripts'
  ``waste_ratio_pin``): never a human field such as ``budget``, nor any other key of the
  entry (a server's ``command``), which the merge would write into the ledger;
- its parts only where its kind pins parts, named (non-empty), and for a kind whose parts
  are fixed levels (a skill's, a subagent's, a call's) only the levels this version
  measures; its files (each pinned under the entry's ``files``) only where its kind pins
  files, under a part whose files it pins (a skill's references, executed), each named by
  a path that stays inside the skill (relative, no ``..``);
- every entry is something the shard collected: a ledger entry of its kind, named by the
  node id the ledger gives it, or a test the shard collected (``tests`` entries only);
- its ``outcome`` and ``failed`` agree as the judge makes them (a regression fails; a pass
  fails only on an error-severity finding or, strict, as new; nothing unmeasured passes).

A break is a UsageError naming the file and the field.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from pytest_toll.calls.measuring import PARTS as CALL_PARTS
from pytest_toll.core.errors import UsageError
from pytest_toll.core.kinds import EXECUTED, KINDS, RUN_PIN, Kind
from pytest_toll.gate.ledger import Ledger
from pytest_toll.gate.measurers import SKILL_LEVELS
from pytest_toll.report.data import (
    IMPROVED,
    NEW,
    OUTCOME_ERROR,
    OVER_BUDGET,
    PASSED,
    REGRESSED,
    STALE,
)

#: No figure a shard reports is this large: 2**53, past which a JSON reader may round it.
MAX_FIGURE = 2**53
#: The other pins each kind has; every other key a shard would pin is refused.
OTHER_PINS: Mapping[str, tuple[str, ...]] = {
    "tests": (RUN_PIN,),
    "transcripts": ("waste_ratio_pin",),
}
#: The parts of the kinds whose parts are fixed levels; the other kinds with parts name them
#: by what was measured (tools, files, components).
FIXED_PARTS: Mapping[str, tuple[str, ...]] = {
    "skills": (*SKILL_LEVELS, EXECUTED),
    "agents": ("metadata", "body"),
    "commands": ("metadata", "body"),
    "calls": CALL_PARTS,
}
#: Outcomes that always fail the run.
_FAILING = (OUTCOME_ERROR, REGRESSED, OVER_BUDGET)
#: Outcomes that fail it only for a finding of error severity (or strict, as new).
_PASSING = (PASSED, IMPROVED, NEW)


def _whole(source: str, where: str, value: Any, *, minimum: int = 0, optional: bool = True) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value < MAX_FIGURE:
        shown = value if not isinstance(value, int) or value < MAX_FIGURE else "a number this large"
        raise UsageError(
            f"{source}: {where}: {shown!r} is not a whole number of at least {minimum} "
            f"(and under 2**53)"
        )


def _ratio(source: str, where: str, value: Any, *, optional: bool) -> None:
    if value is None and optional:
        return
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value < MAX_FIGURE
    ):
        raise UsageError(
            f"{source}: {where}: {value!r} is not a number of at least 0 (under 2**53)"
        )


def check_figures(source: str, data: Mapping[str, Any]) -> None:
    """Every figure of a (schema-valid) shard report is a non-negative whole number; the
    ratios of ``other_pins`` (a waste ratio) are finite non-negative numbers."""
    _whole(source, "window", data.get("window"), minimum=1, optional=False)
    _whole(source, "tolerance", data.get("tolerance"), optional=False)
    shard = data.get("shard")
    if isinstance(shard, Mapping):
        _whole(source, "shard.index", shard.get("index"), minimum=1, optional=False)
        _whole(source, "shard.count", shard.get("count"), minimum=1, optional=False)
    fixed = data.get("fixed_cost")
    if isinstance(fixed, Mapping):
        _whole(source, "fixed_cost.tokens", fixed.get("tokens"), optional=False)
    for name, count in (data.get("counts") or {}).items():
        _whole(source, f"counts.{name}", count, optional=False)
    for number, entry in enumerate(data.get("entries", [])):
        where = f"entries[{number}] ({entry.get('nodeid')})"
        _whole(source, f"{where}.line", entry.get("line"), minimum=1)
        for key in ("measured", "pin", "budget"):
            _whole(source, f"{where}.{key}", entry.get(key))
        delta = entry.get("delta")
        if delta is not None and (isinstance(delta, bool) or not isinstance(delta, int)):
            raise UsageError(f"{source}: {where}.delta: {delta!r} is not a whole number")
        for index, part in enumerate(entry.get("parts", [])):
            for key in ("measured", "pin"):
                _whole(source, f"{where}.parts[{index}].{key}", part.get(key))
        for name, rows in (entry.get("files") or {}).items():
            for index, row in enumerate(rows):
                for key in ("measured", "pin"):
                    _whole(source, f"{where}.files.{name}[{index}].{key}", row.get(key))
        ratchet = entry.get("ratchet")
        if isinstance(ratchet, Mapping):
            _whole(source, f"{where}.ratchet.from", ratchet.get("from"))
            _whole(source, f"{where}.ratchet.to", ratchet.get("to"), optional=False)
        for index, other in enumerate(entry.get("other_pins", [])):
            _ratio(
                source,
                f"{where}.other_pins[{index}].measured",
                other.get("measured"),
                optional=False,
            )
            _ratio(source, f"{where}.other_pins[{index}].pin", other.get("pin"), optional=True)
        capture = entry.get("capture")
        if isinstance(capture, Mapping):
            _check_capture(source, f"{where}.capture", capture)


def _check_capture(source: str, where: str, capture: Mapping[str, Any]) -> None:
    for key in ("count", "sum", "could_not_judge"):
        _whole(source, f"{where}.{key}", capture.get(key), optional=False)
    for key in ("new", "resent"):
        _whole(source, f"{where}.{key}", capture.get(key))
    cache = capture.get("cache")
    if isinstance(cache, Mapping):
        for key in ("read_tokens", "write_tokens"):
            _whole(source, f"{where}.cache.{key}", cache.get(key))
    _whole(source, f"{where}.largest", capture.get("largest"))
    _whole(source, f"{where}.largest_number", capture.get("largest_number"), minimum=1)
    for index, request in enumerate(capture.get("requests", [])):
        at = f"{where}.requests[{index}]"
        _whole(source, f"{at}.number", request.get("number"), minimum=1, optional=False)
        for key in ("tokens", "scaled"):
            _whole(source, f"{at}.{key}", request.get(key))
        for part, tokens in (request.get("parts") or {}).items():
            _whole(source, f"{at}.parts.{part}", tokens, optional=False)
        _ratio(source, f"{at}.cost_usd", request.get("cost_usd"), optional=True)


def check_entries(source: str, data: Mapping[str, Any], ledger: Ledger, ledger_name: str) -> None:
    """Every entry of a shard is one it collected, of the kind the ledger gives it, with an
    outcome and a ``failed`` that agree."""
    collected = data["collected"]
    tests = set(collected.get("tests", []))
    ledger_items = set(collected.get("ledger_items", []))
    strict = bool(data.get("strict"))
    for entry in data.get("entries", []):
        outcome = entry.get("outcome")
        if outcome == STALE:
            continue  # the merge derives stale entries itself, over the union
        nodeid, name = str(entry["nodeid"]), str(entry["name"])
        kind = KINDS[str(entry["kind"])]
        if kind.python_tests:
            if name != nodeid or nodeid not in tests:
                raise UsageError(
                    f"{source}: {nodeid}: a {kind.name} entry for a test the shard did not "
                    "collect; a shard reports only what it ran"
                )
        else:
            section = ledger.data.get(kind.name)
            names = kind.entry_names(section) if isinstance(section, Mapping) else []
            expected = "::".join((ledger_name, *kind.keys(name)))
            if name not in names or nodeid != expected or nodeid not in ledger_items:
                raise UsageError(
                    f"{source}: {nodeid}: no {kind.name} entry {name!r} in {ledger_name} that "
                    "the shard collected; a shard reports only the ledger's own entries, "
                    "under their kind"
                )
        _check_keys(source, nodeid, entry, kind)
        _check_files(source, nodeid, entry, kind)
        _check_verdict(source, nodeid, entry, strict)


def _check_keys(source: str, nodeid: str, entry: Mapping[str, Any], kind: Kind) -> None:
    """The entry's other pins and parts are ones its kind has: the merge writes each under
    the entry in the ledger."""
    allowed = OTHER_PINS.get(kind.name, ())
    for index, other in enumerate(entry.get("other_pins", [])):
        key = other.get("key")
        if key not in allowed:
            raise UsageError(
                f"{source}: {nodeid}: other_pins[{index}].key: {key!r} is no pin of a "
                f"{kind.name} entry ({', '.join(allowed) or 'it has none'})"
            )
    parts = entry.get("parts", [])
    fixed = FIXED_PARTS.get(kind.name)
    for index, part in enumerate(parts):
        name = part.get("name")
        # A kind whose parts are named by what was measured (a test's labels, a server's
        # tools) takes any name: they are the shard's measurement, as its total is.
        unknown = kind.part_pins_key is not None and fixed is not None and name not in fixed
        if not isinstance(name, str) or not name or unknown:
            expected = f"one of {', '.join(fixed)}" if fixed else "a name"
            raise UsageError(
                f"{source}: {nodeid}: parts[{index}].name: {name!r} is no part this version "
                f"measures of a {kind.name} entry ({expected})"
            )


def _check_files(source: str, nodeid: str, entry: Mapping[str, Any], kind: Kind) -> None:
    """A shard's files are pinned by the merge under the entry's ``files``: only a kind that
    pins files has them, under the parts whose files it pins, each a relative path."""
    for part, rows in (entry.get("files") or {}).items():
        if part not in kind.file_parts:
            expected = ", ".join(kind.file_parts) or "it pins none"
            raise UsageError(
                f"{source}: {nodeid}: files.{part}: a {kind.name} entry pins no files of "
                f"{part!r} ({expected})"
            )
        for index, row in enumerate(rows):
            name = row.get("name")
            path = PurePosixPath(name) if isinstance(name, str) else None
            if path is None or not name or path.is_absolute() or ".." in path.parts:
                raise UsageError(
                    f"{source}: {nodeid}: files.{part}[{index}].name: {name!r} is no file "
                    "path inside the skill (relative, without ..)"
                )


def _check_verdict(source: str, nodeid: str, entry: Mapping[str, Any], strict: bool) -> None:
    outcome, failed = entry.get("outcome"), entry.get("failed")
    unmeasured = entry.get("measured") is None
    if unmeasured != (outcome == OUTCOME_ERROR):
        raise UsageError(
            f"{source}: {nodeid}: outcome {outcome!r} with measured {entry.get('measured')!r}: "
            "only an entry that could not be measured has no figure"
        )
    if outcome in _FAILING:
        agrees = failed is True
    else:
        error_finding = any(f.get("severity") == "error" for f in entry.get("findings", []))
        agrees = failed is (error_finding or (outcome == NEW and strict))
    if not agrees or outcome not in (*_FAILING, *_PASSING):
        raise UsageError(f"{source}: {nodeid}: outcome {outcome!r} and failed {failed!r} disagree")
