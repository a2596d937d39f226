"""Ctrl-C during ``--toll-update`` writes nothing: an interrupted run judged part of the
suite, so its pins (new, lowered or stale) are not the suite's; the ledger stays byte for
byte as it was, and the summary says so."""

from __future__ import annotations

import pytest

from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

LEDGER = """\
# kept as written
version: 1
tests:
  test_agent.py::test_prompt: {pin: 60}  # would drop to 6
  test_agent.py::test_gone: {pin: 9}  # no such test: stale
"""
TESTS = """\
import pytest

@pytest.mark.toll(budget=100)
def test_prompt(toll):
    toll.text("system", "You are a helpful assistant.")

@pytest.mark.toll(budget=100)
def test_new(toll):
    toll.text("system", "A new prompt.")

def test_zz_interrupt():
    raise KeyboardInterrupt
"""
SAYS = "the run was interrupted: the ledger was not updated"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    (pytester.path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    pytester.makepyfile(test_agent=TESTS)
    return pytester


def test_an_interrupted_update_leaves_the_ledger_as_it_was(project: pytest.Pytester) -> None:
    before = (project.path / "toll.yaml").read_bytes()
    # In a subprocess: an in-process run hands the KeyboardInterrupt to this pytest.
    result = project.runpytest_subprocess(*QUIET, "--toll", "--toll-update")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert (project.path / "toll.yaml").read_bytes() == before
    assert SAYS in result.stdout.str()
    assert "ledger updated" not in result.stdout.str()


def test_the_same_run_whole_does_update(project: pytest.Pytester) -> None:
    """The control: without the interrupt, the same update writes the ledger."""
    project.makepyfile(test_agent=TESTS.replace("raise KeyboardInterrupt", "pass"))
    result = project.runpytest(*QUIET, "--toll", "--toll-update")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "test_agent.py::test_prompt: {pin: 6}" in (project.path / "toll.yaml").read_text()


@pytest.mark.slow
def test_an_interrupted_update_under_xdist_writes_nothing(project: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    before = (project.path / "toll.yaml").read_bytes()
    result = project.runpytest_subprocess(*QUIET, "--toll", "--toll-update", "-n", "2")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    assert (project.path / "toll.yaml").read_bytes() == before
    assert SAYS in result.stdout.str()
