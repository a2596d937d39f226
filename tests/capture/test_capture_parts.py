"""Issue #36 item 6g: a capture regression names the part that grew. ``--toll-update`` pins
the largest request's parts beside the test's total (``capture/messages`` …); a longer
conversation then fails naming ``capture/messages``, and a ledger without the parts is
judged as before."""

from __future__ import annotations

import pytest

from tests.capture.test_run_budget import _entries, _project, _run

ASKING = """\
import os

import anthropic
import pytest

@pytest.mark.toll(capture=True)
def test_ask(server):
    client = anthropic.Anthropic(base_url=server.url, api_key="sk-never-recorded", max_retries=0)
    client.messages.create(
        model="claude-sonnet-5", max_tokens=100, system="You are the notes assistant.",
        messages=[{"role": "user", "content": os.environ.get("QUESTION", "What changed?")}],
    )
"""


@pytest.mark.slow
def test_a_capture_regression_names_the_part_that_grew(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = _project(pytester, ASKING)
    _run(project, "--toll-update").assert_outcomes(passed=1)
    ledger = (project.path / "toll.yaml").read_text()
    assert "parts: {capture/messages: " in ledger and "capture/system: " in ledger
    monkeypatch.setenv("QUESTION", "What changed in the release notes since last week's rota?")
    grown = _run(project)
    grown.assert_outcomes(failed=1)
    entry = _entries(project)["test_ask"]
    assert entry["outcome"] == "regressed"
    assert entry["message"].startswith("regressed: capture/messages +")
    grown.stdout.fnmatch_lines(["*regressed: capture/messages +* over its pin *"])

    # The same growth against a ledger written before parts were pinned: as before.
    old = "\n".join(
        line.split(", parts:")[0] + "}" if "parts:" in line else line
        for line in ledger.splitlines()
    )
    (project.path / "toll.yaml").write_text(old + "\n")
    _run(project).assert_outcomes(failed=1)
    before = _entries(project)["test_ask"]["message"]
    assert before.startswith("regressed: +") and "capture/" not in before
