"""``toll trend`` on a real git repository built in a temp dir: pins, a rename, a bad commit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_toll.cli.trend import change, sparkline
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.gate.ledger.history import Point, trend


def git(repo: Path, *args: str, date: str | None = None) -> str:
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "Test",
        "GIT_AUTHOR_EMAIL": "test@example.invalid",
        "GIT_COMMITTER_NAME": "Test",
        "GIT_COMMITTER_EMAIL": "test@example.invalid",
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }
    if date is not None:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    done = subprocess.run(
        ["git", *args], cwd=repo, env=env, capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


def ledger_text(server: int, skill_body: int, test: int, ratio: float) -> str:
    return (
        "version: 1\n"
        "servers:\n"
        "  notes:\n"
        "    command: [python3, server.py]\n"
        "    budget: 900\n"
        f"    pin: {server}\n"
        "skills:\n"
        f"  pdf: {{path: skills/pdf, pin: {{metadata: 40, body: {skill_body}, references: 10}}}}\n"
        "tests:\n"
        f"  tests/test_a.py::test_one: {{pin: {test}}}\n"
        "transcripts:\n"
        f"  waste_ratio_pin: {ratio}\n"
    )


def commit(repo: Path, path: str, text: str, message: str, day: int) -> str:
    file = repo / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, date=f"2026-01-{day:02d}T12:00:00+00:00")
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture
def history(tmp_path: Path) -> tuple[Path, list[str]]:
    """Five commits: three pins, a broken YAML, a rename into ``gate/`` with a lower pin."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commits = [
        commit(repo, "toll.yaml", ledger_text(500, 150, 1200, 0.09), "first pins", 1),
        commit(repo, "README.md", "unrelated\n", "a commit that leaves the ledger alone", 2),
        commit(repo, "toll.yaml", ledger_text(480, 150, 1180, 0.08), "trim", 3),
        commit(repo, "toll.yaml", "version: 1\nservers: [unclosed\n", "a broken ledger", 4),
        commit(repo, "toll.yaml", ledger_text(470, 140, 1170, 0.08), "fix it", 5),
    ]
    (repo / "gate").mkdir()
    git(repo, "mv", "toll.yaml", "gate/toll.yaml")
    git(repo, "commit", "-q", "-m", "move the ledger", date="2026-01-06T12:00:00+00:00")
    commits.append(git(repo, "rev-parse", "HEAD"))
    commits.append(
        commit(repo, "gate/toll.yaml", ledger_text(460, 140, 1160, 0.07), "after the move", 7)
    )
    return repo, commits


def test_every_pin_oldest_first_across_a_rename_with_the_broken_commit_skipped(
    history: tuple[Path, list[str]],
) -> None:
    repo, commits = history
    first, _, trim, broken, fixed, moved, after = commits
    result = trend(repo / "gate" / "toll.yaml")
    assert result.commits == 6  # the README commit never touched the ledger
    assert [commit for commit, _ in result.skipped] == [broken]
    assert "invalid YAML" in result.skipped[0][1]
    servers = result.entries["servers::notes"]
    assert [(point.commit, point.pin) for point in servers] == [
        (first, 500),
        (trim, 480),
        (fixed, 470),
        (moved, 470),
        (after, 460),
    ]
    assert servers[0].date == "2026-01-01T12:00:00+00:00"
    # A skill's pin is the sum of its three levels; transcripts' is its waste ratio.
    assert [point.pin for point in result.entries["skills::pdf"]] == [200, 200, 190, 190, 190]
    assert [point.pin for point in result.entries["transcripts"]] == [0.09, 0.08, 0.08, 0.08, 0.07]
    assert list(result.entries) == [
        "servers::notes",
        "skills::pdf",
        "transcripts",
        "tests::tests/test_a.py::test_one",
    ]


def test_the_cli_json_and_text_from_a_subfolder(history: tuple[Path, list[str]]) -> None:
    repo, commits = history
    result = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "trend", "--ledger", "toll.yaml", "--json"],
        cwd=repo / "gate",
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["kind"] == "trend"
    assert report["skipped"] == 1
    assert report["entries"]["servers::notes"][0] == {
        "commit": commits[0],
        "date": "2026-01-01T12:00:00+00:00",
        "pin": 500,
    }
    assert [point["pin"] for point in report["entries"]["tests::tests/test_a.py::test_one"]] == [
        1200,
        1180,
        1170,
        1170,
        1160,
    ]
    text = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "trend", "--ledger", "gate/toll.yaml"],
        cwd=repo,
        capture_output=True,
        text=True,
    )
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    server_line = next(line for line in lines if "servers::notes" in line)
    assert "█▅▃▃▁" in server_line
    assert "500 → 460  -40 (-8.0%)" in server_line
    assert "skipped 1 commit whose ledger does not load:" in text.stdout
    assert f"  {commits[3][:7]}: " in text.stdout


def test_since_keeps_only_later_commits(history: tuple[Path, list[str]]) -> None:
    repo, commits = history
    result = trend(repo / "gate" / "toll.yaml", since="2026-01-04T18:00:00+00:00")
    assert [point.commit for point in result.entries["servers::notes"]] == commits[4:]
    assert result.skipped == []


def test_outside_git_or_without_history_cannot_judge(tmp_path: Path) -> None:
    (tmp_path / "toll.yaml").write_text(ledger_text(1, 1, 1, 0.1), encoding="utf-8")
    with pytest.raises(CouldNotJudge, match="not in a git repository"):
        trend(tmp_path / "toll.yaml")
    git(tmp_path, "init", "-q")
    result = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "trend"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert "no commit touched it" in result.stderr


def test_sparkline_and_change() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == "▁▂▃▄▅▆▇█"
    assert sparkline([5, 5, 5]) == "▅▅▅"
    assert change([Point("a", "d", 100), Point("b", "d", 125)]) == "+25 (+25.0%)"
    assert change([Point("a", "d", 0.09), Point("b", "d", 0.09)]) == "unchanged"


def test_a_merged_branch_shows_as_it_landed_not_commit_by_commit(tmp_path: Path) -> None:
    git(tmp_path, "init", "-q", "-b", "main")
    commit(tmp_path, "toll.yaml", ledger_text(500, 300, 60, 0.1), "seed", day=1)
    git(tmp_path, "checkout", "-q", "-b", "side")
    # Written on the side branch first, but merged after main moved on.
    commit(tmp_path, "toll.yaml", ledger_text(500, 300, 55, 0.1), "side: test pin", day=2)
    git(tmp_path, "checkout", "-q", "main")
    commit(tmp_path, "toll.yaml", ledger_text(480, 300, 60, 0.1), "main: server pin", day=3)
    git(
        tmp_path, "merge", "-q", "--no-edit", "-X", "ours", "side", date="2026-01-04T12:00:00+00:00"
    )
    points = trend(tmp_path / "toll.yaml").entries["servers::notes"]
    # The side branch's commit (day 2, still 500) never stood on main: it is not a point.
    assert [point.pin for point in points] == [500, 480, 480]
