"""``toll context``: the newest session of the current directory by default (Claude Code's
project folder for it, or a session whose recorded cwd it is), ``--all`` for any, the scaled
estimate beside the raw count, and ``--exact`` against a real count_tokens server."""

from __future__ import annotations

import json
import math
import os
import shutil
from itertools import pairwise
from pathlib import Path

from pytest_toll.calls.native import NativeComparison
from pytest_toll.transcripts.context import claude_project_folder, reconstructed_messages
from tests.cli import run_toll as toll
from tests.count_tokens_server import count_tokens_server, counted
from tests.transcripts.transcripts_data import FIXTURES, MAIN

CODEX = FIXTURES / "codex" / "2026" / "11" / "01" / "rollout-2026-11-01-codex-1.jsonl"


def _place(source: Path, target: Path, mtime: int, replace: tuple[str, str] | None = None) -> Path:
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(source, target)
    if replace:
        target.write_text(target.read_text().replace(*replace), encoding="utf-8")
    os.utime(target, (mtime, mtime))
    return target


def _layout(tmp_path: Path) -> tuple[Path, Path, Path, Path, Path]:
    here = (tmp_path / "my.project").resolve()
    here.mkdir()
    root = tmp_path / "root"
    mine = _place(MAIN, root / claude_project_folder(here) / "sess-main.jsonl", 1_000)
    codex = _place(
        CODEX, root / "codex" / "rollout-codex-1.jsonl", 2_000, ('"cwd":"/repo"', f'"cwd":"{here}"')
    )
    theirs = _place(MAIN, root / "-elsewhere" / "sess-other.jsonl", 3_000)
    return here, root, mine, codex, theirs


def test_the_default_session_is_the_current_directorys(tmp_path: Path) -> None:
    here, root, mine, codex, theirs = _layout(tmp_path)
    picked = json.loads(toll("context", "--root", str(root), "--json", cwd=here).stdout)
    assert Path(picked["path"]) == codex  # newer than mine; theirs is of another directory
    codex.unlink()
    picked = json.loads(toll("context", "--root", str(root), "--json", cwd=here).stdout)
    assert Path(picked["path"]) == mine  # by Claude Code's project folder
    anything = toll("context", "--root", str(root), "--all", "--json", cwd=here)
    assert Path(json.loads(anything.stdout)["path"]) == theirs
    mine.unlink()
    none = toll("context", "--root", str(root), cwd=here)
    assert none.returncode == 2
    assert f"no session of {here} under" in none.stderr and "--all takes" in none.stderr


def test_the_scaled_estimate_sits_beside_the_raw_count(tmp_path: Path) -> None:
    data = json.loads(toll("context", str(MAIN), "--json", cwd=tmp_path).stdout)
    assert data["scale"]["factor"] == 1.29 and data["scale"]["measured"] is True
    assert data["scaled"] == {"tokens": math.ceil(data["counted"] * 1.29), "method": "o200k×1.29"}
    text = toll("context", str(MAIN), cwd=tmp_path).stdout
    scaled_line = next(line for line in text.splitlines() if "scaled estimate" in line)
    assert "scaled estimate (o200k×1.29)" in scaled_line
    assert f"{data['scaled']['tokens']:,}  (measured: max Anthropic count_tokens" in scaled_line


def test_exact_counts_the_reconstructed_request(tmp_path: Path) -> None:
    messages, o200k = reconstructed_messages(MAIN)
    assert messages[0]["role"] == "user"
    assert all(a["role"] != b["role"] for a, b in pairwise(messages))
    body = {"model": "claude-sonnet-4-5", "messages": messages}
    with count_tokens_server() as server:
        env = server.environment()
        data = json.loads(
            toll("context", str(MAIN), "--exact", "--json", cwd=tmp_path, env=env).stdout
        )
        text = toll("context", str(MAIN), "--exact", cwd=tmp_path, env=env).stdout
        assert server.bodies[0] == body
    native = counted(body)
    scaled = math.ceil(o200k * 1.29)
    exact = data["exact"]
    assert (exact["native"], exact["o200k"]) == (native, o200k)
    assert exact["scaled"] == {"tokens": scaled, "method": "o200k×1.29"}
    assert exact["comparisons"]["o200k×1.29"] == NativeComparison(scaled, native).as_dict()
    lines = text.splitlines()
    assert (
        f"exact: count_tokens of the reconstructed last-turn request (claude-sonnet-4-5): "
        f"{native:,} native tokens"
    ) in lines
    assert f"  o200k×1.29: {NativeComparison(scaled, native).describe()}" in lines
    assert any(
        "the system prompt, tool schemas and skill metadata are not in a transcript" in line
        for line in lines
    )


def test_exact_refuses_a_session_of_another_provider(tmp_path: Path) -> None:
    result = toll("context", str(CODEX), "--exact", cwd=tmp_path)
    assert result.returncode == 2 and "this session's model is" in result.stderr
