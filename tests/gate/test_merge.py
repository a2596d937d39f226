"""``merge_shards`` on plain report dicts: the checks that make a set of shards judgeable."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.gate.ledger import Ledger, load_ledger
from pytest_toll.gate.merge import ShardReport, merge_shards
from pytest_toll.gate.shards import ledger_sha256, parse_shard, resolve_shard

LEDGER = """\
version: 1
tests:
  test_a.py::test_one: {pin: 10}
  test_gone.py::test_old: {pin: 5}
"""


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    path = tmp_path / "toll.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    return load_ledger(path)


def shard(ledger: Ledger, index: int, count: int = 2, **changes: Any) -> ShardReport:
    entry = {
        "kind": "tests", "name": "test_a.py::test_one", "nodeid": "test_a.py::test_one",
        "line": 3, "measured": 8, "method": "o200k", "pin": 10, "budget": None, "delta": -2,
        "outcome": "improved", "failed": False, "message": "improved by 2 tok — ratchet with "
        "--toll-update", "findings": [], "parts": [], "ratchet": None, "other_pins": [],
    }  # fmt: skip
    data: dict[str, Any] = {
        "tool_version": "0.1.0", "tokenizer": "o200k_base", "ledger": "toll.yaml",
        "window": 1_000_000, "tolerance": 0, "strict": False, "partial": False,
        "ledger_sha256": ledger_sha256(ledger.path),
        "shard": {"index": index, "count": count, "by": "--toll-shard",
                  "measures_ledger_items": index == 1},
        "collected": {"tests": [f"test_{index}.py::test_x", *(["test_a.py::test_one"] if index == 1 else [])], "ledger_items": []},
        "entries": [entry] if index == 1 else [],
    }  # fmt: skip
    data.update(changes)
    return ShardReport(f"shard-{index}.json", data)


def test_two_shards_merge_to_one_run_with_stale_entries(ledger: Ledger) -> None:
    merged = merge_shards([shard(ledger, 1), shard(ledger, 2)], ledger, update=True)
    report = merged.report
    assert [(e.nodeid, e.outcome) for e in report.entries] == [
        ("test_a.py::test_one", "improved"),
        ("test_gone.py::test_old", "stale"),
    ]
    # Judged again under the merge's policy: the update lowers the pin and says so.
    assert report.entries[0].ratchet == {"from": 10, "to": 8}
    assert report.entries[0].message == "improved by 2 tok — pin lowered"
    assert report.ledger_removed == ["tests.test_gone.py::test_old"]
    assert report.collected["tests"] == [
        "test_1.py::test_x",
        "test_2.py::test_x",
        "test_a.py::test_one",
    ]
    assert "test_gone.py" not in ledger.path.read_text()
    assert "test_a.py::test_one: {pin: 8}" in ledger.path.read_text()


def test_a_partial_shard_makes_the_merge_partial(ledger: Ledger) -> None:
    merged = merge_shards([shard(ledger, 1), shard(ledger, 2, partial=True)], ledger, update=True)
    assert merged.report.partial is True
    assert [e.outcome for e in merged.report.entries] == ["improved"]
    assert "test_gone.py::test_old" in ledger.path.read_text()


def test_a_ledger_item_run_by_two_shards_is_an_error(ledger: Ledger) -> None:
    items = {"tests": ["test_a.py::test_one"], "ledger_items": ["toll.yaml::servers::files"]}
    with pytest.raises(UsageError, match=re.escape("run by shard-1.json and by shard-2.json")):
        merge_shards([shard(ledger, 1, collected=items), shard(ledger, 2, collected=items)], ledger)


def test_shards_of_different_versions_or_counts_are_errors(ledger: Ledger) -> None:
    with pytest.raises(UsageError, match=re.escape("different tool_version: '0.1.0' vs '0.2.0'")):
        merge_shards([shard(ledger, 1), shard(ledger, 2, tool_version="0.2.0")], ledger)
    with pytest.raises(UsageError, match="disagree on the number of shards"):
        merge_shards([shard(ledger, 1), shard(ledger, 2, count=3)], ledger)
    with pytest.raises(CouldNotJudge, match="shard 2/2 missing"):
        merge_shards([shard(ledger, 1)], ledger)
    with pytest.raises(UsageError, match="--allow-increase only applies with --update"):
        merge_shards([shard(ledger, 1), shard(ledger, 2)], ledger, allow_increase=True)


def test_shard_names() -> None:
    assert parse_shard("2/4").index == 2
    for bad in ("0/4", "5/4", "2", "a/b", "1/0"):
        with pytest.raises(UsageError, match="--toll-shard"):
            parse_shard(bad)
    split = resolve_shard(None, 3, 2)
    assert split is not None and split.by == "pytest-split"
    assert split.measures_ledger_items is None
    with pytest.raises(UsageError, match="disagrees with pytest-split"):
        resolve_shard("1/3", 3, 2)
