"""E131 on plain rows: what is judged, what is not, and how a ledger turns it down."""

from __future__ import annotations

from pytest_toll.core.findings import RuleOverrides
from pytest_toll.definitions.usage import ToolUse, unused_findings


def _row(tool: str, calls: int, per_request: dict[str, int], server: str = "notes") -> ToolUse:
    return ToolUse(server, tool, max(per_request.values()), per_request, calls, min(calls, 1))


ROWS = [
    _row("search", 3, {"claude-code": 0, "codex": 161}),
    _row("delete", 0, {"claude-code": 0, "codex": 78}),
]


def test_an_unused_paid_tool_is_a_warning_with_its_saving() -> None:
    [finding] = unused_findings(ROWS, 12, RuleOverrides())
    assert (finding.rule, finding.severity, finding.subject) == (
        "E131",
        "warn",
        "mcp__notes__delete",
    )
    assert finding.message == (
        "costs 78 tok on every request (codex; deferred by claude-code); 0 calls in 12 "
        "sessions; leaving the tool out saves 78,000 tok per 1,000 requests"
    )


def test_no_session_judges_nothing() -> None:
    assert unused_findings(ROWS, 0, RuleOverrides()) == []


def test_a_tool_no_host_pays_for_is_not_a_finding() -> None:
    deferred = [_row("delete", 0, {"claude-code": 0}), _row("search", 2, {"claude-code": 0})]
    assert unused_findings(deferred, 5, RuleOverrides()) == []


def test_a_whole_server_is_one_finding_summed_per_host() -> None:
    rows = [_row("a", 0, {"codex": 10, "cursor": 10}), _row("b", 0, {"codex": 5, "cursor": 5})]
    [finding] = unused_findings(rows, 1, RuleOverrides())
    assert finding.subject == "mcp__notes"
    assert finding.message.startswith(
        "costs 15 tok on every request (codex, cursor); 0 calls in 1 session;"
    )
    assert finding.message.endswith("disabling the server saves 15,000 tok per 1,000 requests")


def test_a_ledger_turns_it_off_or_up() -> None:
    assert unused_findings(ROWS, 3, RuleOverrides.parse({"E131": "off"})) == []
    [finding] = unused_findings(ROWS, 3, RuleOverrides.parse({"E131": "error"}))
    assert finding.severity == "error"
