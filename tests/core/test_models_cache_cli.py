"""``toll models`` shows each row's minimum cacheable length, its page, and which layer
answered for it (issue #39), as a real process in a scratch folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli import run_toll as toll

ISSUE_1194 = "https://github.com/anthropics/anthropic-sdk-python/issues/1194"


@pytest.mark.slow  # five toll processes
def test_toll_models_shows_the_minimum_and_the_layer_that_answered(tmp_path: Path) -> None:
    table = toll("models", cwd=tmp_path)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split()[:8] == [
        "model", "provider", "window", "in", "$/MTok", "out", "$/MTok", "tiers"
    ]  # fmt: skip
    assert "cache min" in lines[0]
    rows = {line.split()[0]: line.split() for line in lines[1:] if line}
    assert rows["claude-haiku-4-5"][5:7] == ["—", "4,096"]
    assert rows["claude-sonnet-5-5"][5:7] == ["—", "?"]
    assert "? not known" in table.stdout
    one = toll("models", "claude-haiku-4-5", cwd=tmp_path).stdout
    assert f"  cache minimum: 4,096 tokens (answered by: package) — {ISSUE_1194}\n" in one
    assert "  prices:  input $1, output $5, cache_read $0.1, cache_write_5m $1.25," in one
    (tmp_path / "toll.yaml").write_text(
        "version: 1\nmodels:\n"
        "  claude-haiku-4-5: {prices: {input: 1.5}}\n"
        "  claude-sonnet-5: {cache_minimum: {tokens: 2048}}\n",
        encoding="utf-8",
    )
    layered = json.loads(toll("models", "--json", cwd=tmp_path).stdout)
    found = {row["name"]: row for row in layered["models"]}
    # A ledger row that changes only a price keeps the package's minimum, and says so.
    haiku = found["claude-haiku-4-5"]
    assert haiku["layer"] == "ledger"
    assert haiku["cache_minimum"]["layer"] == "package"
    assert haiku["cache_minimum"]["tokens"] == 4096
    sonnet = found["claude-sonnet-5"]["cache_minimum"]
    # A figure the ledger gives without a page is the ledger's, named by file and line.
    assert (sonnet["tokens"], sonnet["source"], sonnet["layer"]) == (2048, "toll.yaml:2", "ledger")
    text = toll("models", "claude-sonnet-5", cwd=tmp_path).stdout
    assert "  cache minimum: 2,048 tokens (answered by: ledger) — toll.yaml:2\n" in text
    again = toll("models", cwd=tmp_path).stdout.splitlines()
    marked = {line.split()[0]: line.split() for line in again if line}
    assert marked["claude-sonnet-5"][5:7] == ["—", "2,048*"]
