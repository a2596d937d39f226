"""``--toll-html`` / ``toll_html``: the controller writes the page once, from the report."""

from __future__ import annotations

import pytest

LEDGER = """\
version: 1
servers:
  files:
    tools_file: tools.json
    budget: 900
    pin: 10
"""
TOOLS = (
    '[{"name": "read_file", "description": "Read a file & return <its> text.", '
    '"inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}}]'
)


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_the_ini_setting_writes_one_page_with_the_regression_first(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    if workers:
        pytest.importorskip("xdist")
    pytester.makefile(".yaml", toll=LEDGER)
    pytester.makefile(".json", tools=TOOLS)
    pytester.makeini("[pytest]\ntoll_html = out/page.html\n")
    result = pytester.runpytest_subprocess("--toll", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(failed=1)
    page = (pytester.path / "out" / "page.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>")
    assert page.index("REGRESSED") < page.index("Servers: tools by claude tokens")
    assert ">read_file</tspan>" in page
    # Not a git repository: the page simply has no trend section.
    assert "Pin trends" not in page
    assert "could not write" not in result.stdout.str()
