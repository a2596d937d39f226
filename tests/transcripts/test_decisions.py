"""The transcripts decisions ledger: TL001–TL005, judge_decisions, toll check [--init]."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_toll import cli
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import RuleOverrides
from pytest_toll.core.tokens import count
from pytest_toll.transcripts.decisions import initial_settings, judge_decisions
from pytest_toll.transcripts.scan import ReadOptions

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
A_PY = "def answer():\n    return 42\n"


def _rules(report: object) -> list[tuple[str, str | None]]:
    return [(f.rule, f.subject) for f in report.findings]  # type: ignore[attr-defined]


def test_each_rule_fires_exactly() -> None:
    section = {
        "decide_above_tokens": 15,
        "waste_ratio_pin": 0.01,
        "decisions": {
            "Read": {"status": "keep", "reason": "reading is the job"},
            "$ git log": {"status": "replace"},
            "Edit": {"status": "maybe"},
            "$ ls": {"status": "watch", "reason": "  "},
        },
    }
    report = judge_decisions(
        section, roots=[FIXTURES], duplicate_decisions=[("Read", 7)], options=ReadOptions(workers=1)
    )
    assert _rules(report) == [
        ("TL001", "Edit"),
        ("TL002", "$ git log"),
        ("TL002", "$ ls"),
        ("TL003", "$ git status"),
        ("TL004", "Read"),
        ("TL005", None),
    ]
    assert [(s.shape, s.ok_tokens, s.status) for s in report.shapes_over_threshold] == [
        ("Read", 39, "keep"),
        ("$ git log", 20, "replace"),
        ("$ git status", 16, None),
    ]
    assert report.waste_ratio == 0.08 and report.failed
    tl004 = next(f for f in report.findings if f.rule == "TL004")
    assert (
        tl004.message
        == "toll.yaml:7: transcripts.decisions.Read: decided twice (only the first counts)"
    )
    tl005 = next(f for f in report.findings if f.rule == "TL005")
    assert tl005.message.startswith(
        "waste ratio 0.0800 is above waste_ratio_pin 0.0100 (+0.01 tolerance)"
    )
    data = report.as_dict()
    assert data["total_tokens"] == report.ok_tokens and data["findings"][0]["shape"] == "Edit"


def test_clean_section_passes_and_severities_are_overridable() -> None:
    section = {
        "decide_above_tokens": 15,
        "waste_ratio_pin": 0.075,  # 0.08 is within the +0.01 tolerance
        "decisions": {
            "Read": {"status": "keep", "reason": "reading is the job"},
            "$ git log": {"status": "replace", "with": "a log tool"},
            "$ git status": {"status": "watch", "reason": "cheap"},
        },
    }
    report = judge_decisions(section, roots=[FIXTURES], options=ReadOptions(workers=1))
    assert report.findings == [] and not report.failed and not report.waste_improved
    lowered = judge_decisions(
        {**section, "waste_ratio_pin": 0.5}, roots=[FIXTURES], options=ReadOptions(workers=1)
    )
    assert lowered.waste_improved
    relaxed = judge_decisions(
        {"decide_above_tokens": 15},
        roots=[FIXTURES],
        settings=RuleOverrides({"TL003": "warn"}),
        options=ReadOptions(workers=1),
    )
    assert {f.severity for f in relaxed.findings} == {"warn"} and not relaxed.failed


def test_no_transcripts_or_no_calls_cannot_judge(tmp_path: Path) -> None:
    with pytest.raises(CouldNotJudge, match="no transcripts found"):
        judge_decisions({}, roots=[tmp_path])
    (tmp_path / "s.jsonl").write_text('{"type":"user","message":{"role":"user","content":"hi"}}\n')
    with pytest.raises(CouldNotJudge, match="no tool calls"):
        judge_decisions({}, roots=[tmp_path])


def test_initial_settings_leave_five_shapes() -> None:
    assert initial_settings([900, 800, 700, 600, 500, 400, 300], 0.01234) == (400, 0.0124)
    assert initial_settings([10, 5], 0.0) == (0, 0.0)


LEDGER = """\
# the team's ledger
version: 1
transcripts:
  # heavy shapes we decided about
  decisions:
    Read: {status: keep, reason: reading is the job}
    Read: {status: watch, reason: decided again}
"""


def test_check_fires_tl004_from_a_real_duplicate_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "toll.yaml"
    ledger.write_text(LEDGER)
    code = cli.main(["check", "--ledger", str(ledger), "--root", str(FIXTURES), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 1
    tl004 = [f for f in data["findings"] if f["rule"] == "TL004"]
    assert tl004 == [
        {
            "rule": "TL004",
            "severity": "error",
            "shape": "Read",
            "message": f"{ledger}:7: transcripts.decisions.Read: decided twice (only the first counts)",
            "hint": "keep one decision per shape",
        }
    ]


def test_check_init_pins_and_keeps_comments(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "toll.yaml"
    ledger.write_text(LEDGER.replace("    Read: {status: watch, reason: decided again}\n", ""))
    assert cli.main(["check", "--ledger", str(ledger), "--root", str(FIXTURES), "--init"]) == 0
    out = capsys.readouterr().out
    assert "waste_ratio_pin = 0.0800" in out
    text = ledger.read_text()
    assert "# the team's ledger" in text and "# heavy shapes we decided about" in text
    assert "decide_above_tokens: 3" in text and "waste_ratio_pin: 0.08" in text
    assert "Read: {status: keep, reason: reading is the job}" in text
    # now checking: the other four heavy shapes are undecided
    assert cli.main(["check", "--ledger", str(ledger)]) == 1
    out = capsys.readouterr().out
    assert out.count("TL003 error") == 4 and f"{count(A_PY)}" in out


def test_check_without_a_section(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    ledger = tmp_path / "toll.yaml"
    ledger.write_text("version: 1\n")
    assert cli.main(["check", "--ledger", str(ledger), "--root", str(FIXTURES)]) == 2
    assert "no transcripts: section" in capsys.readouterr().err
    assert cli.main(["check", "--ledger", str(tmp_path / "missing.yaml")]) == 2


def test_pytest_toll_gates_the_transcripts_section(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    pytester.makefile(
        ".yaml",
        toll=f"""\
version: 1
transcripts:
  roots: [{FIXTURES}]
  decide_above_tokens: 100
  decisions:
    Read: {{status: keep, reason: reading is the job}}
    Read: {{status: watch, reason: decided again}}
""",
    )
    result = pytester.runpytest("--toll", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*TL004 error Read: *toll.yaml:7: transcripts.decisions.Read: decided twice*"]
    )
    (pytester.path / "toll.yaml").write_text(
        f"version: 1\ntranscripts:\n  roots: [{FIXTURES}]\n  decide_above_tokens: 100\n"
    )
    pytester.runpytest("--toll", "-p", "no:cacheprovider").assert_outcomes(passed=1)


def test_check_on_the_demo_says_improved_only_when_an_update_would_lower_the_pin(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """#36 item 6b: the demo's pin is today's ratio rounded up, as the gate pins it; the gate
    says ok and an update writes nothing, so `toll check` must not say "improved"."""
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo"
    monkeypatch.chdir(demo)
    assert cli.main(["check"]) == 0
    out = capsys.readouterr().out
    assert "waste ratio 0.0922 (pin 0.0922)" in out
    assert "improved" not in out
