"""A setting is one row of ``core.settings.SETTINGS``: the plugin's option and ini twin, the
resolved ``Settings`` field and its default, the ledger key, and ``toll merge``'s flags and
shard checks all come from the table. Checked here against every door that reads it."""

from __future__ import annotations

import argparse
import dataclasses
import json

import pytest

from pytest_toll.cli import merge as merge_verb
from pytest_toll.core.settings import SETTINGS
from pytest_toll.gate.merge import _SHARED
from pytest_toll.gate.settings import Settings
from pytest_toll.report.data import SCHEMA_PATH
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

LEDGER_SCHEMA = SCHEMA_PATH.parent / "ledger.schema.json"


def test_every_row_is_a_plugin_option_and_every_ini_row_an_ini_twin(
    pytester: pytest.Pytester,
) -> None:
    help_text = " ".join(pytester.runpytest(*QUIET, "--help").stdout.str().split())
    int_ini = "int" if pytest.version_tuple >= (8, 4) else "string"
    for setting in SETTINGS.values():
        shown = setting.flag if setting.metavar is None else f"{setting.flag}={setting.metavar}"
        assert f"{shown} {setting.help}" in help_text, setting.name
        if setting.ini_help is not None:
            ini_type = int_ini if setting.ini_type == "int" else setting.ini_type
            assert f"{setting.ini_name} ({ini_type}): {setting.ini_help}" in help_text


def test_a_settings_field_per_resolved_row_with_the_rows_default() -> None:
    fields = {field.name: field.default for field in dataclasses.fields(Settings)}
    # Resolved rows: parsed from a value, or flags (given or not). The ledger's path and
    # the shard are resolved on their own (Ledger.path, TollState.shard).
    resolved = {
        name: setting.default
        for name, setting in SETTINGS.items()
        if setting.parse is not None or setting.metavar is None
    }
    assert resolved == {name: default for name, default in fields.items() if name != "outputs"}


def test_a_ledger_key_is_in_the_ledger_schema_and_parsed_as_the_schema_bounds_it() -> None:
    properties = json.loads(LEDGER_SCHEMA.read_text(encoding="utf-8"))["properties"]
    carried = [setting for setting in SETTINGS.values() if setting.ledger_key is not None]
    assert carried  # the check sees rows
    for setting in carried:
        assert setting.parse is not None and setting.ledger_key in properties, setting.name
        bound = properties[setting.ledger_key]
        assert bound["type"] == "integer", setting.name
        assert setting.parse(bound["minimum"]) == bound["minimum"]
        with pytest.raises(ValueError):
            setting.parse(bound["minimum"] - 1)


def test_toll_merge_offers_exactly_the_rows_with_a_merge_flag() -> None:
    merge = argparse.ArgumentParser()
    merge_verb.configure(merge)
    flags = {name: action for action in merge._actions for name in action.option_strings}
    # The merge's own --ledger is not the setting: the ledger the shards judged, whose
    # path their reports name.
    own = {"--ledger"}
    for setting in SETTINGS.values():
        offered = setting.merge_flag in flags and setting.merge_flag not in own
        assert offered == (setting.merge_help is not None), setting.name
        if setting.merge_help is not None:
            action = flags[setting.merge_flag]
            assert (action.help, action.nargs, action.const) == (setting.merge_help, 0, True)


def test_shards_agree_on_the_rows_that_say_so_and_the_report_records_them() -> None:
    report_schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    agreeing = [name for name, setting in SETTINGS.items() if setting.shards_agree]
    assert agreeing and set(agreeing) <= set(_SHARED)
    assert set(agreeing) <= set(report_schema["required"])
