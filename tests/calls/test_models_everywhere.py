"""Any model can be measured; the ledger's ``models:`` reach every verb with ``--model``; a
diff says when its two reports were made differently and keeps both."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_toll.calls.measuring import measure
from pytest_toll.core import tokens
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.settings import ledger_catalogue
from tests.calls.test_calls_cli import TOOLS, write
from tests.cli import run_toll as toll

LEDGER = """\
version: 1
models:
  my-local-llm:
    provider: openai
    window: 32000
    prices: {input: 0.5}
    scale: {factor: 1.2, source: toll calibrate on our samples}
"""


def test_measure_any_model(tmp_path: Path) -> None:
    write(tmp_path)
    text = toll("measure", "--model", "my-local-llm", "--messages", "messages.json", cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == "call my-local-llm (unknown) — o200k"
    assert "scale: none measured for my-local-llm; the o200k count is shown unscaled" in lines
    assert any(line.startswith("note: my-local-llm is not in the catalogue") for line in lines)
    assert "put it under 'models:' in toll.yaml" in text.stdout
    as_json = toll(
        "measure", "--model", "my-local-llm", "--messages", "messages.json", "--json", cwd=tmp_path
    )
    data = json.loads(as_json.stdout)
    assert data["total"] == {"tokens": tokens.count("Show me setup.py") + 4, "source": "estimate"}
    assert data["scale"] == {
        "factor": 1.0,
        "measured": False,
        "source": "my-local-llm is not in the catalogue; the o200k count is unscaled",
    }


def test_the_ledger_models_reach_measure_and_calibrate(tmp_path: Path) -> None:
    write(tmp_path)
    (tmp_path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    argv = ["measure", "--model", "my-local-llm", "--messages", "messages.json", "--json"]
    data = json.loads(toll(*argv, cwd=tmp_path).stdout)  # ./toll.yaml by default
    o200k = tokens.count("Show me setup.py") + 4
    assert data["provider"] == "openai" and data["scale"]["factor"] == 1.2
    assert data["total"]["scaled"] == -(-o200k * 12 // 10)
    assert data["total"]["cost_usd"] == round(data["total"]["scaled"] * 0.5 / 1e6, 10)
    assert "notes" not in data or not any("catalogue" in note for note in data["notes"])
    # --ledger names another file; a missing one is exit 2.
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "other.yaml").write_text(LEDGER.replace("0.5", "1.5"), encoding="utf-8")
    other = json.loads(toll(*argv, "--ledger", "sub/other.yaml", cwd=tmp_path).stdout)
    assert other["total"]["cost_usd"] == round(data["total"]["scaled"] * 1.5 / 1e6, 10)
    missing = toll(*argv, "--ledger", "nope.yaml", cwd=tmp_path)
    assert (missing.returncode, missing.stderr) == (
        2,
        "toll: error: --ledger nope.yaml: no such ledger file\n",
    )
    (tmp_path / "bad.yaml").write_text("version: 1\nmodels:\n  x: {window: 5}\n", encoding="utf-8")
    bad = toll(*argv, "--ledger", "bad.yaml", cwd=tmp_path)
    assert bad.returncode == 2 and "models.x: a new model needs a 'provider'" in bad.stderr
    (tmp_path / "sample.txt").write_text("hello world " * 20, encoding="utf-8")
    calibrated = toll(
        "calibrate", "--model", "my-local-llm", "sample.txt=50", "--json", cwd=tmp_path
    )
    assert calibrated.returncode == 0, calibrated.stderr
    assert json.loads(calibrated.stdout)["current"] == {
        "factor": 1.2,
        "measured": True,
        "source": "toll calibrate on our samples",
    }
    catalogue = ledger_catalogue(load_ledger(tmp_path / "toll.yaml"))
    assert catalogue.layer_of(catalogue.resolve("my-local-llm")) == "ledger"


def test_diff_notes_probe_model_and_method_and_keeps_both_reports(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "hello"}]
    before = measure("gpt-6.2-sol").as_dict()  # the '.' probe
    after = measure("claude-sonnet-5", messages=messages, tools=TOOLS).as_dict()
    (tmp_path / "before.json").write_text(json.dumps(before), encoding="utf-8")
    (tmp_path / "after.json").write_text(json.dumps(after), encoding="utf-8")
    result = toll("diff", "before.json", "after.json", "--json", cwd=tmp_path)
    data = json.loads(result.stdout)
    assert data["reports"] == {"before": before, "after": after}
    assert "different models: gpt-6.2-sol before, claude-sonnet-5 after" in data["notes"]
    assert (
        "before was measured on the '.' probe message (it had no messages), the other on real "
        "messages: the messages part is not comparable"
    ) in data["notes"]
    text = toll("diff", "before.json", "after.json", cwd=tmp_path).stdout
    assert "note: different models" in text and "note: before was measured on the '.'" in text
    tools_before = {
        "kind": "tools",
        "tokenizer": "o200k_base",
        "method": "o200k",
        "tools": [{"name": "a", "tokens": 10}],
        "totals": {"claude": 20},
    }
    tools_after = {**tools_before, "method": "estimate"}
    (tmp_path / "tb.json").write_text(json.dumps(tools_before), encoding="utf-8")
    (tmp_path / "ta.json").write_text(json.dumps(tools_after), encoding="utf-8")
    tools_diff = json.loads(toll("diff", "tb.json", "ta.json", "--json", cwd=tmp_path).stdout)
    assert tools_diff["notes"] == [
        "counted differently (o200k in tb.json, estimate in ta.json): the deltas mix methods"
    ]
    assert tools_diff["reports"] == {"before": tools_before, "after": tools_after}
