"""A shard's every field is checked like the ledger (issue #34, door 7): figures are whole
numbers under a bound, other pins only the ones its kind has (never a human field such as
``budget``, never the source of a server), parts only where its kind has parts and, for a
kind whose parts are fixed levels, only those levels. Each forged report leaves the ledger
byte for byte as it was, with a message naming the file and the field."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.faults.test_merge_faults import SERVER, TEST, Report, merge, shard_report

LEDGER = """\
version: 1
servers:
  files:
    tools_file: tools.json
    pin: 120
skills:
  pdf: {path: skills/pdf, pin: {metadata: 5, body: 50, references: 0}}
tests:
  test_a.py::test_one: {pin: 10}
"""
SKILL = "toll.yaml::skills::pdf"


def _with_skill(report: Report) -> None:
    server = next(e for e in report["entries"] if e["nodeid"] == SERVER)
    skill = copy.deepcopy(server)
    skill.update(kind="skills", name="pdf", nodeid=SKILL, measured=55, pin=None, delta=None,
                 outcome="passed", failed=False, message="")  # fmt: skip
    skill["parts"] = [
        {"name": level, "measured": value, "pin": value, "delta": 0}
        for level, value in (("metadata", 5), ("body", 50), ("references", 0))
    ]
    report["entries"].append(skill)
    report["collected"]["ledger_items"].append(SKILL)


def _other(target: str, key: str, measured: Any = 1) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        entry = next(e for e in report["entries"] if e["nodeid"] == target)
        entry["other_pins"] = [{"key": key, "measured": measured, "pin": None}]

    return change


def _part(target: str, name: str, measured: Any = 3) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        entry = next(e for e in report["entries"] if e["nodeid"] == target)
        entry["parts"] = [
            *entry.get("parts", []),
            {"name": name, "measured": measured, "pin": None, "delta": None},
        ]

    return change


def _set(target: str, **fields: Any) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        next(e for e in report["entries"] if e["nodeid"] == target).update(fields)

    return change


CAPTURE = {"count": 1, "largest": 8, "largest_number": 1, "sum": 10**30, "new": 8,
           "resent": 10**30, "could_not_judge": 0, "requests": []}  # fmt: skip
#: (what is forged, the change to shard 1's report, words the refusal must hold)
FORGERIES: list[tuple[str, Callable[[Report], None], str]] = [
    ("a measured figure past any token count", _set(TEST, measured=10**30), "measured"),
    ("a pin past any token count", _set(TEST, pin=2**63), "pin"),
    ("a part past any token count", _part(SERVER, "read_file", 10**20), "parts[0].measured"),
    ("a window past any model's", lambda r: r.update(window=10**40), "window"),
    ("a capture sum past any", _set(TEST, capture=CAPTURE), "capture.sum"),
    ("a ratio past any", _other(TEST, "waste_ratio_pin", 1e300), "1e+300"),
    # other pins a kind does not have: a human field, a server's source, the pin itself
    ("a test's budget as an other pin", _other(TEST, "budget", 1), "budget"),
    ("a test's run_budget as an other pin", _other(TEST, "run_budget", 1), "run_budget"),
    ("a test's pin as an other pin", _other(TEST, "pin", 1), "'pin'"),
    ("a server's command as an other pin", _other(SERVER, "command", 1), "command"),
    ("a server's run_pin", _other(SERVER, "run_pin", 1), "run_pin"),
    ("a test's waste ratio", _other(TEST, "waste_ratio_pin", 0.5), "waste_ratio_pin"),
    # parts where the kind has none, or levels it does not measure
    ("a skill level this version does not measure", _part(SKILL, "budget"), "'budget'"),
    ("an empty part name", _part(SERVER, ""), "parts"),
]


@pytest.mark.parametrize(("forged", "change", "words"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_forged_field_is_refused_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    forged: str,
    change: Callable[[Report], None],
    words: str,
) -> None:
    ledger = tmp_path / "toll.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    first, second = shard_report(ledger, 1), shard_report(ledger, 2)
    _with_skill(first)
    change(first)
    code, said = merge(capsys, tmp_path, [first, second])
    assert code != 0, said
    assert ledger.read_text(encoding="utf-8") == LEDGER
    assert "shard-1.json" in said and words in said, said


def test_the_honest_shards_with_a_skill_merge(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control: the same shards, unforged, merge."""
    ledger = tmp_path / "toll.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    first, second = shard_report(ledger, 1), shard_report(ledger, 2)
    _with_skill(first)
    code, said = merge(capsys, tmp_path, [first, second])
    assert code == 0, said


def test_a_tests_recorded_labels_merge_and_no_part_is_written(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A test's parts are the labels it recorded under (any name, `budget` too): shown in the
    report, never written, so an update merges them and the test's entry gains no key."""
    ledger = tmp_path / "toll.yaml"
    ledger.write_text(LEDGER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    first, second = shard_report(ledger, 1), shard_report(ledger, 2)
    _with_skill(first)
    _part(TEST, "budget")(first)
    code, said = merge(capsys, tmp_path, [first, second])
    assert code == 0, said
    labelled = ledger.read_text(encoding="utf-8")
    ledger.write_text(LEDGER, encoding="utf-8")
    first, second = shard_report(ledger, 1), shard_report(ledger, 2)
    _with_skill(first)
    code, said = merge(capsys, tmp_path, [first, second])
    assert code == 0, said
    assert labelled == ledger.read_text(encoding="utf-8")
    assert "test_a.py::test_one: {pin: 8}" in labelled
