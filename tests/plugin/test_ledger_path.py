"""Issue #36 item 4: a ledger named on the command line is found where it was named.

pytest widens its rootdir to the common ancestor of the paths among its arguments, an
existing report path (``--toll-json /elsewhere/r.json``) included; the ledger the user typed
(``pytest --toll toll.yaml``) was looked up under that rootdir, so the second run of the same
command exited 4 with "no ledger at …"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_toll.cli import main
from tests.plugin.inner import QUIET

DEMO_SKILL = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills" / "release-notes"


def test_the_same_command_passes_twice_with_a_report_outside_the_repository(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    shutil.copytree(DEMO_SKILL, pytester.path / "skills" / "release-notes")
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    report = tmp_path_factory.mktemp("elsewhere") / "r.json"
    for _ in range(2):
        run = pytester.runpytest("--toll", "toll.yaml", "--toll-json", str(report), *QUIET)
        assert run.ret == 0, run.stdout.str() + run.stderr.str()
        run.stdout.fnmatch_lines(["*1 entry: 1 passed*"])
        assert report.is_file()


def test_a_ledger_in_a_subfolder_named_as_an_argument_is_the_ledger(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`pytest --toll ci/toll.yaml` from the repository root gates ci/toll.yaml, not a
    toll.yaml at the rootdir that does not exist."""
    shutil.copytree(DEMO_SKILL, pytester.path / "skills" / "release-notes")
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    (pytester.path / "ci").mkdir()
    text = (pytester.path / "toll.yaml").read_text("utf-8")
    (pytester.path / "toll.yaml").unlink()
    (pytester.path / "ci" / "toll.yaml").write_text(
        text.replace('path: "skills/', 'path: "../skills/'), encoding="utf-8"
    )
    run = pytester.runpytest("--toll", "ci/toll.yaml", *QUIET)
    assert run.ret == 0, run.stdout.str() + run.stderr.str()
    run.stdout.fnmatch_lines(["*1 entry: 1 passed*"])
