"""Weigh one source of tool definitions — a stdio server, an HTTP endpoint or a file — with rules.

``weigh_source`` is the single entry point the CLI and the pytest plugin share: source →
listing (``mcp``) → measurement (``weigh``) → judgement (``rules``) → one ``ToolsReport``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_toll.core.envrefs import expand_all
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import Finding, RuleOverrides
from pytest_toll.core.limits import DEFAULT_TIMEOUT, DEFAULT_WINDOW
from pytest_toll.definitions import rules
from pytest_toll.definitions.mcp.http import list_http
from pytest_toll.definitions.mcp.listing import Listing
from pytest_toll.definitions.mcp.stdio import list_stdio
from pytest_toll.definitions.tools import SHAPE_MCP_RESULT, load_tools_file, normalize_tools
from pytest_toll.definitions.weigh import ToolsReport, weigh


def expand_headers(
    headers: Mapping[str, str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Header values with ``${NAME}`` / ``${NAME:-default}`` replaced from the environment.

    So a ledger can say ``Authorization: "Bearer ${MCP_TOKEN}"`` and keep the secret out of
    the file. A missing or empty variable is a usage error naming the header and the
    variable, never the value (the values are remembered as secrets when sent).
    """
    return expand_all({str(k): str(v) for k, v in (headers or {}).items()}, "header", environ)


def expand_env(
    env: Mapping[str, str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str] | None:
    """A server's ``env:`` with ``${NAME}`` / ``${NAME:-default}`` replaced from this
    process's environment.

    A server inherits no secret-like variable (:mod:`pytest_toll.core.secrets`); the ledger
    passes one on purpose as ``OPENAI_API_KEY: ${OPENAI_API_KEY}``, the value staying out of
    the file. A missing or empty variable is a usage error naming the key and the variable.
    """
    return None if env is None else expand_all(env, "env", environ)


def _strings(values: Mapping[str, object] | None, what: str) -> dict[str, str] | None:
    """Scalar values as strings (YAML reads ``PORT: 8080`` as a number); anything else is a
    usage error naming the key, never the value."""
    if values is None:
        return None
    if not isinstance(values, Mapping):
        raise UsageError(f"{what}: must be a mapping of names to strings")
    checked: dict[str, str] = {}
    for key, value in values.items():
        if isinstance(value, bool):
            value = "true" if value else "false"
        if not isinstance(value, str | int | float):
            raise UsageError(f"{what}.{key}: must be a string, not {type(value).__name__}")
        checked[str(key)] = str(value)
    return checked


def _argv(command: Sequence[object]) -> list[str]:
    if isinstance(command, str) or not all(isinstance(arg, str | int | float) for arg in command):
        raise UsageError("command: must be a list of strings (an argv, run without a shell)")
    return [str(arg) for arg in command]


def require_one_source(command: object, url: object, tools_file: object) -> None:
    """A usage error unless exactly one of a command, a url and a tools file is given."""
    given = [
        name for name, value in (("command", command), ("url", url), ("tools", tools_file)) if value
    ]
    if len(given) != 1:
        raise UsageError(
            "give exactly one source of tools: a command, a url or a tools file"
            + (f" (got {' and '.join(given)})" if given else "")
        )


def list_server(
    command: Sequence[object] | None,
    url: str | None,
    *,
    env: Mapping[str, object] | None = None,
    cwd: Path | None = None,
    headers: Mapping[str, object] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> Listing:
    """One ``tools/list`` of a stdio server (``command``, an argv) or an HTTP one (``url``),
    its env and headers checked (headers' ``${VAR}`` expanded and kept secret)."""
    if command is not None:
        return list_stdio(
            _argv(command), env=expand_env(_strings(env, "env")), cwd=cwd, timeout=timeout
        )
    if url is None:
        raise UsageError("a server needs a command or a url")
    return list_http(url, headers=expand_headers(_strings(headers, "headers")), timeout=timeout)


def weigh_source(
    *,
    command: list[str] | None = None,
    url: str | None = None,
    tools_file: Path | None = None,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    check_order: bool = False,
    window: int = DEFAULT_WINDOW,
    settings: RuleOverrides | None = None,
) -> ToolsReport:
    """Weigh the tools of exactly one source and apply the quality rules.

    Raises ``CouldNotJudge`` for every fault (server down, timeout, bad file) and
    ``UsageError`` for a request that makes no sense (no source, two sources).
    """
    require_one_source(command, url, tools_file)
    if check_order and tools_file is not None:
        raise UsageError("--check-order needs a server (a command or a url), not a file")
    if window <= 0:
        raise UsageError(f"window must be a positive number of tokens, not {window}")
    argv = None if command is None else _argv(command)
    env = _strings(env, "env")
    headers = _strings(headers, "headers")
    settings = settings or RuleOverrides()
    found: list[Finding | None] = []
    instructions: str | None = None
    server: dict[str, object] | None = None
    if tools_file is not None:
        tools, shape = load_tools_file(tools_file)
        target = str(tools_file)
    else:

        def listing() -> Listing:
            return list_server(argv, url, env=env, cwd=cwd, headers=headers, timeout=timeout)

        first = listing()
        target = first.target
        tools, _ = normalize_tools(list(first.tools), source=f"{target}: tools/list")
        shape = SHAPE_MCP_RESULT
        instructions = first.instructions
        noise_count, noise_samples = first.noise_count, list(first.noise_samples)
        if check_order:
            second = listing()
            found.append(
                rules.order_finding(
                    [str(tool.get("name")) for tool in first.tools],
                    [str(tool.get("name")) for tool in second.tools],
                    settings,
                )
            )
            noise_count += second.noise_count
            noise_samples.extend(second.noise_samples)
        found.append(rules.noise_finding(noise_count, noise_samples, settings))
        server = {
            "transport": first.transport,
            "protocol_version": first.protocol_version,
            "name": first.server_name,
            "pages": first.pages,
        }
    report = weigh(
        tools, instructions=instructions, target=target, source_shape=shape, window=window
    )
    found.extend(rules.check_tools(tools, report, instructions=instructions, settings=settings))
    return report.with_findings([finding for finding in found if finding is not None], server)
