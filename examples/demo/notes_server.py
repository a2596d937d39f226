"""A small MCP server for a team's notes, speaking the stdio transport with the stdlib only.

The demo's subject: pytest-toll starts it (``python3 notes_server.py``), reads what
``tools/list`` advertises and holds that to the pins in ``toll.yaml``. It is a real server,
so ``tools/call`` works too, on an in-memory notebook.

Transport (MCP stdio): one JSON-RPC 2.0 message per line on stdin/stdout, UTF-8, no embedded
newlines. Anything that is not protocol goes to stderr, because a client reads every stdout
line as a message.
"""

from __future__ import annotations

import json
import sys
from typing import Any

SERVER_NAME = "notes"
SERVER_VERSION = "1.4.0"
# Newest first; a client asking for one of these gets it back, any other gets the newest.
PROTOCOL_VERSIONS = ("2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")

INSTRUCTIONS = (
    "Notes are short Markdown documents shared by the team. Search before creating, so the "
    "same topic is not written twice."
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "search_notes",
        "title": "Search notes",
        "description": (
            "Search the team's notes by words in their title or body. Use when the user asks "
            "what the team already knows about a topic, before creating a note. Returns up to "
            "`limit` matches, best first, each with its id, title and a one-line excerpt."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Words to look for; all must match."},
                "tag": {"type": "string", "description": "Only notes carrying this tag."},
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "default": 10,
                    "description": "Most matches to return.",
                },
            },
            "required": ["query"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "read_note",
        "title": "Read a note",
        "description": (
            "Read one note in full. Use after search_notes when an excerpt is not enough. "
            "Returns the note's Markdown body, its tags and when it was last edited."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "note_id": {"type": "string", "description": "The id search_notes returned."},
            },
            "required": ["note_id"],
        },
        "annotations": {"readOnlyHint": True, "openWorldHint": False},
    },
    {
        "name": "create_note",
        "title": "Create a note",
        "description": (
            "Create a note. Use when the user asks to record a decision or a how-to that no "
            "existing note covers. Returns the new note's id."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "A short title, at most 80 characters."},
                "body": {"type": "string", "description": "The note in Markdown."},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "description": "Topic tags such as `deploy` or `oncall`.",
                },
            },
            "required": ["title", "body"],
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": False},
    },
    {
        "name": "delete_note",
        "title": "Delete a note",
        "description": (
            "Delete a note for good. Use only when the user explicitly asks to remove it. "
            "Returns the id of the deleted note."
        ),
        "inputSchema": {
            "type": "object",
            "properties": {
                "note_id": {"type": "string", "description": "The id of the note to delete."},
            },
            "required": ["note_id"],
        },
        "annotations": {"readOnlyHint": False, "destructiveHint": True, "openWorldHint": False},
    },
]


class ToolError(Exception):
    """A tool ran but failed; reported to the model as ``isError`` content, not a protocol error."""


class Notebook:
    def __init__(self) -> None:
        self.notes: dict[str, dict[str, Any]] = {
            "n1": {
                "title": "Deploying the API",
                "body": "Merge to main, wait for the canary, then run `make promote`.",
                "tags": ["deploy"],
            },
            "n2": {
                "title": "Paging rota",
                "body": "The on-call engineer changes every Monday at 10:00 UTC.",
                "tags": ["oncall"],
            },
        }
        self.next_id = 3

    def call(self, name: str, arguments: dict[str, Any]) -> str:
        if name == "search_notes":
            words = str(arguments.get("query", "")).lower().split()
            tag = arguments.get("tag")
            limit = int(arguments.get("limit", 10))
            hits = [
                f"{note_id}: {note['title']} — {note['body'][:60]}"
                for note_id, note in self.notes.items()
                if all(word in (note["title"] + " " + note["body"]).lower() for word in words)
                and (tag is None or tag in note["tags"])
            ]
            return "\n".join(hits[:limit]) or "no notes match"
        if name in ("read_note", "delete_note"):
            note_id = str(arguments.get("note_id", ""))
            if note_id not in self.notes:
                raise ToolError(f"no note with id {note_id!r}")
            if name == "delete_note":
                del self.notes[note_id]
                return note_id
            note = self.notes[note_id]
            return f"# {note['title']}\n\n{note['body']}\n\ntags: {', '.join(note['tags'])}"
        if name == "create_note":
            if not arguments.get("title") or not arguments.get("body"):
                raise ToolError("a note needs a title and a body")
            note_id = f"n{self.next_id}"
            self.next_id += 1
            self.notes[note_id] = {
                "title": str(arguments["title"]),
                "body": str(arguments["body"]),
                "tags": [str(tag) for tag in arguments.get("tags", [])],
            }
            return note_id
        raise KeyError(name)


def handle(message: dict[str, Any], notebook: Notebook) -> dict[str, Any] | None:
    """The response to one message, or None for a notification."""
    method = message.get("method")
    params = message.get("params") or {}
    if "id" not in message:
        return None  # notifications/initialized and friends need no answer
    request_id = message["id"]

    def result(value: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "result": value}

    def error(code: int, text: str) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": text}}

    if method == "initialize":
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return result(
            {
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": False}},
                "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
                "instructions": INSTRUCTIONS,
            }
        )
    if method == "ping":
        return result({})
    if method == "tools/list":
        return result({"tools": TOOLS})
    if method == "tools/call":
        name = params.get("name")
        try:
            text = notebook.call(str(name), params.get("arguments") or {})
        except KeyError:
            return error(-32602, f"unknown tool: {name}")
        except ToolError as failure:
            return result({"content": [{"type": "text", "text": str(failure)}], "isError": True})
        return result({"content": [{"type": "text", "text": text}], "isError": False})
    return error(-32601, f"method not found: {method}")


def serve() -> None:
    notebook = Notebook()
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            message = json.loads(line)
        except ValueError:
            reply: dict[str, Any] | None = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "parse error"},
            }
        else:
            if not isinstance(message, dict):
                reply = {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32600, "message": "invalid request"},
                }
            else:
                reply = handle(message, notebook)
        if reply is not None:
            sys.stdout.write(json.dumps(reply, ensure_ascii=False) + "\n")
            sys.stdout.flush()
    print(f"{SERVER_NAME}: stdin closed, exiting", file=sys.stderr)


if __name__ == "__main__":
    serve()
