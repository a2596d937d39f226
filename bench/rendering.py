"""The claude line against efaimo's minified line, on the demo's tools.

    python bench/rendering.py [-- ARGV of a stdio MCP server]

Lists the tools of a stdio server (by default examples/demo's notes server), renders them
as our claude block (", " / ": " spacing, keys sorted at every level) and as the same block
with each line minified (efaimo's form: no spaces after ``,`` and ``:``, source key order),
and prints both o200k counts and how much lower the minified form reads.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pytest_toll.core.tokens import O200kCounter
from pytest_toll.definitions.mcp.stdio import list_stdio
from pytest_toll.definitions.serialize import serialize_claude, wrap_claude_lines
from pytest_toll.definitions.tools import Tool, normalize_tools

DEMO = Path(__file__).resolve().parent.parent / "examples" / "demo"
_minified = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def minified_line(tool: Tool) -> str:
    described = {} if tool.description is None else {"description": tool.description}
    return _minified({**described, "name": tool.name, "parameters": tool.parameters})


def main(argv: list[str]) -> None:
    command = argv[argv.index("--") + 1 :] if "--" in argv else [sys.executable, "notes_server.py"]
    cwd = None if "--" in argv else DEMO
    tools, _ = normalize_tools(list(list_stdio(command, cwd=cwd).tools))
    counter = O200kCounter()
    claude = counter.count(serialize_claude(tools))
    minified = counter.count(wrap_claude_lines([minified_line(tool) for tool in tools]))
    print(
        f"{len(tools)} tools: claude {claude} o200k, minified {minified} o200k "
        f"({1 - minified / claude:.1%} lower)"
    )


if __name__ == "__main__":
    main(sys.argv[1:])
