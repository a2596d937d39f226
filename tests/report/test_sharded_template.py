"""The sharded workflow template: a 4-shard matrix, a merge gate and a merge ratchet."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).parents[2]
TEMPLATE = ROOT / ".github" / "workflow-templates" / "toll-sharded.yml"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def test_a_matrix_of_shards_then_one_merge() -> None:
    workflow: dict[object, Any] = yaml.safe_load(TEMPLATE.read_text(encoding="utf-8"))
    assert isinstance(workflow, dict)
    # PyYAML reads the bare key `on` as True.
    triggers = workflow.get("on", workflow.get(True))
    assert isinstance(triggers, dict)
    assert set(triggers) == {"pull_request", "push"}
    assert workflow["permissions"] == {"contents": "read"}
    jobs = workflow["jobs"]
    shards, gate, ratchet = jobs["shards"], jobs["gate"], jobs["ratchet"]
    count = int(workflow["env"]["SHARDS"])
    assert shards["strategy"]["matrix"]["shard"] == list(range(1, count + 1)) == [1, 2, 3, 4]
    assert shards["strategy"]["fail-fast"] is False
    shard_run = " ".join(step.get("run", "") for step in shards["steps"])
    assert "--toll-json" in shard_run and "--splits" in shard_run and "--group" in shard_run
    assert "--toll-update" not in shard_run
    # Both merges run after every shard, even a failed one: a missing shard is judged there.
    for job in (gate, ratchet):
        assert job["needs"] == "shards"
        assert job["if"].startswith("always() && ")
    gate_run = " ".join(step.get("run", "") for step in gate["steps"])
    ratchet_run = " ".join(step.get("run", "") for step in ratchet["steps"])
    assert 'pytest_toll merge shards/*.json --shards "$SHARDS"' in gate_run
    assert "--update" not in gate_run and "github comment" in gate_run
    assert "--shards" in ratchet_run and "--update" in ratchet_run
    assert "github ratchet" in ratchet_run and "github badge" in ratchet_run
    assert gate["permissions"] == {"contents": "read", "pull-requests": "write"}
    assert ratchet["permissions"] == {"contents": "write", "pull-requests": "write"}
    for job in jobs.values():
        for step in job["steps"]:
            if "run" in step:
                subprocess.run(["bash", "-n", "-c", EXPRESSION.sub("x", step["run"])], check=True)
