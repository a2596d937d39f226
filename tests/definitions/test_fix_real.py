"""``toll fix`` on real servers' tool lists (tests/fixtures/tools/real, README there): every
safe edit keeps what each input schema accepts, judged by jsonschema on values drawn to fit
the original schema and on plain values of every kind; and what ``--write`` writes weighs
what the plan says."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema.validators import validator_for

from pytest_toll.definitions.fix import plan_fixes, write_fixed
from pytest_toll.definitions.tools import load_tools_file
from pytest_toll.definitions.weigh import weigh
from tests.definitions.test_fix_properties import PROBES, fitting, json_values

REAL = Path(__file__).parents[1] / "fixtures" / "tools" / "real"
LISTS = sorted(REAL.glob("*.json"))


def verdicts(schema: dict[str, Any], instances: list[Any]) -> list[bool]:
    cls = validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    return [validator.is_valid(instance) for instance in instances]


def _fixed_tools() -> list[tuple[str, Any, Any]]:
    """(id, tool before, tool after every safe edit) for every tool of every real list."""
    pairs = []
    for path in LISTS:
        tools, shape = load_tools_file(path)
        report = plan_fixes(tools, shape=shape, target=path.stem)
        pairs += [
            (f"{path.stem}:{before.name}", before, after)
            for before, after in zip(tools, report.fixed, strict=True)
        ]
    return pairs


PAIRS = _fixed_tools()


@pytest.mark.parametrize(("before", "after"), [p[1:] for p in PAIRS], ids=[p[0] for p in PAIRS])
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_safe_edits_keep_what_every_real_schema_accepts(
    before: Any, after: Any, data: st.DataObject
) -> None:
    schema = dict(before.parameters)
    instances = data.draw(st.lists(fitting(schema, schema), min_size=4, max_size=4))
    instances += data.draw(st.lists(json_values, max_size=2))
    names = list(schema.get("properties") or {})
    instances += [{name: probe} for name in names for probe in PROBES]
    assert verdicts(dict(after.parameters), instances) == verdicts(schema, instances)
    assert after.name == before.name
    assert list(after.parameters.get("properties") or {}) == names


def test_the_real_lists_give_the_safe_edits_work() -> None:
    edited = [p for p in PAIRS if p[1].parameters != p[2].parameters]
    assert len(edited) > len(PAIRS) // 2


@pytest.mark.parametrize("path", LISTS, ids=[path.stem for path in LISTS])
def test_what_write_writes_weighs_the_planned_after(path: Path, tmp_path: Path) -> None:
    tools, shape = load_tools_file(path)
    report = plan_fixes(tools, shape=shape, target=path.stem)
    written = tmp_path / path.name
    write_fixed(report, written)
    again, again_shape = load_tools_file(written)
    assert weigh(again, source_shape=again_shape, breakdown_top=0).claude == report.after
    assert report.after < report.before
