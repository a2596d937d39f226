"""The terminal summary's lines for other pins (a run_pin, a result's pin, a waste ratio):
token figures as the table shows them, never in scientific notation."""

from __future__ import annotations

from pytest_toll.report.data import EntryResult, SessionReport
from pytest_toll.report.terminal import summary_lines


def _report(*, written: bool) -> SessionReport:
    entry = EntryResult(
        kind="servers",
        name="memory",
        nodeid="toll.yaml::servers::memory",
        line=3,
        measured=1152,
        method="o200k",
        pin=1152,
        budget=None,
        outcome="passed",
        other_pins=[
            {"key": "results.search.pin", "measured": 3660, "pin": 3465},
            {"key": "run_pin", "measured": 1234567, "pin": None, "budget": 2000000},
            {"key": "waste_ratio_pin", "measured": 0.0922, "pin": 0.0931},
        ],
    )
    return SessionReport(
        ledger="toll.yaml",
        window=200_000,
        tolerance=0,
        update=written,
        allow_increase=written,
        ledger_written=written,
        entries=[entry],
    )


def test_other_pins_read_as_tokens_and_ratios() -> None:
    lines = [text for text, _ in summary_lines(_report(written=False))]
    assert "servers::memory: results.search.pin 3,465, measured 3,660" in lines
    assert "servers::memory: run_pin -, measured 1,234,567, budget 2,000,000" in lines
    assert "servers::memory: waste_ratio_pin 0.0931, measured 0.0922" in lines
    written = [text for text, _ in summary_lines(_report(written=True))]
    assert "  servers::memory: results.search.pin 3,465 → 3,660" in written
    assert "  servers::memory: run_pin new pin 1,234,567" in written
