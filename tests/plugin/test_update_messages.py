"""Issue #36 item 6a: naming the ledger (``pytest --toll toll.yaml --toll-update``) is not a
selection: no "partial run" line, and a gone test's machine-written pin is still removed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_toll.cli import main
from tests.plugin.inner import QUIET

DEMO_SKILL = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills" / "release-notes"
PARTIAL = "*partial run: only entries that ran were updated*"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    shutil.copytree(DEMO_SKILL, pytester.path / "skills" / "release-notes")
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    ledger = pytester.path / "toll.yaml"
    text = ledger.read_text("utf-8")
    # A test that no longer exists: a full update removes its machine-written pin.
    ledger.write_text(
        text.rstrip("\n") + "\ntests:\n  test_gone.py::test_old:\n    pin: 5\n", "utf-8"
    )
    return pytester


def test_naming_the_ledger_is_not_a_partial_run(project: pytest.Pytester) -> None:
    run = project.runpytest("--toll", "toll.yaml", "--toll-update", *QUIET)
    assert run.ret == 0, run.stdout.str()
    run.stdout.no_fnmatch_line(PARTIAL)
    run.stdout.fnmatch_lines(["*ledger updated: toll.yaml*", "*removed tests.test_gone.py*"])
    assert "test_gone.py" not in (project.path / "toll.yaml").read_text("utf-8")


def test_a_selection_is_still_a_partial_run(project: pytest.Pytester) -> None:
    run = project.runpytest("--toll", "toll.yaml", "--toll-update", "-k", "release", *QUIET)
    run.stdout.fnmatch_lines([PARTIAL])
    assert "test_gone.py" in (project.path / "toll.yaml").read_text("utf-8")
