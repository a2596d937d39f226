"""``pytest --toll`` in a repository with no pytest config (issue #25 item 10): the test-like
templates skills ship are the agent's data, not tests, and are not collected."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_toll.cli import main
from tests.plugin.inner import QUIET

DEMO_SKILL = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills" / "release-notes"
TEMPLATE = (
    "from {pkg_name}.data import load_dataset\n\ndef test_loads():\n    assert load_dataset()\n"
)


@pytest.fixture
def repo(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    skill = pytester.path / "skills" / "release-notes"
    shutil.copytree(DEMO_SKILL, skill)
    (skill / "references" / "test_template.py").write_text(TEMPLATE, encoding="utf-8")
    pytester.makepyfile(test_real="def test_real():\n    assert True\n")
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    return pytester


def test_plain_toll_run_skips_skill_folders(repo: pytest.Pytester) -> None:
    result = repo.runpytest("--toll", *QUIET)
    assert result.ret == 0, result.stdout.str()
    # The repository's own test and the ledger entry run; the template is not collected.
    result.assert_outcomes(passed=2)


def test_a_skill_file_named_on_the_command_line_is_still_collected(repo: pytest.Pytester) -> None:
    result = repo.runpytest("--toll", "skills/release-notes/references/test_template.py", *QUIET)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*SyntaxError*"])


def test_without_toll_the_plugin_changes_no_collection(repo: pytest.Pytester) -> None:
    result = repo.runpytest(*QUIET)
    assert result.ret == pytest.ExitCode.INTERRUPTED  # pytest's own behaviour, untouched
