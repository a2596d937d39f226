"""A ledger calls: entry measured from its files; bad keys and files named."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_toll.calls.entry import measure_entry
from pytest_toll.calls.measuring import measure
from pytest_toll.core.errors import CouldNotJudge, UsageError
from tests.calls.calls_data import MESSAGES, SYSTEM, TOOLS


def test_a_ledger_call_entry_is_measured_from_files(tmp_path: Any) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "system.md").write_text(SYSTEM, encoding="utf-8")
    (tmp_path / "chat.json").write_text(json.dumps(MESSAGES), encoding="utf-8")
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    entry = {
        "system": "prompts/system.md",
        "messages": "chat.json",
        "tools": "tools.json",
        "budget": 9000,
        "pin": 1,
    }
    result = measure_entry(entry, root=tmp_path, where="calls.support", default_model="gpt-6.2-sol")
    assert result.as_dict() == measure("gpt-6.2-sol", SYSTEM, MESSAGES, TOOLS).as_dict()
    compact = measure_entry(
        {**entry, "model": "claude-sonnet-5", "tool_schemas": "compact"},
        root=tmp_path,
        where="calls.support",
    )
    assert compact.model == "claude-sonnet-5" and compact.tool_schemas == "compact"


@pytest.mark.parametrize(
    ("entry", "error", "message"),
    [
        ({}, UsageError, "calls.x.model: name the model"),
        ({"model": "gpt-0"}, UsageError, "calls.x.model: unknown model 'gpt-0'"),
        (
            {"model": "gpt-6.2-sol", "tools": 5},
            UsageError,
            "calls.x.tools: must be a path (a string), not 5",
        ),
        (
            {"model": "gpt-6.2-sol", "tool_schemas": "small"},
            UsageError,
            "calls.x.tool_schemas: must be full or compact",
        ),
        (
            {"model": "gpt-6.2-sol", "messages": "nope.json"},
            CouldNotJudge,
            "nope.json: no such file",
        ),
    ],
)
def test_bad_ledger_call_entries_name_the_key(
    tmp_path: Any, entry: dict[str, Any], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as caught:
        measure_entry(entry, root=tmp_path, where="calls.x")
    assert str(caught.value).endswith(message) or str(caught.value).startswith(message)


def test_a_bad_messages_file_is_named(tmp_path: Any) -> None:
    (tmp_path / "chat.json").write_text('[{"role": "robot"}]', encoding="utf-8")
    with pytest.raises(CouldNotJudge) as caught:
        measure_entry(
            {"model": "gpt-6.2-sol", "messages": "chat.json"}, root=tmp_path, where="calls.x"
        )
    assert str(caught.value).startswith(f"{tmp_path / 'chat.json'}: messages[0].role: must be user")
