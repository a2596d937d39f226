"""Each host's fixed cost in a report: its own surface (a ``hosts:`` entry) and the servers'
tool definitions as that host sends them, never summed across hosts; and the words every
renderer uses for it. Pure: the hosts table (:mod:`pytest_toll.core.hosts`) and dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypedDict

from pytest_toll.core.hosts import HOSTS


class HostCostDict(TypedDict):
    """One host's fixed cost: what every request pays (resident), and with the MCP tool
    definitions it defers loaded (on use); equal for a host that sends them eagerly."""

    resident: int
    on_use: int
    #: How the host sends MCP tool definitions (``eager``, ``deferred``).
    mcp_tools: str
    #: The servers' definitions, and whether they cross the host's deferral threshold.
    servers: int
    over_defer_threshold: bool


def costs(measured: Mapping[str, int | None], servers: int, window: int) -> dict[str, HostCostDict]:
    """Per ``hosts:`` entry (name -> measured tokens): what every request of that host pays
    (resident), and with the tool definitions it defers loaded (on use)."""
    found: dict[str, HostCostDict] = {}
    for name, tokens in measured.items():
        if tokens is None:
            continue
        host = HOSTS.get(name)
        mode = host.mcp_tools if host is not None else "eager"
        share = host.mcp_defer_share if host is not None else None
        found[name] = {
            "resident": tokens + (servers if mode == "eager" else 0),
            "on_use": tokens + servers,
            "mcp_tools": mode,
            "servers": servers,
            "over_defer_threshold": share is not None and servers > share * window,
        }
    return found


def fixed_cost_subject(fixed: Mapping[str, Any], kinds_label: str) -> str:
    """What the fixed cost figure is: one host's (``claude-code``, and how it sends MCP
    tool definitions), or without ``hosts:`` entries the paying kinds (``kinds_label``)."""
    host = fixed.get("host")
    hosts: Mapping[str, Any] = fixed.get("hosts") or {}
    if not host or host not in hosts:
        summed = fixed.get("summed_hosts") or []
        if summed:
            # Several hosts' memory in one figure is no host's bill: say so, and the way out.
            return (
                f"{kinds_label}, summed across the memory of {', '.join(summed)}; "
                "a hosts: entry per host gives each host's own"
            )
        return kinds_label
    cost = hosts[host]
    if cost.get("mcp_tools") == "eager" or not cost.get("servers"):
        return f"{host}"
    more = int(cost["on_use"]) - int(cost["resident"])
    return f"{host}; MCP tool definitions deferred: {more:,} more on use"


def other_hosts(fixed: Mapping[str, Any]) -> str:
    """The other hosts' own figures (``codex 1,200 tok, cursor 310 tok``), or ""."""
    host = fixed.get("host")
    hosts: Mapping[str, Any] = fixed.get("hosts") or {}
    others = [
        f"{name} {int(cost['resident']):,} tok" for name, cost in hosts.items() if name != host
    ]
    return ", ".join(others)


def deferral_notes(fixed: Mapping[str, Any]) -> list[str]:
    """A note per host whose deferral threshold the servers' definitions cross."""
    notes = []
    for name, cost in (fixed.get("hosts") or {}).items():
        if cost.get("over_defer_threshold"):
            notes.append(
                f"{name}: the servers' definitions ({int(cost['servers']):,} tok) cross its "
                "deferral threshold: even with ENABLE_TOOL_SEARCH=auto they load on use, "
                "behind tool search, not on every request"
            )
    return notes
