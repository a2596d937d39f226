"""A call described by files: a request file read, and a ledger ``calls:`` entry measured."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_toll.calls.measuring import COMPACT, FULL, CallReport, measure
from pytest_toll.calls.request_options import settings_in
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.models import Catalogue, load_models
from pytest_toll.core.textio import parse_json, read_text
from pytest_toll.definitions.tools import load_tools_file


def load_request_file(path: str | Path) -> tuple[object, Any, object, dict[str, Any]]:
    """Messages from a JSON file: a messages array, or a request body whose ``messages``,
    ``system`` and ``tools`` are all used. Returns ``(messages, system, tools, settings)``,
    ``settings`` being what else the body carries (``request_options.SETTINGS``)."""
    name = str(path)
    data = parse_json(read_text(path), name)
    if isinstance(data, dict):
        if "messages" not in data:
            raise CouldNotJudge(f"{name}: an object without a 'messages' array")
        system = data.get("system")
        if system is not None and not isinstance(system, str | list):
            raise CouldNotJudge(f"{name}: 'system' must be a string or a list of text blocks")
        return data["messages"], system, data.get("tools"), settings_in(data)
    return data, None, None, {}


ENTRY_KEYS = ("model", "system", "messages", "tools", "skills", "tool_schemas")


def measure_entry(
    entry: Mapping[str, Any],
    *,
    root: str | Path,
    where: str,
    default_model: str | None = None,
    catalogue: Catalogue | None = None,
) -> CallReport:
    """Measure a call described in toll.yaml (``calls: {name: {...}}``), files under ``root``.

    Keys (other keys, such as ``budget`` and ``pin``, belong to the ledger and are ignored)::

        model: claude-sonnet-5        # or the ledger's top-level model (default_model)
        system: prompts/system.md     # a text file
        messages: fixtures/chat.json  # a messages array or a whole request body
        tools: tools.json             # a tools array (MCP, OpenAI or Anthropic shape)
        skills: skills/               # a skill folder or a folder of skills
        tool_schemas: compact         # or full (the default)

    Always an o200k estimate (ledgers grade deterministic counts). A bad key is a
    ``UsageError`` naming ``where`` and the key; an unreadable file is ``CouldNotJudge``
    naming the file.
    """
    base = Path(root)

    def path(key: str) -> Path | None:
        value = entry.get(key)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            raise UsageError(f"{where}.{key}: must be a path (a string), not {value!r}")
        return base / value

    model = entry.get("model", default_model)
    if not isinstance(model, str) or not model:
        raise UsageError(f"{where}.model: name the model (or set the ledger's top-level model)")
    try:
        # A gated entry is reviewed intent: its model decides how the tools are shown, so a
        # misspelt name is an error here (toll measure and toll.call measure any name).
        (catalogue or load_models()).get(model)
    except UsageError as error:
        raise UsageError(f"{where}.model: {error}") from None
    tool_schemas = entry.get("tool_schemas", FULL)
    if tool_schemas not in (FULL, COMPACT):
        raise UsageError(f"{where}.tool_schemas: must be full or compact, not {tool_schemas!r}")
    messages: object = None
    system: Any = None
    tools: object = None
    settings: dict[str, Any] = {}
    messages_path = path("messages")
    if messages_path is not None:
        messages, system, tools, settings = load_request_file(messages_path)
    system_path = path("system")
    if system_path is not None:
        system = read_text(system_path)
    tools_path = path("tools")
    if tools_path is not None:
        tools = load_tools_file(tools_path)[0]
    skills_path = path("skills")
    try:
        return measure(
            model,
            system,
            messages,
            tools,
            skills=str(skills_path) if skills_path is not None else None,
            tool_schemas=tool_schemas,
            catalogue=catalogue,
            request_settings=settings,
        )
    except UsageError as error:
        raise UsageError(f"{where}.model: {error}") from None
    except CouldNotJudge as error:
        text = str(error)
        if messages_path is not None and text.startswith(("messages", "system", "tools")):
            raise CouldNotJudge(f"{messages_path}: {text}") from None
        raise
