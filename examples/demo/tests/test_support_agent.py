"""Per-test budgets: what the notes assistant sends on every request, measured in the test.

The ``toll`` fixture counts what a test hands it (o200k tokens) and records it under the
test's node id; ``@pytest.mark.toll(budget=N)`` fails the test when the total exceeds N, and
toll.yaml's ``tests:`` section pins each total so it can only ratchet down.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

DEMO = Path(__file__).resolve().parent.parent

SYSTEM_PROMPT = """\
You are the notes assistant for a small engineering team. Answer from the team's notes when
you can, and say which note you used. Search before creating a note, so one topic is not
written twice. Never delete a note unless the user asks for exactly that note to go.
"""


@pytest.mark.toll(budget=2500)
def test_every_request_fits_its_budget(toll: Any) -> None:
    """System prompt + the notes server's tools + the skills catalogue, as sent each turn."""
    toll.text("system prompt", SYSTEM_PROMPT)
    report = toll.tools({"command": [sys.executable, str(DEMO / "notes_server.py")]}, name="notes")
    toll.skills(DEMO / "skills")
    assert [tool.name for tool in report.tools] == [
        "search_notes",
        "read_note",
        "create_note",
        "delete_note",
    ]


@pytest.mark.toll(budget=200)
def test_the_greeting_stays_short(toll: Any) -> None:
    greeting = "Hi! I can search, read and write the team's notes. What do you need?"
    assert toll.text("greeting", greeting) == 18
