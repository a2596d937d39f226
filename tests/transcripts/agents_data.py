"""Paths of the other agents' fixtures (tests/fixtures/agents, written by its build.py), and
OpenCode's SQLite database, built as OpenCode lays it out."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

AGENTS = Path(__file__).parents[1] / "fixtures" / "agents"
GEMINI = AGENTS / "gemini" / "tmp"
GEMINI_JSONL = GEMINI / "5f0c9a" / "chats" / "session-2026-11-20T10-00-g1.jsonl"
GEMINI_REWRITTEN = GEMINI / "5f0c9a" / "chats" / "session-2026-11-21T09-00-g2.jsonl"
GEMINI_JSON = GEMINI / "77aa01" / "chats" / "session-2026-10-01T08-00-g0.json"
GEMINI_CHECKPOINT = GEMINI / "77aa01" / "checkpoint-review.json"
ANTIGRAVITY = (
    AGENTS
    / "antigravity"
    / "brain"
    / "c0ffee-1"
    / ".system_generated"
    / "logs"
    / "transcript.jsonl"
)
OPENCODE_TREE = AGENTS / "opencode" / "storage" / "session" / "prj_1" / "ses_1.json"
OPENCODE_EXPORT = AGENTS / "opencode" / "export" / "ses_9.json"
COPILOT = AGENTS / "copilot" / "session-state" / "cp-1" / "events.jsonl"
QWEN = AGENTS / "qwen" / "projects" / "-w" / "chats" / "qw-1.jsonl"
CLINE_TASKS = AGENTS / "cline" / "globalStorage" / "saoudrizwan.claude-dev" / "tasks"
CLINE_NATIVE = CLINE_TASKS / "1763900000000" / "api_conversation_history.json"
CLINE_XML = CLINE_TASKS / "1700000000000" / "api_conversation_history.json"
CLINE_UI_ONLY = CLINE_TASKS / "1763950000000" / "ui_messages.json"
OPENHANDS_EVENTS = AGENTS / "openhands" / "sessions" / "oh-1" / "events" / "0.json"
OPENHANDS_OUTPUT = AGENTS / "openhands" / "evaluation" / "output.jsonl"
OPENHANDS_REAL = AGENTS / "openhands" / "trajectories" / "basic.json"
CURSOR = AGENTS / "cursor" / "projects" / "w" / "agent-transcripts" / "cu-1.jsonl"


def opencode_database(path: Path) -> Path:
    """An ``opencode.db`` holding one session with the tables OpenCode's migrations create."""
    connection = sqlite3.connect(path)
    connection.executescript(
        """
        CREATE TABLE session (id text PRIMARY KEY, project_id text NOT NULL, parent_id text,
          slug text, directory text, title text, version text,
          time_created integer NOT NULL, time_updated integer NOT NULL);
        CREATE TABLE message (id text PRIMARY KEY, session_id text NOT NULL,
          time_created integer NOT NULL, time_updated integer NOT NULL, data text NOT NULL);
        CREATE TABLE part (id text PRIMARY KEY, message_id text NOT NULL,
          session_id text NOT NULL, time_created integer NOT NULL,
          time_updated integer NOT NULL, data text NOT NULL);
        """
    )
    connection.execute(
        "insert into session values ('ses_db', 'prj_1', null, 'db', '/w', 'DB', '1.0', 1, 2)"
    )

    def message(message_id: str, created: int, data: dict[str, Any]) -> None:
        connection.execute(
            "insert into message values (?, 'ses_db', ?, ?, ?)",
            (message_id, created, created, json.dumps(data)),
        )

    def part(part_id: str, message_id: str, created: int, data: dict[str, Any]) -> None:
        connection.execute(
            "insert into part values (?, ?, 'ses_db', ?, ?, ?)",
            (part_id, message_id, created, created, json.dumps(data)),
        )

    message("msg_d1", 10, {"role": "user", "sessionID": "ses_db"})
    part("prt_d1", "msg_d1", 10, {"type": "text", "text": "grep for TODO"})
    message(
        "msg_d2",
        20,
        {"role": "assistant", "modelID": "claude-sonnet-4-5",
         "tokens": {"input": 5, "output": 30, "reasoning": 0, "cache": {"read": 900, "write": 100}}},
    )  # fmt: skip
    part(
        "prt_d2",
        "msg_d2",
        21,
        {"type": "tool", "callID": "toolu_db1", "tool": "grep",
         "state": {"status": "completed", "input": {"pattern": "TODO"}, "output": "a.py:3: TODO"}},
    )  # fmt: skip
    part(
        "prt_d3",
        "msg_d2",
        22,
        {"type": "tool", "callID": "toolu_db2", "tool": "bash",
         "state": {"status": "error", "input": {"command": "make"}, "error": "make: no rule"}},
    )  # fmt: skip
    connection.commit()
    connection.close()
    return path
