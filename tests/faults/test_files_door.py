"""The Files door (issue 34, door 1): every file toll reads is a regular file under its size
cap, inside the root being measured, found by a walk that neither leaves the root through a
symlinked folder nor goes deeper than its limit; an id from a third-party file is never a
path part that leaves its root. Each case failed before the door (a hang, a read of
``/dev/zero``, a server started from outside, a walk of the whole disk)."""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.textio import join_inside, read_inside_root, walk_inside
from pytest_toll.surface.memory import measure_memory
from pytest_toll.surface.plugins import measure_plugin
from pytest_toll.transcripts.formats import read_records
from pytest_toll.transcripts.records import CallRecord
from tests.faults.hostile import run_toll

posix_only = pytest.mark.skipif(sys.platform == "win32", reason="FIFOs and /dev/zero")


def finishes(work: Callable[[], Any], seconds: float = 20.0) -> Any:
    """``work()``'s value, failing the test (not hanging the suite) when it does not return."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as error:  # handed back to the test thread
            box["error"] = error

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box.get("value")


# --- the door itself -----------------------------------------------------------------------


@posix_only
def test_the_reader_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    with pytest.raises(CouldNotJudge, match="not a regular file"):
        finishes(lambda: read_inside_root(tmp_path / "pipe", tmp_path))


def test_the_reader_refuses_a_link_out_of_its_root_naming_the_path(tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (tmp_path / "repo").mkdir()
    (tmp_path / "repo" / "link").symlink_to(outside)
    with pytest.raises(CouldNotJudge, match=r"link.*outside"):
        read_inside_root(tmp_path / "repo" / "link", tmp_path / "repo")


def test_the_reader_caps_each_kind(tmp_path: Path) -> None:
    (tmp_path / "big").write_bytes(b"x" * 2000)
    with pytest.raises(CouldNotJudge, match="larger than"):
        read_inside_root(tmp_path / "big", tmp_path, limit=1000)
    assert read_inside_root(tmp_path / "big", tmp_path, limit=2000) == b"x" * 2000


def test_a_walk_stays_in_its_root_and_stops_at_its_depth(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "far.md").write_text("x")
    root = tmp_path / "root"
    deep = root.joinpath(*[f"d{i}" for i in range(12)])
    deep.mkdir(parents=True)
    (deep / "deep.md").write_text("x")
    (root / "near.md").write_text("x")
    (root / "away").symlink_to(outside, target_is_directory=True)
    (root / "loop").symlink_to(root, target_is_directory=True)
    found = {p.relative_to(root).as_posix() for p in walk_inside(root, root, max_depth=5)}
    assert found == {"near.md"}
    assert any(p.name == "deep.md" for p in walk_inside(root, root, max_depth=20))


def test_a_walk_whose_top_is_a_link_out_of_the_root_walks_nothing(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "rules").symlink_to("/", target_is_directory=True)
    assert finishes(lambda: list(walk_inside(root / ".claude" / "rules", root))) == []


@pytest.mark.parametrize("name", ["../x", "a/../../x", "/etc", "..", "", "a\0b", "a\\..\\..\\x"])
def test_a_third_party_id_never_leaves_its_root(tmp_path: Path, name: str) -> None:
    assert join_inside(tmp_path, name) is None


def test_a_plain_third_party_id_joins(tmp_path: Path) -> None:
    assert join_inside(tmp_path, "ses_1") == tmp_path / "ses_1"


# --- toll init's config reader -------------------------------------------------------------


def _skill(root: Path) -> None:
    (root / "skills" / "demo").mkdir(parents=True)
    (root / "skills" / "demo" / "SKILL.md").write_text(
        "---\nname: demo\ndescription: A demo skill for tests.\n---\nBody.\n"
    )


@pytest.mark.slow
@posix_only
def test_init_is_not_hung_by_a_fifo_config(tmp_path: Path) -> None:
    _skill(tmp_path)
    os.mkfifo(tmp_path / ".mcp.json")
    outcome = run_toll("init", "--print", cwd=tmp_path, wall=30)
    assert "Traceback" not in outcome.output
    assert ".mcp.json" in outcome.stderr and "not a regular file" in outcome.stderr


@pytest.mark.slow
@posix_only
def test_init_does_not_read_dev_zero_through_a_config_link(tmp_path: Path) -> None:
    _skill(tmp_path)
    (tmp_path / ".mcp.json").symlink_to("/dev/zero")
    outcome = run_toll("init", "--print", cwd=tmp_path, wall=30)
    assert "Traceback" not in outcome.output and "MemoryError" not in outcome.output
    assert ".mcp.json" in outcome.stderr


@pytest.mark.slow
def test_init_starts_no_server_from_a_config_linked_outside(tmp_path: Path) -> None:
    marker = tmp_path / "started"
    outside = tmp_path / "elsewhere.json"
    script = f"open({str(marker)!r}, 'w').write('x')"
    outside.write_text(
        json.dumps({"mcpServers": {"evil": {"command": sys.executable, "args": ["-c", script]}}})
    )
    repo = tmp_path / "repo"
    repo.mkdir()
    _skill(repo)
    (repo / ".mcp.json").symlink_to(outside)
    outcome = run_toll("init", "--print", cwd=repo, wall=60)
    assert "Traceback" not in outcome.output
    assert not marker.exists()
    assert "evil" not in outcome.stdout
    assert "outside" in outcome.stderr


# --- plugins ---------------------------------------------------------------------------------


def test_a_plugin_manifest_naming_a_file_outside_the_plugin_reads_nothing(tmp_path: Path) -> None:
    (tmp_path / "outside.json").write_text(json.dumps({"mcpServers": {"stolen": {}}}))
    (tmp_path / "hooks-out.json").write_text(json.dumps({"hooks": {"stolen-hook": []}}))
    plugin = tmp_path / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text(
        json.dumps({"name": "kit", "mcpServers": "../outside.json", "hooks": "../hooks-out.json"})
    )
    report = measure_plugin(plugin)
    assert "stolen" not in report.mcp_servers
    assert "stolen-hook" not in report.hooks
    assert any("outside" in note for note in report.unread), report.unread


# --- transcripts -----------------------------------------------------------------------------


@pytest.mark.slow
@posix_only
def test_a_fifo_in_a_transcripts_root_hangs_neither_scan_nor_the_gate(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    root.mkdir()
    os.mkfifo(root / "a.json")
    os.mkfifo(root / "b.jsonl")
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache")}
    outcome = run_toll("scan", "--root", str(root), "--no-cache", env=env, wall=30)
    assert "Traceback" not in outcome.output
    (tmp_path / "toll.yaml").write_text("transcripts:\n  roots: [sessions]\n")
    import subprocess

    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "--toll", "-p", "no:cacheprovider", "-q", "toll.yaml"],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env={**os.environ, **env},
    )
    assert b"Traceback" not in completed.stdout


def _opencode_storage(storage: Path, session_id: str) -> Path:
    session = storage / "session" / "proj" / "ses_a.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"id": session_id, "projectID": "proj", "directory": "/w"}))
    return session


def test_an_opencode_id_with_dot_dot_parts_reads_nothing_outside(tmp_path: Path) -> None:
    # What the hostile ids point at: a message and its tool part outside the storage tree.
    outside = tmp_path / "outside"
    (outside / "x").mkdir(parents=True)
    call = {"type": "tool", "callID": "c1", "tool": "stolen", "state": {"status": "pending"}}
    (outside / "x" / "p1.json").write_text(json.dumps(call))
    (outside / "m1.json").write_text(json.dumps({"id": "../../outside/x", "role": "assistant"}))
    storage = tmp_path / "storage"
    session = _opencode_storage(storage, "ses/../../../outside")
    (storage / "message" / "ses").mkdir(parents=True)  # so the climb resolves
    (storage / "part").mkdir()
    records = list(read_records(session))
    assert not [r for r in records if isinstance(r, CallRecord) and r.tool == "stolen"]
    # and a message id that climbs out of part/ is refused the same way
    session.write_text(json.dumps({"id": "ses_a", "projectID": "proj", "directory": "/w"}))
    (storage / "message" / "ses_a").mkdir()  # a normal session id, a hostile message id
    (storage / "message" / "ses_a" / "m1.json").write_text(
        json.dumps({"id": "../../outside/x", "role": "assistant"})
    )
    records = list(read_records(session))
    assert not [r for r in records if isinstance(r, CallRecord) and r.tool == "stolen"]


# --- memory ------------------------------------------------------------------------------------


def test_claude_rules_linked_to_the_root_folder_walks_nothing(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "rules").symlink_to("/", target_is_directory=True)
    (tmp_path / "CLAUDE.md").write_text("Be brief.\n")
    report = finishes(lambda: measure_memory(tmp_path, "claude"))
    assert [file.path for file in report.files] == ["CLAUDE.md"]


def test_claude_rules_linked_outside_the_repository_are_not_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "leak.md").write_text("Outside text.\n")
    repo = tmp_path / "repo"
    (repo / ".claude").mkdir(parents=True)
    (repo / ".claude" / "rules").symlink_to(outside, target_is_directory=True)
    report = measure_memory(repo, "claude")
    assert not [file for file in report.files if "leak" in file.path]


def test_a_skills_search_does_not_follow_a_link_out_of_its_folder(tmp_path: Path) -> None:
    from pytest_toll.skills.measuring import find_skill_folders

    outside = tmp_path / "outside" / "stolen"
    outside.mkdir(parents=True)
    (outside / "SKILL.md").write_text("---\nname: stolen\ndescription: x\n---\n")
    skills = tmp_path / "repo" / "skills"
    (skills / "mine").mkdir(parents=True)
    (skills / "mine" / "SKILL.md").write_text("---\nname: mine\ndescription: x\n---\n")
    (skills / "away").symlink_to(tmp_path / "outside", target_is_directory=True)
    (skills / "root").symlink_to("/", target_is_directory=True)
    found = finishes(lambda: find_skill_folders(skills))
    assert found == [skills / "mine"]
