"""A server entry's ``results:``: call the tools it names with its samples, measure each result.

Only tools the entry names are called, with the arguments it gives, on the server the entry
starts or reaches, with the same environment rules (``${VAR}`` expanded, secrets kept back)
and the same timeout as its ``tools/list``. An entry without ``results:`` calls nothing.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.envrefs import expand
from pytest_toll.core.findings import RuleOverrides
from pytest_toll.definitions.mcp.calling import call_server
from pytest_toll.definitions.results import ResultCost, ResultSpec, measure_result, parse_specs
from pytest_toll.definitions.source import _strings, expand_env, expand_headers, weigh_source
from pytest_toll.definitions.weigh import ToolsReport
from pytest_toll.gate.measurement import EntryContext


@dataclass(frozen=True)
class ServerSource:
    """How a server entry is reached, its ``${VAR}`` references expanded as a host does."""

    command: list[Any] | None
    url: str | None
    env: Any
    cwd: Path
    #: Keyword arguments passed on as given (``timeout`` when the entry sets one).
    optional: dict[str, Any]


def resolve_server(name: str, entry: Mapping[str, Any], context: EntryContext) -> ServerSource:
    """The command (split like a shell would, never run by one), url, env and cwd of
    ``servers.<name>``, each ``${VAR}`` / ``${VAR:-default}`` expanded (headers: at sending
    time)."""
    where = f"servers.{name}"
    command = entry.get("command")
    if isinstance(command, str):
        command = shlex.split(command)
    if isinstance(command, list):
        command = [
            expand(part, f"{where}.command") if isinstance(part, str) else part for part in command
        ]
    env = entry.get("env")
    if isinstance(env, Mapping):
        env = {
            key: expand(value, f"{where}.env.{key}") if isinstance(value, str) else value
            for key, value in env.items()
        }
    url = entry.get("url")
    if isinstance(url, str):
        url = expand(url, f"{where}.url")
    cwd = context.resolve(entry["cwd"]) if entry.get("cwd") else context.root
    optional: dict[str, Any] = {}
    if entry.get("timeout") is not None:
        optional["timeout"] = float(entry["timeout"])
    return ServerSource(command, url, env, cwd, optional)


def weigh_server(
    name: str, entry: Mapping[str, Any], context: EntryContext, **options: Any
) -> tuple[ToolsReport, ServerSource]:
    """``servers.<name>``'s tools weighed from what the entry names (a tools file, a command
    or a URL), with ``options`` (settings, check_order) passed to the weigher; the resolved
    source rides along for callers that go on to call its tools."""
    source = resolve_server(name, entry, context)
    tools_file = entry.get("tools_file")
    report = weigh_source(
        command=source.command,
        url=source.url,
        tools_file=None if tools_file is None else context.resolve(str(tools_file)),
        env=source.env,
        cwd=source.cwd,
        headers=entry.get("headers"),
        window=context.window,
        **options,
        **source.optional,
    )
    return report, source


def measure_results_of(
    name: str,
    entry: Mapping[str, Any],
    context: EntryContext,
    settings: RuleOverrides,
    source: ServerSource,
    specs: Sequence[ResultSpec] | None = None,
) -> list[ResultCost]:
    """Each ``results:`` row of ``servers.<name>`` (or ``specs``) measured; [] when none."""
    if specs is None:
        specs = parse_specs(entry.get("results"), f"servers.{name}.results")
    if not specs:
        return []
    # Checked and expanded exactly as for its tools/list (definitions.source.list_server).
    environment = expand_env(_strings(source.env, "env"))
    headers = entry.get("headers")
    sent_headers = expand_headers(_strings(headers, "headers")) if headers else None
    called = call_server(
        [(spec.tool, spec.samples) for spec in specs],
        command=None if source.command is None else [str(part) for part in source.command],
        url=source.url,
        env=environment,
        cwd=source.cwd,
        headers=sent_headers,
        **source.optional,
    )
    return [
        measure_result(spec, answer, window=context.window, settings=settings)
        for spec, answer in zip(specs, called, strict=True)
    ]
