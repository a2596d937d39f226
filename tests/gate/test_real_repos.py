"""The first run on real repositories (issue #25's acceptance test).

Each fixture under ``tests/fixtures/real_repos/`` holds the files ``toll init`` reads from
one public repository at a recorded commit (``MANIFEST.yaml``; made by
``scripts/fetch_real_repos.py``). On each: ``toll init`` exits 0, ``pytest --toll toll.yaml``
passes straight after, and growing one skill's body fails the gate naming that skill.

Hermetic: no MCP server in those configs can start here (``PATH`` holds no program, and every
HTTP request goes to a closed local proxy port), which is also what CI without network sees:
init writes them commented out with the reason, and the gate stays green.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_toll.cli import main
from tests.plugin.inner import QUIET

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real_repos"


def _manifest() -> list[dict[str, Any]]:
    with (REAL / "MANIFEST.yaml").open(encoding="utf-8") as file:
        rows: list[dict[str, Any]] = yaml.safe_load(file)["repositories"]
    return rows


REPOS = _manifest()
WITH_SKILLS = [row for row in REPOS if row["skills"]]


@pytest.fixture
def offline(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No server can start and no request leaves the machine (as in CI without network)."""
    monkeypatch.setenv("PATH", str(tmp_path_factory.mktemp("empty-path")))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)


def _copy(repo: dict[str, Any], target: Path) -> None:
    shutil.copytree(REAL / repo["repo"].replace("/", "__"), target, dirs_exist_ok=True)


def _init(where: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    monkeypatch.chdir(where)
    code = main(["init"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return out.out + out.err


def test_at_least_ten_real_repositories_are_kept() -> None:
    assert len(WITH_SKILLS) >= 10
    for row in REPOS:
        assert len(row["commit"]) == 40 and row["licence"]
        copy = REAL / row["repo"].replace("/", "__")
        if "licence_file" in row:
            assert (copy / row["licence_file"]).is_file()
        else:  # no licence for the whole repository: each skill kept carries its own
            assert all((copy / skill / "LICENSE.txt").is_file() for skill in row["skills"])


@pytest.mark.slow
@pytest.mark.usefixtures("offline")
@pytest.mark.parametrize("repo", WITH_SKILLS, ids=[row["repo"] for row in WITH_SKILLS])
def test_init_then_gate_passes_and_a_grown_skill_fails(
    repo: dict[str, Any],
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _copy(repo, pytester.path)
    said = _init(pytester.path, monkeypatch, capsys)
    assert "next: pytest --toll toll.yaml" in said
    ledger = yaml.safe_load((pytester.path / "toll.yaml").read_text(encoding="utf-8"))
    skills = ledger["skills"]
    # Every skill the fixture holds is found, wherever it lives, and measured.
    assert sorted(entry["path"] for entry in skills.values()) == sorted(repo["skills"])

    # One item per entry of every kind init wrote (a repository that is itself a plugin, or
    # carries memory files, gets those entries too).
    entries = sum(
        len(ledger.get(kind) or {})
        for kind in ("servers", "skills", "memory", "agents", "commands", "plugins", "hosts")
    ) + ("transcripts" in ledger)
    first = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert first.ret == 0, first.stdout.str()
    first.assert_outcomes(passed=entries)

    name, entry = next(iter(skills.items()))
    body = pytester.path / entry["path"] / "SKILL.md"
    with body.open("a", encoding="utf-8") as file:
        file.write("\n\nAlways restate every step above in full before acting. " * 60)
    grown = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert grown.ret == 1
    grown.assert_outcomes(passed=entries - 1, failed=1)
    grown.stdout.fnmatch_lines([f"FAILED toll.yaml::skills::{name} - *"])
