"""The two catalogues a call advertises, as the model sees them.

The skills part is the catalogue a host lists at the start of a session (``name:
description`` lines); the tools part is the tools array serialized the way the model's
provider renders it: Claude's ``<functions>`` block for Anthropic models, the OpenAI
``tools`` array for every other provider.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.serialize import serialize_claude, serialize_openai
from pytest_toll.definitions.tools import Tool, normalize_tools
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.records import metadata_text


def skills_catalogue(skills: object) -> str:
    """The catalogue text a host lists at the start of a session: ``name: description`` lines.

    ``skills`` is catalogue text already, a path to a skill folder or a folder of skills,
    or a sequence of objects / mappings with ``name`` and ``description``.
    """
    if skills is None:
        return ""
    if isinstance(skills, str) and not Path(skills).is_dir():
        return skills
    if isinstance(skills, str | Path):
        report = measure_skills(Path(skills))
        items: Iterable[Any] = report.skills
    elif isinstance(skills, Iterable):
        items = skills
    else:
        raise CouldNotJudge(
            f"skills: expected text, a folder or a list, not {type(skills).__name__}"
        )
    lines = []
    for index, item in enumerate(items):
        name = item.get("name") if isinstance(item, Mapping) else getattr(item, "name", None)
        description = (
            item.get("description")
            if isinstance(item, Mapping)
            else getattr(item, "description", None)
        )
        if not isinstance(name, str) or not isinstance(description, str):
            raise CouldNotJudge(f"skills[{index}]: needs a string name and description")
        lines.append(metadata_text(name, description))
    return "\n".join(lines)


def as_tools(tools: object) -> list[Tool]:
    if tools is None:
        return []
    if isinstance(tools, list | tuple) and tools and all(isinstance(t, Tool) for t in tools):
        return list(tools)
    normalized, _shape = normalize_tools(list(tools) if isinstance(tools, tuple) else tools)
    return normalized


def serialize_tools(tools: Sequence[Tool], provider: str) -> str:
    """The text a model sees for its tools: Claude's block, or the OpenAI array."""
    if not tools:
        return ""
    return serialize_claude(tools) if provider == "anthropic" else serialize_openai(tools)


def anthropic_tool(tool: Tool) -> dict[str, Any]:
    """A tool as the Anthropic API takes it (``name``, ``description``, ``input_schema``)."""
    element: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        element["description"] = tool.description
    element["input_schema"] = dict(tool.parameters)
    return element
