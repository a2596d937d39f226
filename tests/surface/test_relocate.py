"""``toll fix --surface`` on real files: a house of memory files and skills, each move
measured per host on the written result, and ``--write`` writing exactly what it reported."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_toll.core.errors import UsageError
from pytest_toll.core.hosts import CLAUDE_CODE, CODEX, HOSTS
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.surface.bill import host_bill
from pytest_toll.surface.memory import measure_memory
from pytest_toll.surface.relocate import fix_surface
from pytest_toll.surface.relocate_report import (
    REFERENCE,
    SKILL,
    SPLIT,
    CutChange,
    FileWrite,
    Move,
    SurfaceFix,
    render_surface_fix,
)
from pytest_toll.surface.workcopy import write_fix

RELEASE = """## Releasing a version

1. Make sure `main` is green and pull it with `git pull --ff-only`.
2. Bump the version in `pyproject.toml`; a breaking change bumps the major version.
3. Write the changelog entry under a heading with today's date: Added, Changed, Fixed.
4. Commit as `release: vX.Y.Z`, tag `vX.Y.Z` and push the tag to the origin remote.
5. Watch the release workflow; when it is green, check the package page shows it.
"""
MEMORY = f"""# Notes service

Markdown notes for the support team: Python 3.12, FastAPI, Postgres.

## Conventions

- Type hints everywhere; ruff and mypy must pass.

{RELEASE}
## Style

Short functions, no global state.
"""


def house(root: Path) -> Path:
    """A repository with CLAUDE.md and AGENTS.md, each with a release procedure."""
    root.mkdir(exist_ok=True)
    (root / "CLAUDE.md").write_text(MEMORY, encoding="utf-8")
    (root / "AGENTS.md").write_text(MEMORY, encoding="utf-8")
    return root


def test_a_procedure_moves_to_each_host_s_skill_folder_with_its_saving_per_host(
    tmp_path: Path,
) -> None:
    root = house(tmp_path / "repo")
    before = {
        name: (root / name).read_text(encoding="utf-8") for name in ("CLAUDE.md", "AGENTS.md")
    }
    fix = fix_surface(root, [CLAUDE_CODE, CODEX])
    # Nothing written without --write: the repository is as it was.
    assert {n: (root / n).read_text(encoding="utf-8") for n in before} == before
    assert not (root / ".claude").exists()
    targets = {move.source: move.target for move in fix.moves}
    assert targets == {
        "CLAUDE.md": ".claude/skills/releasing-a-version/SKILL.md",
        "AGENTS.md": ".agents/skills/releasing-a-version/SKILL.md",
    }
    claude_move = next(m for m in fix.moves if m.source == "CLAUDE.md")
    assert claude_move.action == SKILL and claude_move.because == "5 ordered steps"
    rows = {change.host: change for change in claude_move.hosts}
    assert rows["claude-code"].counted and rows["claude-code"].saving > 0
    assert not rows["codex"].counted and rows["codex"].why == "does not load CLAUDE.md"
    text = render_surface_fix(fix)
    assert "a proposal: nothing written" in text
    assert "does not load CLAUDE.md" in text


def test_write_writes_only_the_reported_files_and_the_re_measure_matches(tmp_path: Path) -> None:
    root = house(tmp_path / "repo")
    (root / "README.md").write_text("untouched\n", encoding="utf-8")
    fix = fix_surface(root, [CLAUDE_CODE, CODEX])
    written = write_fix(root, fix)
    assert written.written
    files = sorted(
        os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
    )
    assert files == sorted(
        ["AGENTS.md", "CLAUDE.md", "README.md", *(w.path for w in fix.writes if w.before is None)]
    )
    for write in fix.writes:
        assert (root / write.path).read_text(encoding="utf-8") == write.after
    # The repository re-measured now is what the report said the result would be.
    for host in (CLAUDE_CODE, CODEX):
        total = next(t for t in fix.totals if t.host == host.name)
        assert host_bill(root, host).total == total.after
        assert total.before - total.after == total.saved
    # The new skills pass the S rules; the memory file keeps one line pointing at each.
    report = measure_skills(root / ".claude" / "skills")
    assert [f for f in report.findings if f.severity != "info"] == []
    memory = (root / "CLAUDE.md").read_text(encoding="utf-8")
    assert "1. Make sure" not in memory
    assert (
        "see the `releasing-a-version` skill (.claude/skills/releasing-a-version/SKILL.md)"
        in memory
    )


def test_write_refuses_a_file_changed_since_it_was_measured(tmp_path: Path) -> None:
    root = house(tmp_path / "repo")
    fix = fix_surface(root, [CLAUDE_CODE])
    (root / "CLAUDE.md").write_text(MEMORY + "\nedited\n", encoding="utf-8")
    with pytest.raises(UsageError, match="changed since it was measured"):
        write_fix(root, fix)
    assert not (root / ".claude").exists()  # nothing written at all


def test_write_refuses_a_path_through_a_symlink_out_of_the_repository(tmp_path: Path) -> None:
    root = house(tmp_path / "repo")
    fix = fix_surface(root, [CLAUDE_CODE])
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    (root / ".claude").symlink_to(outside)
    with pytest.raises(UsageError, match="is a link or not a folder"):
        write_fix(root, fix)
    assert list(outside.iterdir()) == []
    # A dangling link is refused too: the write would create its target wherever it points.
    (root / ".claude").unlink()
    (root / ".claude").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="is a link or not a folder"):
        write_fix(root, fix)
    assert not (tmp_path / "nowhere").exists()
    assert (root / "CLAUDE.md").read_text(encoding="utf-8") == MEMORY


def test_a_small_procedure_that_would_cost_more_than_it_saves_stays(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "CLAUDE.md").write_text(
        "# T\n\n## Do\n\n1. Pull it.\n2. Test it.\n3. Push it.\n", encoding="utf-8"
    )
    fix = fix_surface(root, [CLAUDE_CODE])
    assert fix.moves == () and fix.writes == ()
    assert any("costs more than it saves" in note for note in fix.notes)


def test_a_host_that_lists_no_skills_keeps_its_procedures(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "GEMINI.md").write_text(MEMORY, encoding="utf-8")
    fix = fix_surface(root, [HOSTS["gemini-cli"]])
    assert fix.moves == ()
    assert any("GEMINI.md: gemini-cli lists no project skills" in note for note in fix.notes)


def test_a_long_skill_body_moves_sections_to_references(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    skill = root / ".claude" / "skills" / "pdf"
    skill.mkdir(parents=True)
    sections = "".join(
        f"## Part {n}\n\n" + f"Paragraph {n} about filling PDF forms, field by field.\n" * 60
        for n in range(4)
    )
    (skill / "SKILL.md").write_text(
        "---\nname: pdf\ndescription: Fill PDF forms. Use when the user asks to fill a PDF.\n"
        f"---\n\n# PDF\n\nStart here.\n\n{sections}",
        encoding="utf-8",
    )
    body_before = measure_skills(skill).skills[0].body
    fix = fix_surface(root, [CLAUDE_CODE], body_tokens=1000)
    moves = [m for m in fix.moves if m.action == REFERENCE]
    assert moves and all(m.target.startswith(".claude/skills/pdf/references/part-") for m in moves)
    assert moves[0].body is not None and moves[0].body[0] == body_before
    write_fix(root, fix)
    after = measure_skills(skill).skills[0]
    assert after.body == moves[-1].body[1] and after.body <= 1000  # type: ignore[index]
    assert {r.path for r in after.references} == {m.target.split("pdf/")[1] for m in moves}


def test_an_agents_md_past_codex_s_cut_is_split_per_folder(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "packages" / "api").mkdir(parents=True)
    (root / "web").mkdir()
    filler = "General guidance for every change in this repository, kept short.\n" * 300
    api = (
        "## The API\n\n"
        + (
            "Handlers in packages/api/src/handlers.ts return typed errors.\n"
            "Routes in packages/api/src/routes.ts are registered once.\n"
        )
        * 75
    )
    web = "## Web\n\n" + "Components are function components with hooks only.\n" * 100
    (root / "AGENTS.md").write_text(f"# Repo\n\n{filler}\n{api}\n{web}", encoding="utf-8")
    assert measure_memory(root, "codex").past_cut > 0  # M102 before
    fix = fix_surface(root, [CODEX])
    splits = {m.target: m for m in fix.moves if m.action == SPLIT}
    assert set(splits) == {"packages/api/AGENTS.md", "web/AGENTS.md"}
    cut = {c.cwd: c for c in fix.cut}
    assert cut["."].before > 0 and cut["."].after == 0
    write_fix(root, fix)
    assert measure_memory(root, "codex").past_cut == 0
    assert "Handlers in packages/api" in (root / "packages/api/AGENTS.md").read_text(
        encoding="utf-8"
    )
    codex = {c.host: c for c in splits["web/AGENTS.md"].hosts}["codex"]
    assert codex.counted and codex.saving > 0


def run_toll(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_toll", *args], cwd=cwd, capture_output=True, text=True,
        timeout=120, env={**os.environ, "NO_COLOR": "1"},
    )  # fmt: skip


def test_the_cli_proposes_then_writes(tmp_path: Path) -> None:
    root = house(tmp_path / "repo")
    proposal = run_toll(
        "fix", "--surface", str(root), "--host", "claude-code", "--json", cwd=tmp_path
    )
    assert proposal.returncode == 0, proposal.stderr
    data = json.loads(proposal.stdout)
    assert data["written"] is False and data["moves"][0]["target"].startswith(".claude/skills/")
    assert not (root / ".claude").exists()
    done = run_toll("fix", "--surface", str(root), "--host", "claude-code", "--write", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "written: the edits below are applied" in done.stdout
    assert (root / ".claude/skills/releasing-a-version/SKILL.md").is_file()


def test_the_cli_keeps_refusing_its_own_flags_after_the_double_dash(tmp_path: Path) -> None:
    done = run_toll("fix", "--", sys.executable, "server.py", "--surface", cwd=tmp_path)
    assert done.returncode == 2
    assert "--surface after `--` would go to the server" in done.stderr


def test_a_server_s_own_host_flag_after_the_double_dash_is_still_the_server_s(
    tmp_path: Path,
) -> None:
    """``--host`` is the surface mode's, and a flag servers take: after `--` it goes to the
    server as it did before the surface mode (the server here exits at once: could not
    judge, never a refusal naming --host)."""
    done = run_toll(
        "fix",
        "--timeout",
        "5",
        "--",
        sys.executable,
        "-c",
        "pass",
        "--host",
        "0.0.0.0",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "--host after `--`" not in done.stderr


def test_the_tools_mode_still_needs_out_after_write(tmp_path: Path) -> None:
    (tmp_path / "tools.json").write_text("[]", encoding="utf-8")
    done = run_toll("fix", "--tools", "tools.json", "--write", cwd=tmp_path)
    assert done.returncode == 2
    assert "argument --write: expected one argument" in done.stderr
    mixed = run_toll("fix", "--surface", ".", "--tools", "tools.json", cwd=tmp_path)
    assert mixed.returncode == 2 and "--surface reads a repository" in mixed.stderr


def test_a_procedure_that_cannot_move_is_searched_for_smaller_ones(tmp_path: Path) -> None:
    """The outer section names a repository file its skill folder would not hold (S106):
    it stays, and the procedure inside it without that name moves alone."""
    root = tmp_path / "repo"
    root.mkdir()
    testing = (
        "### Testing\n\n1. Read [the guide](tests/README.md) before adding a test.\n"
        "2. Write the test beside its module.\n3. Run the whole suite once.\n"
    )
    release = RELEASE.replace("## Releasing a version", "### Releasing a version")
    (root / "CLAUDE.md").write_text(
        f"# Service\n\nIntro.\n\n## Operations\n\n{testing}\n{release}", encoding="utf-8"
    )
    fix = fix_surface(root, [CLAUDE_CODE])
    assert [move.heading for move in fix.moves] == ["Releasing a version"]
    assert any("'Operations' stays: S106" in note for note in fix.notes)


def test_a_crlf_memory_file_stays_crlf_and_measures_as_reported(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "CLAUDE.md").write_bytes(MEMORY.replace("\n", "\r\n").encode())
    fix = fix_surface(root, [CLAUDE_CODE])
    write_fix(root, fix)
    data = (root / "CLAUDE.md").read_bytes()
    assert b"\r\n" in data and b"\n" not in data.replace(b"\r\n", b"")
    assert host_bill(root, CLAUDE_CODE).total == fix.totals[0].after


def test_the_text_names_a_hostile_folder_inertly() -> None:
    # Paths and notes name the repository's own folders, not ours: a line break, a terminal
    # escape or a bidi control in one must not start a line or reach the terminal as it is.
    hostile = "web\nFAKE: all clear\x1b[2J\u202e"
    move = Move(SPLIT, "AGENTS.md", 3, "Web", f"{hostile}/AGENTS.md", "about a folder")
    fix = SurfaceFix(
        f"/repo/{hostile}",
        (move,),
        (),
        (CutChange(hostile, 10, 0),),
        (FileWrite(f"{hostile}/AGENTS.md", None, "x"),),
        (f"{hostile}: not searched",),
    )
    text = render_surface_fix(fix)
    assert "\nFAKE: all clear" not in text
    assert "\x1b" not in text and "\u202e" not in text
