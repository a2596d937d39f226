"""The ``toll.yaml`` ledger: load and validate it (the rewrite is :mod:`.write`).

Loading (:mod:`.read`) is bounded (size, nesting, aliases) and knows the line of
every key: a broken ledger is a :class:`UsageError` naming the file, the line and the key
path, never a silent default. Unknown keys are errors (a typo must not disable a gate), and
so are duplicate keys — except, when the caller asks, under ``transcripts.decisions``, where
a duplicate is the transcripts rule TL004 and is returned for that rule to report. A number
the schema calls an integer must be written as one (``10``, not ``10.0`` or ``1e1``), and
no number may be infinite or NaN: a pin the gate cannot read must never switch it off.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError, describe_type
from pytest_toll.gate.ledger.read import (
    DECISIONS,
    DuplicateKey,
    Keys,
    decode_ledger,
    dotted,
    load_yaml,
    read_ledger_bytes,
)
from pytest_toll.gate.ledger.write import (
    DELETE,
    LedgerRewrite,
    rewrite_ledger,
    update_ledger,
)

__all__ = [
    "DECISIONS",
    "DEFAULT_NAME",
    "DELETE",
    "SCHEMA_PATH",
    "DuplicateKey",
    "Ledger",
    "LedgerRewrite",
    "ledger_from_text",
    "load_ledger",
    "rewrite_ledger",
    "schema",
    "update_ledger",
    "validate",
]

SCHEMA_PATH = Path(__file__).parents[2] / "data" / "ledger.schema.json"
DEFAULT_NAME = "toll.yaml"
SERVER_SOURCES = ("command", "url", "tools_file")


@dataclass
class Ledger:
    """A loaded ledger: ``data`` is plain Python; ``line_of`` finds any key's line (1-based)."""

    path: Path
    data: dict[str, Any]
    exists: bool = True
    #: (decision key, line) of each repeated key under ``transcripts.decisions`` (TL004).
    duplicate_decisions: list[tuple[str, int]] = field(default_factory=list)
    _lines: dict[Keys, int] = field(default_factory=dict)

    def line_of(self, keys: Sequence[str | int]) -> int | None:
        """The line of the last key of ``keys`` (``("servers", "files")``) that exists."""
        return _line_of(self._lines, keys)

    def section(self, name: str) -> dict[str, Any]:
        value = self.data.get(name)
        return value if isinstance(value, dict) else {}


# --- loading ----------------------------------------------------------------------------


def _line_of(lines: dict[Keys, int], keys: Sequence[str | int]) -> int | None:
    line: int | None = None
    for end in range(1, len(keys) + 1):
        found = lines.get(tuple(keys[:end]))
        if found is None:
            return line
        line = found
    return line


@cache
def schema() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    return loaded


@cache
def _validator() -> Any:
    """The schema's validator, where ``integer`` means an int: JSON Schema's own reading
    takes ``10.0``, which the gate would then not read as a pin (and so not gate)."""
    from jsonschema import Draft202012Validator, validators

    def is_integer(checker: Any, instance: Any) -> bool:
        return isinstance(instance, int) and not isinstance(instance, bool)

    types = Draft202012Validator.TYPE_CHECKER.redefine("integer", is_integer)
    strict = validators.extend(Draft202012Validator, type_checker=types)  # type: ignore[no-untyped-call]
    return strict(schema())


def _non_finite(data: Any, lines: dict[Keys, int]) -> Iterator[tuple[int, str]]:
    """Every infinite or NaN number (``.inf``, ``.nan``): no limit or pin is ever one."""
    stack: list[tuple[Keys, Any]] = [((), data)]
    while stack:
        keys, value = stack.pop()
        if isinstance(value, dict):
            stack.extend(((*keys, key), item) for key, item in value.items())
        elif isinstance(value, list):
            stack.extend(((*keys, index), item) for index, item in enumerate(value))
        elif isinstance(value, float) and not math.isfinite(value):
            line = _line_of(lines, keys) or 1
            yield line, f"{dotted(keys)}: must be a finite number, not {value!r}"


def _plain_test_entry(entry: Any) -> bool:
    """A ``tests:`` entry the schema's ``test`` definition accepts, checked without it."""
    return isinstance(entry, dict) and all(
        key in ("budget", "pin") and type(value) is int and value >= 0
        for key, value in entry.items()
    )


def _needs_schema(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` without the ``tests:`` entries that are plainly valid: jsonschema spends a
    quarter of a millisecond on each, and a big repository pins tens of thousands."""
    tests = data.get("tests")
    if not isinstance(tests, dict):
        return data
    odd = {name: entry for name, entry in tests.items() if not _plain_test_entry(entry)}
    return {**data, "tests": odd}


def validate(lines: dict[Keys, int], data: Any, path: Path) -> None:
    """Check ``data`` against the ledger schema; the first error (by line) is a UsageError."""
    if data is None:
        return
    if not isinstance(data, dict):
        raise UsageError(
            f"{path}:1: the ledger must be a mapping of sections, not {describe_type(data, 'yaml')}"
        )
    errors = list(_validator().iter_errors(_needs_schema(data)))
    problems: list[tuple[int, str]] = []
    for error in errors:
        keys: Keys = tuple(error.absolute_path)
        if error.validator == "additionalProperties" and isinstance(error.instance, dict):
            allowed = sorted(error.schema.get("properties", {}))
            for key in sorted(set(error.instance) - set(allowed)):
                line = _line_of(lines, (*keys, key)) or 1
                expected = f" (expected one of: {', '.join(allowed)})" if allowed else ""
                problems.append((line, f"{dotted((*keys, key))}: unknown key{expected}"))
            continue
        if "propertyNames" in error.schema_path and error.validator == "enum":
            # A misspelt limit or rule id would otherwise silently leave a gate at its default.
            key = error.instance
            line = _line_of(lines, (*keys, key)) or 1
            expected = ", ".join(str(option) for option in error.validator_value)
            problems.append(
                (line, f"{dotted((*keys, key))}: unknown name (expected one of: {expected})")
            )
            continue
        line = _line_of(lines, keys) or 1
        problems.append((line, f"{dotted(keys)}: {_explain(error)}"))
    problems.extend(_check_sources(lines, data))
    problems.extend(_non_finite(data, lines))
    if problems:
        line, message = min(problems)
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise UsageError(f"{path}:{line}: {message}{more}")


def _explain(error: Any) -> str:
    """A short message: the schema's own wording for a value, without dumping big instances."""
    validator = error.validator
    if validator == "type":
        expected = error.validator_value
        expected = " or ".join(expected) if isinstance(expected, list) else expected
        instance = error.instance
        text = f"must be {expected}, not {describe_type(instance, 'yaml')} {instance!r}"
        if isinstance(instance, float) and instance.is_integer() and "integer" in expected:
            text += f" (write {int(instance)}: a whole number has no decimal point)"
        return text
    if validator == "minimum":
        return f"must be at least {error.validator_value}, not {error.instance!r}"
    if validator == "exclusiveMinimum":
        return f"must be greater than {error.validator_value}, not {error.instance!r}"
    if validator == "enum":
        options = ", ".join(str(option) for option in error.validator_value)
        return f"must be one of {options}, not {error.instance!r}"
    if validator == "const":
        return f"must be {error.validator_value!r}, not {error.instance!r}"
    if validator == "pattern":
        return f"{error.instance!r} does not match {error.validator_value}"
    if validator == "minItems":
        return "must not be empty"
    if validator == "required":
        return str(error.message)
    if validator == "oneOf" and error.context and "rules" in error.absolute_path:
        # A rule is a severity or an override with a reason: explain the form that was meant.
        branch = 1 if isinstance(error.instance, dict) else 0
        meant = [sub for sub in error.context if list(sub.relative_schema_path)[:1] == [branch]]
        sub = (meant or list(error.context))[0]
        inner = ".".join(str(key) for key in sub.relative_path)
        return (f"{inner}: " if inner else "") + _explain(sub)
    return str(error.message)


def _check_sources(lines: dict[Keys, int], data: dict[str, Any]) -> list[tuple[int, str]]:
    """A server entry names exactly one source: command, url or tools_file."""
    problems = []
    servers = data.get("servers")
    if not isinstance(servers, dict):
        return []
    for name, entry in servers.items():
        if not isinstance(entry, dict):
            continue
        given = [key for key in SERVER_SOURCES if key in entry]
        if len(given) != 1:
            line = _line_of(lines, ["servers", name]) or 1
            found = f" (found {', '.join(given)})" if given else ""
            problems.append(
                (line, f"servers.{name}: give exactly one of command, url, tools_file{found}")
            )
    return problems


def load_ledger(
    path: str | Path, *, missing_ok: bool = False, allow_duplicate_decisions: bool = False
) -> Ledger:
    """Load and validate a ledger. Any problem is a UsageError naming file, line and key.

    A missing file is an empty ledger when ``missing_ok`` (``--toll-update`` seeds it).
    With ``allow_duplicate_decisions``, repeated keys under ``transcripts.decisions`` are
    returned in ``duplicate_decisions`` (the first value wins) instead of raising.
    """
    file = Path(path)
    data = read_ledger_bytes(file)
    if data is None:
        if missing_ok:
            return Ledger(file, {}, exists=False)
        raise UsageError(f"{file}: no such ledger file")
    text = decode_ledger(data, file)
    return ledger_from_text(text, file, allow_duplicate_decisions=allow_duplicate_decisions)


def ledger_from_text(text: str, path: Path, *, allow_duplicate_decisions: bool = False) -> Ledger:
    """Parse and validate a ledger's text (an old version from git); ``path`` names it."""
    loaded = load_yaml(text, path, allow_duplicate_decisions=allow_duplicate_decisions)
    validate(loaded.lines, loaded.value, path)
    return Ledger(path, loaded.value or {}, True, loaded.duplicate_decisions, loaded.lines)
