"""The kinds registry agrees with the schemas: a kind is one registry entry plus the schema."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, get_args

from pytest_toll.core.kinds import KINDS, TESTS_KIND, KindName
from pytest_toll.gate.kinds import FINDERS, MEASURERS, measurer_of
from pytest_toll.gate.ledger import SCHEMA_PATH as LEDGER_SCHEMA
from pytest_toll.report.data import SCHEMA_PATH as REPORT_SCHEMA


def _ledger_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(LEDGER_SCHEMA.read_text(encoding="utf-8"))
    return schema


def _entry_schema(schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The schema of one entry of ``kind`` (the section itself for a whole-section kind)."""
    section = schema["properties"][kind]
    ref = section.get("$ref") or section["additionalProperties"]["$ref"]
    entry: dict[str, Any] = schema["$defs"][ref.rsplit("/", 1)[-1]]
    return entry


def test_the_registry_names_every_entry_section_of_the_ledger_schema() -> None:
    schema = json.loads(LEDGER_SCHEMA.read_text(encoding="utf-8"))
    settings = {"version", "tokenizer", "model", "models", "window", "tolerance", "limits"}
    sections = set(schema["properties"]) - settings - {"rules"}
    assert sections == set(KINDS)
    assert list(KINDS) == list(get_args(KindName))


def test_the_report_schema_lists_the_kinds_in_report_order() -> None:
    schema = json.loads(REPORT_SCHEMA.read_text(encoding="utf-8"))
    text = json.dumps(schema)
    start = text.index('"kind": {"enum": ')
    enum = json.loads(text[start + len('"kind": {"enum": ') :].split("]", 1)[0] + "]")
    assert enum == list(KINDS)


def test_every_pin_key_is_a_field_of_its_entry_in_the_ledger_schema() -> None:
    schema = json.loads(LEDGER_SCHEMA.read_text(encoding="utf-8"))
    for kind in KINDS.values():
        fields = set(_entry_schema(schema, kind.name)["properties"])
        for key in (kind.total_pin_key, kind.part_pins_key, kind.file_pins_key):
            if key is not None:
                assert key in fields, (kind.name, key)
        if kind.file_pins_key is not None:
            by_part = _entry_schema(schema, kind.name)["properties"][kind.file_pins_key]
            assert set(by_part["properties"]) == set(kind.file_parts), kind.name
        if kind.whole_section:
            assert kind.keys("anything") == (kind.name,)
        else:
            assert kind.keys("files") == (kind.name, "files")


def test_every_kind_measured_from_the_ledger_has_one_measurer() -> None:
    from_ledger = {kind.name for kind in KINDS.values() if kind.measured_from_ledger}
    assert set(MEASURERS) == from_ledger
    assert all(measurer_of(KINDS[name]) is MEASURERS[name] for name in from_ledger)
    assert not TESTS_KIND.measured_from_ledger


def test_toll_init_finds_each_kind_through_one_row_and_measures_it_with_its_measurer() -> None:
    """A kind ``toll init`` writes is one row of FINDERS: a finder over the one walk in
    gate/discovery.py, measured by the kind's own measurer. Calls are written by hand and
    tests measure themselves: init finds neither."""
    assert set(KINDS) - set(FINDERS) == {"calls", "tests"}
    for name, finder in FINDERS.items():
        assert KINDS[name].measured_from_ledger and name in MEASURERS
        assert finder.find.__module__ == "pytest_toll.gate.discovery", name
        assert finder.ledger_rules == (
            "rules" not in _entry_schema(_ledger_schema(), name)["properties"]
        )
    assert [name for name in FINDERS if KINDS[name].whole_section] == ["transcripts"]


def test_gate_kinds_holds_the_only_kind_to_measurer_map() -> None:
    """No other module names a measurer: everything measures a kind through measurer_of."""
    package = Path(LEDGER_SCHEMA).parents[1]
    named = sorted(
        path.relative_to(package).as_posix()
        for path in package.rglob("*.py")
        if re.search(r"\bmeasure_\w+_entry\b", path.read_text(encoding="utf-8"))
    )
    assert named == ["gate/kinds.py", "gate/measurers.py"]
