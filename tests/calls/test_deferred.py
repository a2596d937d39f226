"""Deferred tools: eager vs. core + meta-tools, with exact expected values."""

from __future__ import annotations

import pytest

from pytest_toll.calls.deferred import DEFAULT_META_TOOLS, deferred_tools
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.serialize import serialize_openai
from pytest_toll.definitions.tools import normalize_tools
from tests.calls.calls_data import count


def test_deferred_tools_saving() -> None:
    many = [
        {
            "name": f"tool_{i}",
            "description": f"Tool number {i} does a thing with files and returns text.",
            "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
        }
        for i in range(20)
    ]
    report = deferred_tools("gpt-6.2-sol", many, core=["tool_0", "tool_1"])
    normalized, _ = normalize_tools(many)
    meta, _ = normalize_tools(list(DEFAULT_META_TOOLS))
    names = ", ".join(f"tool_{i}" for i in range(2, 20))
    expected_deferred = count(
        serialize_openai([*normalized[:2], *meta])
        + "\n\nDeferred tools (find with a tool search): "
        + names
    )
    assert report.eager.tokens == count(serialize_openai(normalized))
    assert report.deferred.tokens == expected_deferred
    assert report.saved == report.eager.tokens - expected_deferred > 0
    assert report.saved_usd == pytest.approx(report.saved * 2 / 1e6)
    assert report.as_dict()["deferred_tools"] == [f"tool_{i}" for i in range(2, 20)]
    with pytest.raises(CouldNotJudge, match="core tools not in the catalogue: nope"):
        deferred_tools("gpt-6.2-sol", many, core=["nope"])
