"""One git runner, and pushes only to the loop's own branches (issue #34, door 5).

A real repository whose config names a program for every hook git offers — a file-system
monitor, hooks, a pager, a signer that signs every commit, an external diff, a clean filter
and a textconv for every file, an SSH command — is read by the trend, the memory check and
the GitHub loop's commits and pushes (to a bare remote on disk): no program writes its
marker. ``toll github ratchet`` and ``toll github badge`` refuse the base branch, the
remote's default and a branch whose tip they did not write, and never overwrite a commit
pushed after their check.
"""

from __future__ import annotations

import io
import os
import stat
import subprocess
from pathlib import Path

import pytest

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.gate.ledger.history import ledger_history
from pytest_toll.github import loop
from pytest_toll.github.api import GitHub
from pytest_toll.surface.memory import committed

IDENTITY = {
    "GIT_AUTHOR_NAME": "Dev", "GIT_AUTHOR_EMAIL": "dev@example.com",
    "GIT_COMMITTER_NAME": "Dev", "GIT_COMMITTER_EMAIL": "dev@example.com",
}  # fmt: skip
LEDGER = "version: 1\nservers:\n  notes: {tools_file: tools.json, pin: 10}\n"


def git(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True,
        env={**os.environ, **IDENTITY},
    )  # fmt: skip
    return done.stdout.strip()


def _program(path: Path, marker: Path) -> str:
    path.write_text(f'#!/bin/sh\necho "$0 $*" >> {marker}\ncat >/dev/null 2>&1\nexit 0\n')
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.fixture
def hostile_repository(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(checkout, bare remote, marker file): the checkout has a clean history, then a config
    whose every program writes to the marker."""
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "toll.yaml").write_text(LEDGER)
    (work / "CLAUDE.md").write_text("# Shop\n")
    (work / ".gitattributes").write_text("* filter=evil diff=evil\n")
    git(work, "add", "-A")
    git(work, "commit", "-qm", "first")
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    marker = tmp_path / "marker"
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in (
        "pre-push",
        "post-checkout",
        "pre-commit",
        "post-commit",
        "reference-transaction",
        "post-index-change",
        "pre-auto-gc",
        "fsmonitor-watchman",
        "push-to-checkout",
    ):
        _program(hooks / hook, marker)  # fmt: skip
    program = _program(bin_ / "evil", marker)
    for key, value in {
        "core.fsmonitor": program,
        "core.hooksPath": str(hooks),
        "core.pager": program,
        "pager.log": program,
        "diff.external": program,
        "gpg.program": program,
        "gpg.format": "openpgp",
        "commit.gpgSign": "true",
        "log.showSignature": "true",
        "filter.evil.clean": program,
        "filter.evil.smudge": program,
        "filter.evil.process": program,
        "diff.evil.textconv": program,
        "diff.evil.command": program,
        "core.sshCommand": program,
        "remote.origin.receivepack": program,
        "remote.origin.uploadpack": program,
    }.items():
        git(work, "config", key, value)
    return work, remote, marker


def test_no_repository_program_runs(
    hostile_repository: tuple[Path, Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    work, remote, marker = hostile_repository
    (work / "toll.yaml").write_text(LEDGER.replace("pin: 10", "pin: 9"))
    (work / "badge.svg").write_text("<svg/>")
    (work / "badge.json").write_text("{}")
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    versions = list(ledger_history(work / "toll.yaml"))
    assert [version.text for version in versions] == [LEDGER]
    assert committed(work, work / "CLAUDE.md") and not committed(work, work / "badge.svg")
    assert loop.ledger_changed(work / "toll.yaml")
    out = io.StringIO()
    # The remote's own programs are configured too; a local push would run them.
    assert loop.publish_badge(work / "badge.svg", "toll-badge", work, out) == "published"
    commit = loop._commit_file(work / "toll.yaml", loop.RATCHET_TITLE)
    tip = loop.claim_branch(
        "toll/ratchet", remote="origin", cwd=work, base="main", title=loop.RATCHET_TITLE
    )
    loop.push(commit, "toll/ratchet", tip, remote="origin", cwd=work)
    assert git(remote, "rev-parse", "toll/ratchet") == commit
    assert not marker.exists(), marker.read_text()


@pytest.fixture
def repository(tmp_path: Path) -> tuple[Path, Path]:
    remote = tmp_path / "origin.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    (work / "toll.yaml").write_text(LEDGER)
    git(work, "add", "-A")
    git(work, "commit", "-qm", "first")
    git(work, "remote", "add", "origin", str(remote))
    git(work, "push", "-q", "origin", "main")
    (work / "badge.svg").write_text("<svg>1</svg>")
    (work / "badge.json").write_text("{}")
    return work, remote


def _someones_branch(work: Path, branch: str, *, onto: str | None = None) -> str:
    """A commit a person pushed to ``branch`` (on top of ``onto`` when given)."""
    scratch = work.parent / f"person-{branch.replace('/', '-')}"
    git(work.parent, "clone", "-q", str(work.parent / "origin.git"), str(scratch))
    if onto:
        git(scratch, "fetch", "-q", "origin", onto)
        git(scratch, "checkout", "-q", "FETCH_HEAD")
    (scratch / "work.txt").write_text("a person's work\n")
    git(scratch, "add", "-A")
    git(scratch, "commit", "-qm", "my work")
    git(scratch, "push", "-q", "origin", f"HEAD:refs/heads/{branch}")
    return git(scratch, "rev-parse", "HEAD")


def _api() -> GitHub:
    # Never reached: each refusal comes before any request.
    return GitHub("o/r", "token", api_url="http://127.0.0.1:9")


def test_the_base_and_the_default_branch_are_refused(repository: tuple[Path, Path]) -> None:
    work, remote = repository
    (work / "toll.yaml").write_text(LEDGER.replace("pin: 10", "pin: 9"))
    before = git(remote, "rev-parse", "main")
    with pytest.raises(CouldNotJudge, match="refusing to push to main"):
        loop.ratchet(work / "toll.yaml", branch="main", base="main", body="", api=_api(),
                     stream=io.StringIO())  # fmt: skip
    with pytest.raises(CouldNotJudge, match="refusing to push to main"):
        loop.ratchet(work / "toll.yaml", branch="main", base="release", body="", api=_api(),
                     stream=io.StringIO())  # fmt: skip
    with pytest.raises(CouldNotJudge, match="refusing to push to main"):
        loop.publish_badge(work / "badge.svg", "main", work, io.StringIO())
    assert git(remote, "rev-parse", "main") == before


def test_a_branch_the_loop_did_not_write_is_refused(repository: tuple[Path, Path]) -> None:
    work, remote = repository
    mine = _someones_branch(work, "toll-badge")
    theirs = _someones_branch(work, "toll/ratchet")
    (work / "toll.yaml").write_text(LEDGER.replace("pin: 10", "pin: 9"))
    with pytest.raises(CouldNotJudge, match="not written by pytest-toll"):
        loop.publish_badge(work / "badge.svg", "toll-badge", work, io.StringIO())
    with pytest.raises(CouldNotJudge, match="not written by pytest-toll"):
        loop.ratchet(work / "toll.yaml", branch="toll/ratchet", base="main", body="",
                     api=_api(), stream=io.StringIO())  # fmt: skip
    assert git(remote, "rev-parse", "toll-badge") == mine
    assert git(remote, "rev-parse", "toll/ratchet") == theirs


def test_the_loops_own_branch_is_updated_but_a_commit_on_top_is_kept(
    repository: tuple[Path, Path],
) -> None:
    work, remote = repository
    assert loop.publish_badge(work / "badge.svg", "toll-badge", work, io.StringIO()) == "published"
    (work / "badge.svg").write_text("<svg>2</svg>")
    assert loop.publish_badge(work / "badge.svg", "toll-badge", work, io.StringIO()) == "published"
    assert loop.TRAILER in git(remote, "log", "-1", "--format=%B", "toll-badge")
    # Someone pushes onto the loop's branch: it is theirs now, never overwritten.
    theirs = _someones_branch(work, "toll-badge", onto="toll-badge")
    (work / "badge.svg").write_text("<svg>3</svg>")
    with pytest.raises(CouldNotJudge, match="not written by pytest-toll"):
        loop.publish_badge(work / "badge.svg", "toll-badge", work, io.StringIO())
    assert git(remote, "rev-parse", "toll-badge") == theirs


def test_a_commit_pushed_after_the_check_is_never_overwritten(
    repository: tuple[Path, Path],
) -> None:
    work, remote = repository
    (work / "toll.yaml").write_text(LEDGER.replace("pin: 10", "pin: 9"))
    first = loop._commit_file(work / "toll.yaml", loop.RATCHET_TITLE)
    loop.push(first, "toll/ratchet", None, remote="origin", cwd=work)
    tip = loop.claim_branch(
        "toll/ratchet", remote="origin", cwd=work, base="main", title=loop.RATCHET_TITLE
    )
    assert tip == first
    theirs = _someones_branch(work, "toll/ratchet", onto="toll/ratchet")  # the race
    second = loop._commit_file(work / "toll.yaml", loop.RATCHET_TITLE + " again")
    with pytest.raises(CouldNotJudge, match="push"):
        loop.push(second, "toll/ratchet", tip, remote="origin", cwd=work)
    assert git(remote, "rev-parse", "toll/ratchet") == theirs
    # And a branch that appeared meanwhile where none was is not replaced either.
    other = _someones_branch(work, "toll/other")
    with pytest.raises(CouldNotJudge, match="push"):
        loop.push(second, "toll/other", None, remote="origin", cwd=work)
    assert git(remote, "rev-parse", "toll/other") == other
