"""Pricing a report: the fixed-cost change over servers and skills, and the USD text."""

from __future__ import annotations

from pytest_toll.core.models import Model, Prices, Scale, Tier
from pytest_toll.report.data import EntryResult, PartResult, SessionReport
from pytest_toll.report.markdown import usd
from pytest_toll.report.pricing import price_report


def report() -> SessionReport:
    server = EntryResult("servers", "files", "toll.yaml::servers::files", 3, 500, "o200k", 450,
                         None, "regressed")  # fmt: skip
    skill = EntryResult(
        "skills", "pdf", "toll.yaml::skills::pdf", 9, 1200, "o200k", 1300, None, "improved",
        parts=[PartResult("metadata", 80, 100), PartResult("body", 1100, 1180)],
    )  # fmt: skip
    unpinned = EntryResult("servers", "new", "toll.yaml::servers::new", 12, 70, "o200k", None,
                           None, "new")  # fmt: skip
    return SessionReport(ledger="toll.yaml", window=200_000, tolerance=0,
                         entries=[server, skill, unpinned])  # fmt: skip


def test_the_change_counts_server_totals_and_skill_metadata_with_a_pin() -> None:
    priced = report()
    # Fixed cost: 500 + 80 + 70; change: (500 - 450) + (80 - 100); the new server has no pin.
    assert priced.fixed_cost == 650
    assert priced.fixed_cost_change == 30
    model = Model("m", "anthropic", prices=Prices(input=3.0), scale=Scale(1.5, True, "test"),
                  tiers=(Tier(900, Prices(input=6.0)),))  # fmt: skip
    pricing = price_report(priced, model)
    assert pricing is not None
    # 650 × 1.5 = 975 tokens: at or above 900, the tier's $6 applies.
    assert pricing["fixed_cost_tokens"] == 975
    assert pricing["input_usd_per_mtok"] == 6.0
    assert pricing["fixed_cost_usd_per_1000"] == 975 * 6 / 1000
    assert pricing["change_tokens"] == 45
    assert pricing["change_usd_per_1000"] == 45 * 6 / 1000
    assert pricing["method"] == "o200k×1.50"


def test_no_input_price_is_no_pricing_and_no_pin_is_no_change() -> None:
    assert price_report(report(), Model("m", "openai", prices=Prices(output=1.0))) is None
    unpinned = SessionReport(ledger="toll.yaml", window=1, tolerance=0, entries=[
        EntryResult("servers", "a", "toll.yaml::servers::a", 3, 10, "o200k", None, None, "new")
    ])  # fmt: skip
    pricing = price_report(unpinned, Model("m", "openai", prices=Prices(input=1.0)))
    assert pricing is not None
    assert pricing["method"] == "o200k"
    assert pricing["change_tokens"] is None
    assert pricing["change_usd_per_1000"] is None


def test_usd_text() -> None:
    assert usd(1.0349) == "$1.03"
    assert usd(0.0043) == "$0.0043"
    assert usd(0.0) == "$0.00"
    assert usd(1234.5) == "$1,234.50"
    assert usd(0.05, sign=True) == "+$0.05"
    assert usd(-0.000134, sign=True) == "-$0.00013"
    assert usd(0.0, sign=True) == "$0.00"


def hosts_report(servers: int = 500) -> SessionReport:
    """Two hosts' bills and one server: Claude Code defers the server's tools, Codex not."""
    entries = [
        EntryResult("servers", "files", "toll.yaml::servers::files", 3, servers, "o200k", servers,
                    None, "passed"),
        EntryResult("hosts", "claude-code", "toll.yaml::hosts::claude-code", 9, 2264, "o200k",
                    2200, None, "regressed", parts=[PartResult("memory/CLAUDE.md", 2264, 2200)]),
        EntryResult("hosts", "codex", "toll.yaml::hosts::codex", 14, 1200, "o200k", 1200, None,
                    "passed", parts=[PartResult("memory/AGENTS.md", 1200, 1200)]),
        EntryResult("memory", "claude", "toll.yaml::memory::claude", 20, 2264, "o200k", 2264,
                    None, "passed"),
    ]  # fmt: skip
    return SessionReport(ledger="toll.yaml", window=200_000, tolerance=0, entries=entries)


def test_with_hosts_entries_the_fixed_cost_is_one_hosts_never_a_sum() -> None:
    from pytest_toll.report.badge import badge_for
    from pytest_toll.report.markdown import fixed_cost_line, pricing_line

    report = hosts_report()
    costs = report.host_costs
    # Claude Code defers MCP tools: resident is its own surface; on use adds the server.
    assert costs["claude-code"] == {"resident": 2264, "on_use": 2764, "mcp_tools": "deferred",
                                    "servers": 500, "over_defer_threshold": False}  # fmt: skip
    assert costs["codex"]["resident"] == costs["codex"]["on_use"] == 1700  # eager
    assert report.shown_host == "claude-code" and report.fixed_cost == 2264
    assert report.fixed_cost_change == 64  # the shown host's own entry; its servers deferred
    data = report.as_dict()
    assert data["fixed_cost"]["host"] == "claude-code"
    line = fixed_cost_line(data)
    assert line.startswith("Fixed cost per request (claude-code; MCP tool definitions "
                           "deferred: 500 more on use): **2,264 tok (o200k)**")  # fmt: skip
    assert "other hosts, each its own: codex 1,700 tok" in line
    assert badge_for(data).label == "context cost (claude-code)"
    pricing = price_report(report, Model("m", "anthropic", prices=Prices(input=3.0)))
    assert pricing is not None and pricing["fixed_cost_tokens"] == 2264
    assert pricing["hosts"] == {"claude-code": 2264 * 3 / 1000, "codex": 1700 * 3 / 1000}
    data["pricing"] = pricing
    assert "(claude-code)" in str(pricing_line(data)) and "other hosts: codex $5.10" in str(
        pricing_line(data)
    )


def test_servers_past_the_deferral_threshold_are_a_note() -> None:
    from pytest_toll.report.terminal import window_line

    report = hosts_report(servers=30_000)  # 15% of a 200,000 window, over Claude Code's 10%
    assert report.host_costs["claude-code"]["over_defer_threshold"]
    assert "note: claude-code: the servers' definitions (30,000 tok) cross its deferral " in (
        window_line(report)
    )


def test_without_hosts_entries_several_hosts_memory_is_said_to_be_a_sum() -> None:
    """No hosts: entries, memory of two hosts: the figure adds both, so every renderer says it
    is a sum across them and how to get each host's own; one host's memory is no sum."""
    from pytest_toll.report.markdown import fixed_cost_line
    from pytest_toll.report.terminal import window_line

    def memory(name: str, tokens: int) -> EntryResult:
        return EntryResult("memory", name, f"toll.yaml::memory::{name}", 5, tokens, "o200k",
                           tokens, None, "passed", parts=[PartResult("CLAUDE.md", tokens, tokens)])  # fmt: skip

    both = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0,
                         entries=[*report().entries, memory("claude", 900), memory("codex", 700)])  # fmt: skip
    data = both.as_dict()
    assert data["fixed_cost"]["host"] is None
    assert data["fixed_cost"]["summed_hosts"] == ["claude", "codex"]
    said = "summed across the memory of claude, codex; a hosts: entry per host gives each"
    assert said in fixed_cost_line(data)
    assert said in window_line(both)
    one = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0,
                        entries=[*report().entries, memory("claude", 900)])  # fmt: skip
    assert one.as_dict()["fixed_cost"]["summed_hosts"] == []
    assert "summed across" not in fixed_cost_line(one.as_dict())


def test_an_unmeasured_entrys_hostile_name_stays_inside_the_fixed_cost_line() -> None:
    """Found by the Markdown fuzz test: the names of entries that could not be measured went
    into the fixed-cost line raw, so a record separator (a line break to splitlines) and a
    pipe started a stray table row."""
    from pytest_toll.report.markdown import fixed_cost_line
    from pytest_toll.report.terminal import window_line

    broken = EntryResult("servers", "a\x1e|b", "toll.yaml::servers::a\x1e|b", 3, None, "o200k",
                         None, None, "error")  # fmt: skip
    hostile = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0,
                            entries=[*report().entries, broken])  # fmt: skip
    for line in (fixed_cost_line(hostile.as_dict()), window_line(hostile)):
        assert "could not be measured" in line
        assert len(line.splitlines()) == 1, line
        assert "\x1e" not in line
