"""An MCP server built with the official SDK whose tools return results worth gating.

Run over stdio by the results tests (issue #37 item 1): ``list_notes`` returns a long list
and has no way to page, ``list_pages`` returns the same list one page at a time with a next
cursor, ``save_note`` repeats what it was sent, ``read_log`` returns as many lines as asked.
``wipe`` is never named by a test's ledger: it leaves a file behind if it is ever called, so
a test can prove that only the tools a ledger names are called.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

NOTES = [f"note {index}: what the team decided about topic {index}" for index in range(30)]
WIPED = Path("wiped.txt")


def list_notes(topic: str) -> str:
    """List every note about a topic, newest first."""
    return json.dumps([note for note in NOTES if topic in note or topic == "all"])


def list_pages(topic: str, cursor: str = "") -> str:
    """List the notes about a topic, ten at a time; pass the returned nextCursor for more."""
    start = int(cursor) if cursor.isdigit() else 0
    page = NOTES[start : start + 10]
    following = str(start + 10) if start + 10 < len(NOTES) else None
    return json.dumps({"items": page, "nextCursor": following})


def save_note(title: str, body: str) -> str:
    """Save a note and return it as stored."""
    return f"Saved the note {title!r}:\n{body}"


def read_log(lines: int) -> str:
    """Read the last lines of the service log."""
    return "\n".join(f"2026-12-01T10:{index % 60:02d}:00 GET /notes 200" for index in range(lines))


def wipe() -> str:
    """Delete every note. Never called by the tests: it leaves wiped.txt behind."""
    WIPED.write_text("called\n", encoding="utf-8")
    return "all notes deleted"


def main() -> None:
    server = MCPServer("toll-results-server")
    for function in (list_notes, list_pages, save_note, read_log, wipe):
        server.add_tool(function)
    print("results server ready", file=sys.stderr, flush=True)
    anyio.run(server.run_stdio_async)


if __name__ == "__main__":
    main()
