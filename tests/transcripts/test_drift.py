"""Drift: reported prompt growth against our o200k count, per model."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_toll import cli
from pytest_toll.core.tokens import count
from pytest_toll.transcripts.drift import drift
from pytest_toll.transcripts.scan import ReadOptions
from tests.transcripts.transcripts_data import A_PY, FIXTURES, LOG, MAIN, call_tokens


def test_drift_sums_growth_against_what_was_added() -> None:
    report = drift([FIXTURES], ReadOptions(workers=1))
    rows = {row.model: row for row in report.rows}
    # msg_1 → msg_2: the reply, its thinking, two calls and their two results; msg_2 → msg_3
    # carries an image, so that turn is skipped rather than guessed.
    claude = count("Let me look.") + count("Looking.")
    claude += call_tokens("Bash", command="cd /repo && git log --oneline -5") + call_tokens(
        "Read", file_path="/repo/a.py"
    )
    claude += count(A_PY) + count(LOG)
    assert (
        rows["claude-sonnet-4-5"].turns,
        rows["claude-sonnet-4-5"].reported,
        rows["claude-sonnet-4-5"].counted,
    ) == (1, 310, claude)
    codex = call_tokens("apply_patch", input="*** Begin Patch") + count(
        "Success. Updated the following files:\nM a.py\n"
    )
    codex += call_tokens("shell", command=["bash", "-lc", "git status"]) + count(
        "On branch main\nnothing to commit\n"
    )
    assert (
        rows["gpt-5-codex"].turns,
        rows["gpt-5-codex"].reported,
        rows["gpt-5-codex"].counted,
    ) == (1, 300, codex)
    assert rows["gpt-5-codex"].ratio == round(300 / codex, 4)
    data = report.as_dict()
    assert (
        data["kind"] == "drift"
        and data["tolerance"] == 0.05
        and "method" in data
        and "limits" in data
    )


def test_drift_cli(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert cli.main(["drift", "--root", str(FIXTURES)]) == 0
    out = capsys.readouterr().out
    assert "claude-sonnet-4-5" in out and "method: " in out and "limits: " in out
    (tmp_path / "one.jsonl").write_bytes((FIXTURES / "corrupt" / "sess-bad.jsonl").read_bytes())
    assert cli.main(["drift", "--root", str(tmp_path)]) == 2
    assert "no two consecutive turns" in capsys.readouterr().err


def test_drift_counts_a_copied_turn_once(tmp_path: Path) -> None:
    for name in ("first.jsonl", "resumed.jsonl"):
        (tmp_path / name).write_bytes(MAIN.read_bytes())
    (row,) = drift([tmp_path], ReadOptions(workers=1)).rows
    assert (row.model, row.turns, row.reported) == ("claude-sonnet-4-5", 1, 310)
