"""Plain ``pytest`` (no ``--toll``) and the marker, as the README's table says (issue #25, 9).

A test's own ``@pytest.mark.toll(budget=N)`` is its assertion: it holds in plain pytest, as
any assert would. Only the ledger needs ``--toll``: plain pytest never reads it (a broken
one does not matter), judges no pin, writes nothing and prints no toll summary.
"""

from __future__ import annotations

import pytest

from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

TESTS = """\
import pytest

@pytest.mark.toll(budget=2)
def test_over(toll):
    toll.text("prompt", "one two three four")

@pytest.mark.toll(budget=10)
def test_under(toll):
    assert toll.text("prompt", "one two") == 2

def test_measures_without_a_budget(toll):
    toll.text("prompt", "one two three four five")

def test_plain():
    pass
"""

# Not even YAML: a run that read it would stop with a usage error.
BROKEN_LEDGER = "version: 1\ntests: [test_plain.py::test_under: {pin: 1}\n"


@pytest.mark.parametrize(
    "workers",
    [pytest.param([], id="serial"), pytest.param(["-n", "2"], id="xdist", marks=pytest.mark.slow)],
)
def test_plain_pytest_holds_a_tests_own_budget_and_leaves_the_ledger_alone(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    pytester.makepyfile(test_plain=TESTS)
    ledger = pytester.path / "toll.yaml"
    ledger.write_text(BROKEN_LEDGER, encoding="utf-8")
    result = pytester.runpytest_subprocess(*QUIET, *workers)
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["*test_over*", "4 tok is over the budget of 2 by 2"])
    output = result.stdout.str()
    assert "toll summary" not in output and "toll.yaml" not in output
    assert ledger.read_text(encoding="utf-8") == BROKEN_LEDGER


def test_a_marker_without_a_budget_or_measurement_does_nothing_in_plain_pytest(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_marked="""
        import pytest

        @pytest.mark.toll
        def test_marked_only():
            pass
        """
    )
    pytester.runpytest_subprocess(*QUIET).assert_outcomes(passed=1)
