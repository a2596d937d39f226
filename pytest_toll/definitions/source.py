"""Weigh one source of tool definitions — a stdio server, an HTTP endpoint or a file — with rules.

``weigh_source`` is the single entry point the CLI and the pytest plugin share: source →
listing → measurement (``tools.weigh``) → judgement (``rules``) → one ``ToolsReport``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import Finding, RuleSettings
from pytest_toll.core.limits import DEFAULT_TIMEOUT, DEFAULT_WINDOW
from pytest_toll.definitions.tools import SHAPE_MCP_RESULT, ToolsReport

_ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_headers(
    headers: Mapping[str, str] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Header values with ``${NAME}`` replaced from the environment.

    So a ledger can say ``Authorization: "Bearer ${MCP_TOKEN}"`` and keep the secret out of
    the file. A missing variable is a usage error naming the header and the variable, never
    the value.
    """
    environ = os.environ if environ is None else environ
    expanded: dict[str, str] = {}
    for name, value in (headers or {}).items():

        def substitute(match: re.Match[str], header: str = name) -> str:
            variable = match.group(1)
            if variable not in environ:
                raise UsageError(f"header {header}: environment variable {variable} is not set")
            return environ[variable]

        expanded[name] = _ENV_REFERENCE.sub(substitute, str(value))
    return expanded


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
    settings: RuleSettings | None = None,
) -> ToolsReport:
    """Weigh the tools of exactly one source and apply the quality rules.

    Raises ``CouldNotJudge`` for every fault (server down, timeout, bad file) and
    ``UsageError`` for a request that makes no sense (no source, two sources).
    """
    from pytest_toll.definitions import mcp, rules
    from pytest_toll.definitions.tools import load_tools_file, normalize_tools, weigh

    given = [
        name for name, value in (("command", command), ("url", url), ("tools", tools_file)) if value
    ]
    if len(given) != 1:
        raise UsageError(
            "give exactly one source of tools: a command, a url or a tools file"
            + (f" (got {' and '.join(given)})" if given else "")
        )
    if check_order and tools_file is not None:
        raise UsageError("--check-order needs a server (a command or a url), not a file")
    if window <= 0:
        raise UsageError(f"window must be a positive number of tokens, not {window}")
    argv = None if command is None else _argv(command)
    env = _strings(env, "env")
    headers = _strings(headers, "headers")
    settings = settings or RuleSettings()
    found: list[Finding | None] = []
    instructions: str | None = None
    server: dict[str, object] | None = None
    if tools_file is not None:
        tools, shape = load_tools_file(tools_file)
        target = str(tools_file)
    else:

        def listing() -> mcp.Listing:
            if argv is not None:
                return mcp.list_stdio(argv, env=env, cwd=cwd, timeout=timeout)
            assert url is not None
            return mcp.list_http(url, headers=expand_headers(headers), timeout=timeout)

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


# --- diff -------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolChange:
    name: str
    change: str  # added | removed | grown | shrunk
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "change": self.change,
            "before": self.before,
            "after": self.after,
            "delta": self.delta,
        }


@dataclass(frozen=True)
class ToolsDiff:
    """Two tool reports compared on the primary metric (claude total and per-tool lines)."""

    before_target: str
    after_target: str
    tokenizer: str
    before: int
    after: int
    changes: tuple[ToolChange, ...]
    unchanged: int

    @property
    def delta(self) -> int:
        return self.after - self.before

    @property
    def increase_percent(self) -> float | None:
        """The signed change in percent of ``before``; None when before was 0."""
        if self.before == 0:
            return 0.0 if self.after == 0 else None
        return self.delta / self.before * 100

    def as_dict(self) -> dict[str, Any]:
        percent = self.increase_percent
        return {
            "kind": "tools-diff",
            "before_target": self.before_target,
            "after_target": self.after_target,
            "tokenizer": self.tokenizer,
            "total": {
                "before": self.before,
                "after": self.after,
                "delta": self.delta,
                "percent": None if percent is None else round(percent, 2),
            },
            "changes": [change.as_dict() for change in self.changes],
            "unchanged": self.unchanged,
        }

    def render(self) -> str:
        percent = self.increase_percent
        shown = "new" if percent is None else f"{percent:+.1f}%"
        lines = [
            f"tools total (claude, {self.tokenizer}): {self.before:,} → {self.after:,} "
            f"({self.delta:+,} tok, {shown})"
        ]
        if self.changes:
            width = max(len(f"{abs(c.delta):,}") for c in self.changes) + 1
            for change in self.changes:
                lines.append(
                    f"  {change.delta:>+{width},}  {change.change:<7}  {change.name}  "
                    f"({change.before:,} → {change.after:,})"
                )
        lines.append(f"  {self.unchanged} tool(s) unchanged")
        return "\n".join(lines)


def _tool_rows(report: Mapping[str, Any], name: str) -> dict[str, int]:
    rows = report.get("tools")
    if not isinstance(rows, list):
        raise CouldNotJudge(f"{name}: 'tools' must be an array of tool rows")
    found: dict[str, int] = {}
    for index, row in enumerate(rows):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("name"), str)
            or not isinstance(row.get("tokens"), int)
        ):
            raise CouldNotJudge(
                f"{name}: tools[{index}] needs a string 'name' and integer 'tokens'"
            )
        key = row["name"]
        # A name listed twice keeps both rows apart rather than summing them silently.
        suffix = 2
        while key in found:
            key, suffix = f"{row['name']}#{suffix}", suffix + 1
        found[key] = row["tokens"]
    return found


def _claude_total(report: Mapping[str, Any], name: str) -> int:
    totals = report.get("totals")
    total = totals.get("claude") if isinstance(totals, dict) else None
    if not isinstance(total, int):
        raise CouldNotJudge(f"{name}: totals.claude must be an integer")
    return total


def diff_reports(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    before_name: str = "before",
    after_name: str = "after",
) -> ToolsDiff:
    """Compare two ``toll weigh --json`` reports: total delta and per-tool changes.

    Changes are sorted by the size of the change (largest first), then by name.
    """
    for report, name in ((before, before_name), (after, after_name)):
        if report.get("kind") != "tools":
            raise CouldNotJudge(f"{name}: not a tools report (kind {report.get('kind')!r})")
    tokenizer = str(before.get("tokenizer"))
    if after.get("tokenizer") != tokenizer:
        raise CouldNotJudge(
            f"{before_name} was counted with {tokenizer}, {after_name} with "
            f"{after.get('tokenizer')}; the counts are not comparable"
        )
    old = _tool_rows(before, before_name)
    new = _tool_rows(after, after_name)
    changes: list[ToolChange] = []
    unchanged = 0
    for name in [*old, *(n for n in new if n not in old)]:
        if name not in new:
            changes.append(ToolChange(name, "removed", old[name], 0))
        elif name not in old:
            changes.append(ToolChange(name, "added", 0, new[name]))
        elif new[name] > old[name]:
            changes.append(ToolChange(name, "grown", old[name], new[name]))
        elif new[name] < old[name]:
            changes.append(ToolChange(name, "shrunk", old[name], new[name]))
        else:
            unchanged += 1
    changes.sort(key=lambda change: (-abs(change.delta), change.name))
    return ToolsDiff(
        before_target=str(before.get("target", "")),
        after_target=str(after.get("target", "")),
        tokenizer=tokenizer,
        before=_claude_total(before, before_name),
        after=_claude_total(after, after_name),
        changes=tuple(changes),
        unchanged=unchanged,
    )
