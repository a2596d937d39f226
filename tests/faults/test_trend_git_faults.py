"""``toll trend`` runs git on a repository it does not trust: nothing the repository's own
config names is ever run, non-ASCII paths work, and a huge old ledger is never read.

A repository cloned from a stranger, unpacked from an archive or left by another user can
carry any ``.git/config``; reading its history must not run a program it names. Each such
key below points at a script that leaves a marker file; no marker may appear."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import tracemalloc
from pathlib import Path

import pytest

from pytest_toll.gate.ledger.history import trend

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="shell scripts as git programs")

IDENTITY = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
SIGNATURE = (
    "gpgsig -----BEGIN PGP SIGNATURE-----\n"
    " \n"
    " iQEzBAABCAAdFiEEaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaFAmX0AAAACgkQaaaaaaaaaaaa\n"
    " =abcd\n"
    " -----END PGP SIGNATURE-----\n"
)


def git(repo: Path, *args: str, stdin: str | None = None, day: int = 1) -> str:
    date = f"2026-01-{day:02d}T12:00:00+00:00"
    done = subprocess.run(
        ["git", *args],
        cwd=repo,
        env={**os.environ, **IDENTITY, "GIT_AUTHOR_DATE": date, "GIT_COMMITTER_DATE": date},
        input=stdin,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def ledger(pin: int) -> str:
    return f"version: 1\ntests:\n  tests/test_a.py::test_one: {{pin: {pin}}}\n"


def commit(repo: Path, path: str, text: str, day: int) -> None:
    file = repo / path
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", f"pin on day {day}", day=day)


def sign_head(repo: Path) -> None:
    """Rewrite HEAD as a commit carrying a (bogus) PGP signature, so that showing signatures
    would run ``gpg.program`` to verify it."""
    raw = git(repo, "cat-file", "commit", "HEAD") + "\n"
    head, _, message = raw.partition("\n\n")
    signed = git(
        repo,
        "hash-object",
        "-t",
        "commit",
        "-w",
        "--stdin",
        stdin=f"{head}\n{SIGNATURE}\n{message}",
    )
    git(repo, "update-ref", "HEAD", signed)


def hostile_config(repo: Path, markers: Path) -> list[str]:
    """Point every config key that runs a program at a marker-leaving script; returns the
    keys. Written after the commits: the test's own git calls would run them too."""
    markers.mkdir()
    scripts = repo.parent / "scripts"
    scripts.mkdir()

    def script(name: str) -> str:
        path = scripts / name
        path.write_text(f"#!/bin/sh\ntouch '{markers / name}'\ncat >/dev/null 2>&1\nexit 0\n")
        path.chmod(0o755)
        return str(path)

    hooks = repo.parent / "hooks"
    hooks.mkdir()
    for hook in ("post-checkout", "post-index-change", "reference-transaction", "pre-auto-gc"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch '{markers / hook}'\n")
        (hooks / hook).chmod(0o755)
    keys = {
        "core.fsmonitor": script("fsmonitor"),
        "core.pager": script("core-pager"),
        "pager.log": script("pager-log"),
        "pager.show": script("pager-show"),
        "pager.cat-file": script("pager-cat-file"),
        "core.hooksPath": str(hooks),
        "gpg.program": script("gpg"),
        "gpg.openpgp.program": script("gpg-openpgp"),
        "gpg.x509.program": script("gpgsm"),
        "gpg.ssh.program": script("ssh-keygen"),
        "log.showSignature": "true",
        "diff.external": script("external-diff"),
        "diff.evil.textconv": script("textconv"),
        "diff.evil.command": script("diff-driver"),
        "filter.evil.clean": script("filter-clean"),
        "filter.evil.smudge": script("filter-smudge"),
        "core.sshCommand": script("ssh"),
        "color.ui": "always",
        "diff.relative": "true",
        "core.quotePath": "true",
    }
    for key, value in keys.items():
        git(repo, "config", key, value)
    (repo / ".git" / "info").mkdir(exist_ok=True)
    (repo / ".git" / "info" / "attributes").write_text("* diff=evil filter=evil\n")
    return list(keys)


def test_no_program_the_repository_config_names_is_run(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "project/toll.yaml", ledger(120), 1)
    commit(repo, "project/toll.yaml", ledger(110), 2)
    sign_head(repo)
    commit(repo, "project/toll.yaml", ledger(100), 3)
    sign_head(repo)
    markers = tmp_path / "markers"
    keys = hostile_config(repo, markers)
    # An untracked change, so anything that refreshes the index has work to do.
    (repo / "project" / "toll.yaml").write_text(ledger(90), encoding="utf-8")

    history = trend(repo / "project" / "toll.yaml")

    assert sorted(path.name for path in markers.iterdir()) == [], keys
    points = history.entries["tests::tests/test_a.py::test_one"]
    assert [point.pin for point in points] == [120, 110, 100]
    assert history.skipped == []


def test_a_path_with_non_ascii_characters_works(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "dépôt/ledger ☃/toll.yaml", ledger(50), 1)
    commit(repo, "dépôt/ledger ☃/toll.yaml", ledger(40), 2)
    git(repo, "mv", "dépôt/ledger ☃/toll.yaml", "dépôt/ledger ☃/tøll.yaml")
    git(repo, "commit", "-q", "-m", "rename", day=3)
    commit(repo, "dépôt/ledger ☃/tøll.yaml", ledger(30), 4)

    history = trend(repo / "dépôt" / "ledger ☃" / "tøll.yaml")

    assert history.skipped == []
    points = history.entries["tests::tests/test_a.py::test_one"]
    assert [point.pin for point in points] == [50, 40, 40, 30]


def test_a_huge_old_ledger_is_skipped_without_being_read(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "toll.yaml", ledger(70), 1)
    huge = ledger(65) + "# " + "x" * (50 * 1024 * 1024) + "\n"
    commit(repo, "toll.yaml", huge, 2)
    del huge
    commit(repo, "toll.yaml", ledger(60), 3)

    tracemalloc.start()
    try:
        history = trend(repo / "toll.yaml")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    assert [point.pin for point in history.entries["tests::tests/test_a.py::test_one"]] == [70, 60]
    ((_, why),) = history.skipped
    assert "larger than" in why and "not read" in why
    assert peak < 8 * 1024 * 1024, f"peak {peak:,} bytes: the huge blob was read"


def test_the_marker_scripts_do_run_when_git_is_asked_plainly(tmp_path: Path) -> None:
    """The control: the same repository makes a plain ``git log`` run the config's program,
    so the first test's silence is the hardening's doing, not a script that never fires."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit(repo, "toll.yaml", ledger(10), 1)
    sign_head(repo)
    markers = tmp_path / "markers"
    hostile_config(repo, markers)
    subprocess.run(
        ["git", "log", "-p", "--", "toll.yaml"], cwd=repo, capture_output=True, check=False
    )
    fired = {path.name for path in markers.iterdir()}
    assert "gpg" in fired or "gpg-openpgp" in fired
    assert fired & {"external-diff", "textconv", "diff-driver"}
    assert all(stat.S_ISREG(path.stat().st_mode) for path in markers.iterdir())
