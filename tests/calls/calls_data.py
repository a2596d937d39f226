"""What the call tests measure: tools, a system prompt, skills, messages, and the
stage counts built by hand from the documented rendering."""

from __future__ import annotations

from typing import Any

from pytest_toll.core import tokens
from pytest_toll.definitions.serialize import serialize_claude, serialize_openai
from pytest_toll.definitions.tools import normalize_tools

count = tokens.count

TOOLS: list[dict[str, Any]] = [
    {
        "name": "read_file",
        "description": "Read a file and return its text. Use it to look at source code.",
        "inputSchema": {
            "type": "object",
            "title": "ReadFileArgs",
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "properties": {
                "path": {
                    "type": "string",
                    "title": "Path",
                    "description": "  The file\n  to read. ",
                },
                "title": {"type": "string", "description": "A property named title stays."},
            },
            "required": ["path"],
        },
    },
    {
        "name": "write_file",
        "description": "Write text to a file, replacing it. Returns the bytes written.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        },
    },
]
SYSTEM = "You are a careful coding assistant."
SKILLS = [{"name": "pdf", "description": "Fill and read PDF forms. Use it for any .pdf file."}]
MESSAGES = [
    {"role": "user", "content": "Show me setup.py"},
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Reading it."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "setup.py"}},
        ],
    },
    {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "print('hi')"}],
    },
]
MESSAGES_TEXT = (
    'Show me setup.py\n\nReading it.\n{"name":"read_file","input":{"path":"setup.py"}}'
    "\n\nprint('hi')"
)


def stages(provider: str, tools: list[dict[str, Any]] = TOOLS) -> list[int]:
    """The four cumulative stage counts, built by hand from the documented rendering."""
    normalized, _ = normalize_tools(tools)
    tools_text = (
        serialize_claude(normalized) if provider == "anthropic" else serialize_openai(normalized)
    )
    catalogue = "pdf: Fill and read PDF forms. Use it for any .pdf file."
    overhead = 4 * 3
    return [
        count(MESSAGES_TEXT) + overhead,
        count(f"{SYSTEM}\n\n{MESSAGES_TEXT}") + overhead,
        count(f"{catalogue}\n\n{SYSTEM}\n\n{MESSAGES_TEXT}") + overhead,
        count(f"{catalogue}\n\n{SYSTEM}\n\n{tools_text}\n\n{MESSAGES_TEXT}") + overhead,
    ]
