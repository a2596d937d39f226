"""Issue #36 item 6 (f, g): a skill pins each file behind its references and scripts, and a
test each part it records, so a regression names the file or part that grew. Pure judgement
and plan here; the plugin's side is in ``tests/gate/test_every_pin.py``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import UsageError
from pytest_toll.gate.ledger import DELETE, ledger_from_text
from pytest_toll.gate.ledger.write import rewrite_ledger
from pytest_toll.gate.measurement import EntryMeasurement
from pytest_toll.gate.ratchet import Policy, judge, part_pins_written, plan_entry, plan_update
from pytest_toll.gate.shard_checks import check_entries, check_figures
from pytest_toll.report.data import EntryResult

DEFAULT = Policy()
LEVELS = {"metadata": 40, "body": 146, "references": 111}
FILES = {"references": {"references/style.md": 71, "references/terms.md": 40}}


def skill(
    entry: dict[str, Any],
    files: dict[str, dict[str, int]],
    policy: Policy = DEFAULT,
    **levels: int,
) -> EntryResult:
    parts = {**LEVELS, **levels}
    return judge(
        kind="skills",
        name="guide",
        nodeid="toll.yaml::skills::guide",
        line=2,
        entry={"path": "skills/guide", **entry},
        measurement=EntryMeasurement(sum(parts.values()), "o200k", parts, files=files),
        policy=policy,
    )


def test_a_grown_reference_is_named_with_its_pin_and_measure() -> None:
    grown = {"references": {"references/style.md": 123, "references/terms.md": 40}}
    result = skill({"pin": LEVELS, "files": FILES}, grown, references=163)
    assert (result.outcome, result.failed) == ("regressed", True)
    assert result.message == (
        "regressed: references +52 over its pin 111: references/style.md 71 → 123"
    )


def test_a_file_that_grew_while_another_shrank_fails_though_the_part_held() -> None:
    moved = {"references": {"references/style.md": 91, "references/terms.md": 20}}
    result = skill({"pin": LEVELS, "files": FILES}, moved)
    assert (result.outcome, result.failed) == ("regressed", True)
    assert result.message == "regressed: references: references/style.md 71 → 91"
    # Within the tolerance, the file holds.
    assert skill({"pin": LEVELS, "files": FILES}, moved, Policy(tolerance=20)).outcome == "improved"


def test_a_new_file_beside_pinned_ones_is_growth_from_zero() -> None:
    added = {"references": {**FILES["references"], "references/new.md": 9}}
    result = skill({"pin": LEVELS, "files": FILES}, added, references=120)
    assert (result.outcome, result.failed) == ("regressed", True)
    assert result.message == "regressed: references +9 over its pin 111: references/new.md new 9"
    # An update without --toll-allow-increase does not pin the growth; with it, it does.
    update = Policy(update=True)
    assert (
        plan_entry(skill({"pin": LEVELS, "files": FILES}, added, update, references=120), update)
        == {}
    )
    allow = Policy(update=True, allow_increase=True)
    assert plan_entry(
        skill({"pin": LEVELS, "files": FILES}, added, allow, references=120), allow
    ) == {
        ("skills", "guide", "pin", "references"): 120,
        ("skills", "guide", "files", "references", "references/new.md"): 9,
    }


def test_a_removed_file_is_an_improvement_and_an_update_removes_its_pin() -> None:
    fewer = {"references": {"references/style.md": 71}}
    update = Policy(update=True)
    result = skill({"pin": LEVELS, "files": FILES}, fewer, update, references=71)
    assert (result.outcome, result.failed) == ("improved", False)
    assert plan_entry(result, update) == {
        ("skills", "guide", "pin", "references"): 71,
        ("skills", "guide", "files", "references", "references/terms.md"): DELETE,
    }
    # Every file of a part gone: the part's map goes, not an empty {} left behind.
    none = skill({"pin": LEVELS, "files": FILES}, {"references": {}}, update, references=0)
    assert plan_entry(none, update)[("skills", "guide", "files", "references")] is DELETE


def test_file_pins_only_go_down_unless_an_increase_is_allowed() -> None:
    grown = {"references": {"references/style.md": 80, "references/terms.md": 31}}
    update = Policy(update=True)
    result = skill({"pin": LEVELS, "files": FILES}, grown, update)
    assert result.outcome == "regressed"
    assert "not raised: --toll-update only lowers pins" in result.message
    assert plan_entry(result, update) == {
        ("skills", "guide", "files", "references", "references/terms.md"): 31,
    }
    allow = Policy(update=True, allow_increase=True)
    raised = plan_entry(skill({"pin": LEVELS, "files": FILES}, grown, allow), allow)
    assert raised[("skills", "guide", "files", "references", "references/style.md")] == 80


def test_an_old_ledger_without_files_is_judged_as_before_and_an_update_pins_them() -> None:
    grown = {"references": {"references/style.md": 123, "references/terms.md": 40}}
    result = skill({"pin": LEVELS}, grown, references=163)
    assert (result.outcome, result.failed) == ("regressed", True)
    # Today's message: the files behind the part, largest first (no file pins to compare).
    assert result.message == (
        "regressed: references +52 over its pin 111 (now in references/style.md 123, "
        "references/terms.md 40)"
    )
    same = skill({"pin": LEVELS}, FILES)
    assert (same.outcome, same.failed, same.message) == ("passed", False, "")
    update = Policy(update=True)
    first = skill({"pin": LEVELS}, FILES, update)
    assert first.outcome == "passed"
    updates = plan_entry(first, update)
    assert updates == {
        ("skills", "guide", "files", "references", "references/style.md"): 71,
        ("skills", "guide", "files", "references", "references/terms.md"): 40,
    }
    # The update names every pin it writes, files too.
    assert part_pins_written([first], updates) == [
        {
            "entry": "skills::guide",
            "part": "references references/style.md",
            "from": None,
            "to": 71,
        },
        {
            "entry": "skills::guide",
            "part": "references references/terms.md",
            "from": None,
            "to": 40,
        },
    ]


def test_an_update_rewrites_a_real_ledger_with_file_pins_and_reads_back(tmp_path: Path) -> None:
    path = tmp_path / "toll.yaml"
    path.write_text(
        "version: 1\nskills:\n  guide:\n    path: skills/guide   # the house style\n"
        "    pin: {metadata: 40, body: 146, references: 111}\n",
        encoding="utf-8",
    )
    update = Policy(update=True)
    result = skill({"pin": LEVELS}, FILES, update)
    rewrite_ledger(path, plan_update([result], update))
    text = path.read_text("utf-8")
    assert "# the house style" in text
    data = ledger_from_text(text, path).data
    assert data["skills"]["guide"]["files"] == FILES
    # Judged against what was written, the same measurement passes and plans nothing.
    again = skill(data["skills"]["guide"], FILES, update)
    assert (again.outcome, plan_entry(again, update)) == ("passed", {})


def judged_test(
    entry: dict[str, Any], parts: dict[str, int], policy: Policy = DEFAULT
) -> EntryResult:
    return judge(
        kind="tests",
        name="t.py::test_loop",
        nodeid="t.py::test_loop",
        line=2,
        entry=entry,
        measurement=EntryMeasurement(sum(parts.values()), "o200k", parts),
        policy=policy,
    )


CAPTURED = {"capture/messages": 92, "capture/system": 28, "capture/skills": 0, "capture/tools": 72}


def test_a_capture_regression_names_the_part_that_grew() -> None:
    grown = {**CAPTURED, "capture/messages": 144}
    result = judged_test({"pin": 192, "parts": CAPTURED}, grown)
    assert (result.outcome, result.failed) == ("regressed", True)
    assert result.message == "regressed: capture/messages +52 over its pin 92"
    # A part that grew while another shrank fails by name, though the total held.
    moved = {**CAPTURED, "capture/messages": 102, "capture/tools": 62}
    assert judged_test({"pin": 192, "parts": CAPTURED}, moved).message == (
        "regressed: capture/messages +10 over its pin 92"
    )
    # A new label beside pinned ones is growth from zero.
    added = {**CAPTURED, "system prompt": 5}
    assert judged_test({"pin": 192, "parts": CAPTURED}, added).message == (
        "regressed: system prompt +5 (new, not pinned)"
    )


def test_an_old_tests_entry_without_parts_is_judged_as_before_and_an_update_pins_them() -> None:
    grown = {**CAPTURED, "capture/messages": 144}
    result = judged_test({"pin": 192}, grown)
    assert (result.outcome, result.message) == (
        "regressed",
        "regressed by 52 tok against the pin 192",
    )
    assert judged_test({"pin": 192}, CAPTURED).outcome == "passed"
    update = Policy(update=True)
    assert plan_entry(judged_test({"pin": 192}, CAPTURED, update), update) == {
        ("tests", "t.py::test_loop", "parts", name): tokens for name, tokens in CAPTURED.items()
    }
    # A test gone whose entry holds only machine pins (parts among them) is removed.
    stale = plan_update(
        [
            EntryResult(
                "tests", "t.py::test_loop", "t.py::test_loop", 2, None, None, 192, None, "stale"
            )
        ],
        update,
        ledger_tests={"t.py::test_loop": {"pin": 192, "parts": CAPTURED}},
    )
    assert stale == {("tests", "t.py::test_loop"): DELETE}


LEDGER = """version: 1
skills:
  guide:
    path: skills/guide
    pin: {metadata: 40, body: 146, references: 111}
servers:
  notes:
    command: [python3, s.py]
"""


def shard(entry: dict[str, Any]) -> dict[str, Any]:
    base = {
        "kind": "skills",
        "name": "guide",
        "nodeid": "toll.yaml::skills::guide",
        "line": 3,
        "measured": 297,
        "method": "o200k",
        "pin": 297,
        "budget": None,
        "delta": 0,
        "outcome": "passed",
        "failed": False,
        "message": "",
        "findings": [],
        "parts": [],
        "ratchet": None,
        "other_pins": [],
    }
    return {
        "window": 200000,
        "tolerance": 0,
        "collected": {"tests": [], "ledger_items": [base["nodeid"], "toll.yaml::servers::notes"]},
        "entries": [{**base, **entry}],
    }


def row(name: Any, measured: Any = 40) -> dict[str, Any]:
    return {"name": name, "measured": measured, "pin": None, "delta": None}


@pytest.mark.parametrize(
    ("entry", "refused"),
    [
        ({"files": {"metadata": [row("SKILL.md")]}}, "pins no files of 'metadata'"),
        (
            {
                "kind": "servers",
                "name": "notes",
                "nodeid": "toll.yaml::servers::notes",
                "files": {"references": [row("x.md")]},
            },
            "a servers entry pins no files of 'references'",
        ),
        ({"files": {"references": [row("../../etc/passwd")]}}, "no file path inside the skill"),
        ({"files": {"references": [row("/etc/passwd")]}}, "no file path inside the skill"),
        ({"files": {"references": [row("")]}}, "no file path inside the skill"),
        ({"files": {"references": [row("a.md", -5)]}}, "files.references[0].measured"),
        ({"files": {"references": [row("a.md", 1.5)]}}, "files.references[0].measured"),
    ],
)
def test_a_shard_cannot_forge_a_file_pin(
    tmp_path: Path, entry: dict[str, Any], refused: str
) -> None:
    ledger = ledger_from_text(LEDGER, tmp_path / "toll.yaml")
    data = shard(entry)
    with pytest.raises(UsageError, match=refused.replace("[", r"\[").replace("]", r"\]")):
        check_figures("shard1.json", data)
        check_entries("shard1.json", data, ledger, "toll.yaml")


def test_a_shards_honest_files_are_believed(tmp_path: Path) -> None:
    ledger = ledger_from_text(LEDGER, tmp_path / "toll.yaml")
    data = shard({"files": {"references": [row("references/style.md", 71)]}})
    check_figures("shard1.json", data)
    check_entries("shard1.json", data, ledger, "toll.yaml")


def test_an_update_does_not_pin_a_new_memory_file_that_failed_as_growth() -> None:
    """The message of a failed growth says an update does not raise pins; a new file beside
    pinned ones (growth from zero) was pinned all the same, so the next run passed."""
    update = Policy(update=True)
    result = judge(
        kind="memory",
        name="claude",
        nodeid="toll.yaml::memory::claude",
        line=2,
        entry={"pin": {"CLAUDE.md": 50}},
        measurement=EntryMeasurement(59, "o200k", {"CLAUDE.md": 50, "docs/new.md": 9}),
        policy=update,
    )
    assert (result.outcome, result.failed) == ("regressed", True)
    assert "not raised: --toll-update only lowers pins" in result.message
    assert plan_entry(result, update) == {}
