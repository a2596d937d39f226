"""``toll measure``'s lines say how each number was made, and print it that way."""

from __future__ import annotations

import json
import re
from pathlib import Path

from pytest_toll.calls.deferred import deferred_tools
from pytest_toll.calls.measuring import Tuning, measure
from pytest_toll.calls.render import render_call, render_deferred, render_measure
from pytest_toll.core.models import Model, share_text
from tests.calls.test_calls_cli import TOOLS
from tests.cli import run_toll as toll

MORE_TOOLS = [
    *TOOLS,
    {"name": "write_file", "description": "Write a file.", "inputSchema": {"type": "object"}},
]


def test_the_core_line_prints_scaled_numbers_beside_the_raw_ones() -> None:
    report = deferred_tools("claude-opus-5", MORE_TOOLS, core=["read_file"])
    assert report.eager.scaled is not None and report.deferred.scaled is not None
    line = render_deferred(report)
    # Each figure carries its own label; the ×1.80 figure is the scaled one, not the raw one.
    assert f"advertised: {report.eager.tokens:,} o200k ({report.eager.scaled:,} o200k×1.80);" in (
        line
    )
    assert f"names: {report.deferred.tokens:,} o200k ({report.deferred.scaled:,} o200k×1.80);" in (
        line
    )
    assert report.eager.scaled != report.eager.tokens
    assert "(o200k×1.80): all" not in line


def test_chars_per_token_on_an_openai_model_says_an_estimate_is_not_scaled() -> None:
    text = render_call(
        measure(
            "gpt-6.2-sol",
            messages=[{"role": "user", "content": "hello there"}],
            tuning=Tuning(chars_per_token=3.5),
        )
    )
    assert "none measured" not in text
    assert "scale: none (a chars/token estimate is not scaled)" in text.splitlines()


def test_a_window_share_over_100_percent_is_a_plain_percentage(tmp_path: Path) -> None:
    tiny = Model("tiny", "openai", window=10)
    text = render_call(measure(tiny, messages=[{"role": "user", "content": "word " * 40}]))
    share_line = next(line for line in text.splitlines() if "window" in line)
    assert re.fullmatch(r"~\d[\d,]*\.\d% of a 10 window — more than the window holds", share_line)
    assert "e+" not in text
    (tmp_path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    result = toll("weigh", "--tools", "tools.json", "--window", "10", cwd=tmp_path)
    window = next(line for line in result.stdout.splitlines() if line.startswith("window:"))
    assert "e+" not in window and "more than the window holds" in window
    assert window.startswith("window: ~") and ".0% of a 10-token window" in window


def test_share_text() -> None:
    assert [share_text(f) for f in (0, 1e-9, 0.00012345, 0.043, 1, 2.5, 123.4)] == [
        "0%",
        "<0.001%",
        "0.012%",
        "4.3%",
        "100.0%",
        "250.0%",
        "12,340.0%",
    ]


def test_the_measure_view_is_the_table_then_the_deferred_line_then_the_budget_verdict() -> None:
    result = measure("claude-opus-5", tools=MORE_TOOLS)
    deferred = deferred_tools("claude-opus-5", MORE_TOOLS, core=["read_file"])
    assert render_measure(result) == render_call(result)
    within = render_measure(result, deferred)
    assert within.splitlines() == [*render_call(result).splitlines(), render_deferred(deferred)]
    over = render_measure(result, deferred, over_budget=10).splitlines()
    assert over[:-1] == within.splitlines()
    assert over[-1] == f"over budget: {result.graded_tokens:,} > 10 o200k tokens"
