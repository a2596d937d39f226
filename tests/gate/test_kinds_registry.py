"""The kinds registry agrees with the schemas: a kind is one registry entry plus the schema."""

from __future__ import annotations

import json
from typing import Any, get_args

from pytest_toll.core.kinds import KINDS, TESTS_KIND, KindName
from pytest_toll.gate.kinds import MEASURERS, measurer_of
from pytest_toll.gate.ledger import SCHEMA_PATH as LEDGER_SCHEMA
from pytest_toll.report.data import SCHEMA_PATH as REPORT_SCHEMA


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
        for key in (kind.total_pin_key, kind.part_pins_key):
            if key is not None:
                assert key in fields, (kind.name, key)
        if kind.whole_section:
            assert kind.keys("anything") == (kind.name,)
        else:
            assert kind.keys("files") == (kind.name, "files")


def test_every_kind_measured_from_the_ledger_has_one_measurer() -> None:
    from_ledger = {kind.name for kind in KINDS.values() if kind.measured_from_ledger}
    assert set(MEASURERS) == from_ledger
    assert all(measurer_of(KINDS[name]) is MEASURERS[name] for name in from_ledger)
    assert not TESTS_KIND.measured_from_ledger
