"""Two tools reports compared: `diff_tools_reports` and `toll diff`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.diffing import diff_tools_reports
from tests.cli import run_main as toll


def report(total: int, tools: dict[str, int], tokenizer: str = "o200k_base") -> dict[str, Any]:
    return {
        "kind": "tools",
        "target": "t",
        "tokenizer": tokenizer,
        "tools": [{"name": name, "tokens": tokens} for name, tokens in tools.items()],
        "totals": {"claude": total},
    }


BEFORE = report(1000, {"a": 100, "b": 300, "c": 50, "d": 10})
AFTER = report(1150, {"a": 100, "b": 260, "c": 90, "e": 200})


def test_diff_tools_reports_sorted_by_size_of_change() -> None:
    diff = diff_tools_reports(BEFORE, AFTER)
    assert diff.as_dict() == {
        "kind": "tools-diff",
        "before_target": "t",
        "after_target": "t",
        "tokenizer": "o200k_base",
        "total": {"before": 1000, "after": 1150, "delta": 150, "percent": 15.0},
        "changes": [
            {"name": "e", "change": "added", "before": 0, "after": 200, "delta": 200},
            {"name": "b", "change": "shrunk", "before": 300, "after": 260, "delta": -40},
            {"name": "c", "change": "grown", "before": 50, "after": 90, "delta": 40},
            {"name": "d", "change": "removed", "before": 10, "after": 0, "delta": -10},
        ],
        "unchanged": 1,
        "notes": [],
    }
    assert diff.render() == (
        "tools total (claude, o200k_base): 1,000 → 1,150 (+150 tok, +15.0%)\n"
        "  +200  added    e  (0 → 200)\n"
        "   -40  shrunk   b  (300 → 260)\n"
        "   +40  grown    c  (50 → 90)\n"
        "   -10  removed  d  (10 → 0)\n"
        "  1 tool(s) unchanged"
    )


def test_diff_tools_reports_refuses_what_it_cannot_compare() -> None:
    with pytest.raises(CouldNotJudge, match=r"^after: not a tools report \(kind 'call'\)$"):
        diff_tools_reports(BEFORE, {"kind": "call"})
    with pytest.raises(CouldNotJudge, match="the counts are not comparable"):
        diff_tools_reports(BEFORE, report(1, {}, tokenizer="estimate"))
    with pytest.raises(CouldNotJudge, match=r"^b\.json: tools\[0\] needs a string 'name'"):
        diff_tools_reports(BEFORE, {**AFTER, "tools": [{"tokens": 1}]}, after_name="b.json")
    with pytest.raises(CouldNotJudge, match=r"totals\.claude must be an integer"):
        diff_tools_reports(BEFORE, {**AFTER, "totals": {}})


def test_toll_diff_gate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tmp_path / "before.json"
    after = tmp_path / "after.json"
    before.write_text(json.dumps(BEFORE))
    after.write_text(json.dumps(AFTER))
    code, out, _ = toll(capsys, "diff", str(before), str(after))
    assert code == 0
    assert out.startswith("tools total (claude, o200k_base): 1,000 → 1,150")
    code, out, _ = toll(capsys, "diff", str(before), str(after), "--allow-increase", "10")
    assert code == 1
    assert out.splitlines()[-1] == "gate: FAIL — total changed +15.0%, allowed +10%"
    code, out, _ = toll(capsys, "diff", str(before), str(after), "--allow-increase", "15", "--json")
    assert code == 0
    assert json.loads(out)["gate"] == {"allow_increase": 15.0, "passed": True}
    code, _, _ = toll(capsys, "diff", str(after), str(before), "--allow-increase", "0")
    assert code == 0  # a shrink always passes


def test_toll_diff_cannot_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tools = tmp_path / "tools.json"
    tools.write_text(json.dumps(BEFORE))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"kind": "skills"}))
    broken = tmp_path / "broken.json"
    broken.write_text("{\n  nope")
    cases = [
        ([str(tools), str(other)], "is a 'tools' report but"),
        ([str(other), str(other)], "cannot diff reports of kind 'skills' (known: "),
        ([str(tools), str(broken)], "broken.json:2:3: not valid JSON"),
        ([str(tools), str(tools), "--allow-increase", "-1"], "must be a non-negative percent"),
    ]
    for argv, message in cases:
        code, _, err = toll(capsys, "diff", *argv)
        assert (code, message in err) == (2, True), err
