"""The fixed cost in USD per 1,000 requests for the ledger's ``model:`` (Markdown and JSON)."""

from __future__ import annotations

import json
import math
from typing import Any

import jsonschema
import pytest

from pytest_toll.report.data import SCHEMA_PATH
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

TOOLS = [
    {
        "name": "read_file",
        "description": "Read a file from disk and return its text. Use when you need file contents.",
        "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
    {
        # Longer than when the pins were taken: the server regressed.
        "name": "write_file",
        "description": "Write text to a file, replacing the old content completely and forever.",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string"}, "text": {"type": "string"}},
        },
    },
]
SERVER = """\
servers:
  files:
    tools_file: tools.json
    budget: 4000
    pin: 100
    tools:
      read_file: 50
      write_file: 40
"""


def run_gate(pytester: pytest.Pytester, head: str) -> tuple[pytest.RunResult, dict[str, Any], str]:
    (pytester.path / "tools.json").write_text(json.dumps(TOOLS), encoding="utf-8")
    (pytester.path / "toll.yaml").write_text("version: 1\n" + head + SERVER, encoding="utf-8")
    result = pytester.runpytest(
        *QUIET, "--toll", "--toll-json", "out/toll.json", "--toll-markdown", "out/toll.md"
    )
    report = json.loads((pytester.path / "out" / "toll.json").read_text(encoding="utf-8"))
    jsonschema.validate(report, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    markdown = (pytester.path / "out" / "toll.md").read_text(encoding="utf-8")
    return result, report, markdown


def test_a_priced_model_shows_the_fixed_cost_and_the_change_in_usd(
    pytester: pytest.Pytester,
) -> None:
    # The ledger's models: override sets the input price; the shipped row keeps its scale
    # (claude-5: 1.80).
    head = "model: claude-sonnet-5\nmodels:\n  claude-sonnet-5: {prices: {input: 4}}\n"
    result, report, markdown = run_gate(pytester, head)
    result.assert_outcomes(failed=1)
    (entry,) = report["entries"]
    assert entry["outcome"] == "regressed"
    measured, pin = entry["measured"], entry["pin"]
    assert pin == 100
    assert measured > pin

    # By hand: o200k × 1.80, rounded up; × $4 per million tokens × 1,000 requests.
    fixed_tokens = math.ceil(measured * 1.8)
    change_tokens = math.ceil((measured - pin) * 1.8)
    fixed_usd = fixed_tokens * 4 / 1_000_000 * 1_000
    change_usd = change_tokens * 4 / 1_000_000 * 1_000
    pricing = report["pricing"]
    assert pricing == {
        "model": "claude-sonnet-5",
        "input_usd_per_mtok": 4.0,
        "scale": 1.8,
        "scale_measured": True,
        "method": "o200k×1.80",
        "fixed_cost_tokens": fixed_tokens,
        "fixed_cost_usd_per_1000": pytest.approx(fixed_usd),
        "change_tokens": change_tokens,
        "change_usd_per_1000": pytest.approx(change_usd),
    }
    # The figures of this ledger: 122 o200k measured against the pin 100.
    assert (measured, fixed_tokens, change_tokens) == (122, 220, 40)
    line = (
        "At claude-sonnet-5 input prices ($4.00/MTok, o200k×1.80): **$0.88** per 1,000 "
        "requests; this change: +$0.16 per 1,000 requests (uncached input; the fixed cost "
        "is 220 tok o200k×1.80)."
    )
    lines = markdown.splitlines()
    fixed_line = next(i for i, text in enumerate(lines) if text.startswith("Fixed cost"))
    assert lines[fixed_line + 1 : fixed_line + 3] == ["", line]


def test_a_model_without_an_input_price_gets_no_usd(pytester: pytest.Pytester) -> None:
    head = (
        "model: my-gateway\n"
        "models:\n"
        "  my-gateway: {provider: openai, window: 128000}  # no prices\n"
    )
    result, report, markdown = run_gate(pytester, head)
    result.assert_outcomes(failed=1)
    assert "pricing" not in report
    assert "/MTok" not in markdown
    assert "per 1,000 requests" not in markdown


def test_no_model_gets_no_usd(pytester: pytest.Pytester) -> None:
    result, report, markdown = run_gate(pytester, "")
    result.assert_outcomes(failed=1)
    assert "pricing" not in report
    assert "per 1,000 requests" not in markdown
