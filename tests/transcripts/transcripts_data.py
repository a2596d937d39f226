"""Fixture paths and texts the transcript tests share (imported by name: tests are not a package)."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_toll.core.tokens import count

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
MAIN = FIXTURES / "claude" / "repo" / "sess-main.jsonl"
A_PY = "def answer():\n    return 42\n"
LOG = "abc123 first commit\ndef456 second commit\n"


def call_tokens(name: str, **arguments: object) -> int:
    """The o200k count of a tool call as a transcript's text shows it: name + JSON arguments."""
    return count(name + json.dumps(arguments, ensure_ascii=False))
