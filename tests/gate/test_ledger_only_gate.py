"""Issue #36 item 5: ``toll gate``, the ledger-only gate, judges a repository whose own pytest
configuration needs packages the toll job does not install — as ``pytest --toll`` would
judge the same ledger in a repository without that configuration."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import run_toll

ROOT = Path(__file__).resolve().parents[2]
DEMO_SKILL = ROOT / "examples" / "demo" / "skills" / "release-notes"

#: What a real project's configuration holds (python-sdk's filterwarnings names `mcp`; an
#: addopts for a plugin the toll job does not install), and a conftest importing the project.
PYPROJECT = """[project]
name = "someproject"

[tool.pytest.ini_options]
addopts = "--benchmark-disable"
filterwarnings = ["error", "ignore::notinstalled_pkg.SomeWarning"]
"""
CONFTEST = "import notinstalled_pkg  # the project itself, not installed in the toll job\n"


def make_repository(folder: Path, *, configured: bool) -> Path:
    shutil.copytree(DEMO_SKILL, folder / "skills" / "release-notes")
    if configured:
        (folder / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
        (folder / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    done = run_toll("init", cwd=folder)
    assert done.returncode == 0, done.stderr
    return folder


def verdict(path: Path) -> list[tuple[str, str, int | None, bool]]:
    report = json.loads(path.read_text(encoding="utf-8"))
    return [(e["nodeid"], e["outcome"], e["measured"], e["failed"]) for e in report["entries"]]


@pytest.mark.slow
def test_the_gate_judges_a_repository_whose_pytest_configuration_cannot_load(
    tmp_path: Path,
) -> None:
    repo = make_repository(tmp_path / "repo", configured=True)
    plain = make_repository(tmp_path / "plain", configured=False)
    # The repository's own configuration stops `pytest --toll` before it measures anything.
    refused = run_pytest(repo, "--toll", "toll.yaml", "--toll-json", "pytest.json")
    assert refused.returncode != 0
    assert "Failed to import filter module 'notinstalled_pkg'" in refused.stderr
    assert not (repo / "pytest.json").exists()

    gated = run_toll("gate", "toll.yaml", "--toll-json", "gate.json", cwd=repo)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "1 entry: 1 passed (1 ok)" in gated.stdout
    # The same judgement as `pytest --toll` where the configuration does not get in the way.
    judged = run_pytest(plain, "--toll", "toll.yaml", "--toll-json", "pytest.json")
    assert judged.returncode == 0, judged.stdout
    assert verdict(repo / "gate.json") == verdict(plain / "pytest.json")
    assert not (repo / ".pytest_cache").exists()

    # A regression fails it with pytest's code and every output the table names.
    skill = repo / "skills" / "release-notes" / "SKILL.md"
    skill.write_text(skill.read_text("utf-8") + "\nOne more sentence to read.\n", "utf-8")
    failed = run_toll("gate", "--toll-markdown", "r.md", "--toll-sarif", "r.sarif", cwd=repo)
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "regressed: body +" in failed.stdout
    assert "regressed" in (repo / "r.md").read_text("utf-8")
    assert json.loads((repo / "r.sarif").read_text("utf-8"))["version"] == "2.1.0"
    # No ledger: pytest's usage error, as `pytest --toll missing.yaml` gives.
    missing = run_toll("gate", "missing.yaml", cwd=repo)
    assert missing.returncode == 4
    assert "no ledger at" in missing.stderr


def run_pytest(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
    )
