"""``toll surface`` and ``toll context --fresh``: the surface measured outside pytest."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli import run_main

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "surface"


def test_surface_text_shows_each_file_and_a_fresh_sessions_rows(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, out, _ = run_main(capsys, "surface", str(FIXTURES / "jeltz"))
    assert code == 0
    assert "a fresh session (claude), o200k tokens before the first message:" in out
    assert "system prompt          the host's; not known (not guessed)" in out
    assert "built-in tools         the host's; not known (not guessed)" in out
    assert "  always-on  README.md  (import of CLAUDE.md)" in out
    assert "  always-on  ARCHITECTURE.md  (import of CLAUDE.md)" in out


def test_surface_json_holds_memory_and_plugins(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_main(capsys, "surface", str(FIXTURES / "wshobson-agents"), "--json")
    assert code == 0
    data = json.loads(out)
    (codex,) = data["memory"]
    assert codex["host"] == "codex" and [f["path"] for f in codex["files"]] == ["AGENTS.md"]
    (plugin,) = data["plugins"]
    assert plugin["name"] == "git-pr-workflows"
    assert plugin["total"] == sum(c["always_on"] for c in plugin["components"])
    assert "not known" in data["host_rows"]


def test_an_error_finding_exits_1(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("x" * 40_000, encoding="utf-8")
    code, out, _ = run_main(capsys, "surface", str(tmp_path), "--host", "codex")
    assert code == 1
    assert "M102 error AGENTS.md:" in out
    code, _, _ = run_main(capsys, "surface", str(tmp_path), "--max-bytes", "50000")
    assert code == 0


def test_context_fresh_shows_the_rows_of_the_current_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shutil.copytree(FIXTURES / "jeltz", tmp_path / "repo")
    monkeypatch.chdir(tmp_path / "repo")
    code, out, _ = run_main(capsys, "context", "--fresh")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "a fresh session (claude), o200k tokens before the first message:"
    assert lines[1].split() == [
        "system",
        "prompt",
        "the",
        "host's;",
        "not",
        "known",
        "(not",
        "guessed)",
    ]
    assert any(line.split()[:3] == ["memory", "files", "(claude)"] for line in lines)
