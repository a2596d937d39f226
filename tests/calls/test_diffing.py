"""diff() and diff_call_reports(): signed per-part deltas between two call reports."""

from __future__ import annotations

import json

import pytest

from pytest_toll.calls.diffing import diff, diff_call_reports
from pytest_toll.calls.measuring import measure
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.models import load_models
from tests.calls.calls_data import MESSAGES, SYSTEM, TOOLS


def test_diff_is_signed_and_prices_only_when_both_sides_are_priced() -> None:
    before = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS)
    after = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS[:1])
    result = diff(before, after)
    assert (
        result.parts["tools"].delta
        == after.parts["tools"].tokens - before.parts["tools"].tokens
        < 0
    )
    assert result.parts["system"].delta == 0
    assert result.total.delta == after.total.tokens - before.total.tokens
    assert result.total.cost_usd == pytest.approx(after.total.cost_usd - before.total.cost_usd)  # type: ignore[operator]
    assert result.notes == ()
    # From JSON reports too (what `toll diff` reads).
    again = diff(json.loads(json.dumps(before.as_dict())), json.loads(json.dumps(after.as_dict())))
    assert again.as_dict() == result.as_dict()
    bare = load_models({"bare": {"provider": "anthropic", "scale": "claude-4.5"}})
    unpriced = measure("bare", SYSTEM, MESSAGES, TOOLS[:1], catalogue=bare)
    mixed = diff(before, unpriced)
    assert mixed.total.cost_usd is None
    assert "cost_usd" not in mixed.as_dict()["total"]
    assert mixed.notes == ("different models: gpt-6.2-sol before, bare after",)
    compacted = diff(
        before, measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS, tool_schemas="compact")
    )
    assert compacted.notes == ("tool schemas measured full before, compact after",)
    with pytest.raises(CouldNotJudge, match="before: not a call report"):
        diff({"kind": "tools"}, after)


def test_diff_call_reports_render_and_increase_percent() -> None:
    before = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS[:1]).as_dict()
    after = measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS).as_dict()
    result = diff_call_reports(before, after, before_name="old.json", after_name="new.json")
    grown = after["total"]["tokens"] - before["total"]["tokens"]
    assert result.increase_percent == pytest.approx(100 * grown / before["total"]["tokens"])
    lines = result.render().splitlines()
    assert lines[0] == "call gpt-6.2-sol → gpt-6.2-sol"
    assert lines[1].split() == ["part", "old.json", "new.json", "delta", "USD"]
    assert lines[2].split()[:4] == [
        "messages",
        f"{before['parts']['messages']['tokens']:,}",
        f"{after['parts']['messages']['tokens']:,}",
        "+0",
    ]
    assert lines[-1].split()[3] == f"{grown:+,}"
