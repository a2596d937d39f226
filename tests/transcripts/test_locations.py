"""Where agents keep sessions (a fake HOME), finding them by content, reading them without
writing or copying them, and scrubbing what the scan prints whatever the format."""

from __future__ import annotations

import hashlib
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from pytest_toll import cli
from pytest_toll.core import secrets
from pytest_toll.transcripts.formats import read_records
from pytest_toll.transcripts.locations import agent_roots, default_roots, discover
from pytest_toll.transcripts.records import ResultRecord
from tests.transcripts.agents_data import (
    AGENTS,
    ANTIGRAVITY,
    CLINE_TASKS,
    COPILOT,
    CURSOR,
    GEMINI,
    OPENCODE_TREE,
    OPENHANDS_EVENTS,
    QWEN,
    opencode_database,
)
from tests.transcripts.transcripts_data import FIXTURES, MAIN


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A HOME holding each agent's sessions where that agent keeps them (Linux layout)."""
    home = tmp_path / "home"
    for variable in ("XDG_CONFIG_HOME", "XDG_DATA_HOME", "CODEX_HOME", "APPDATA"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("HOME", str(home))
    places = {
        FIXTURES / "claude": home / ".claude" / "projects",
        GEMINI: home / ".gemini" / "tmp",
        ANTIGRAVITY.parents[3]: home / ".gemini" / "antigravity" / "brain",
        OPENCODE_TREE.parents[2]: home / ".local" / "share" / "opencode" / "storage",
        COPILOT.parents[1]: home / ".copilot" / "session-state",
        QWEN.parents[3]: home / ".qwen" / "projects",
        CLINE_TASKS: home / ".config" / "Code" / "User" / "globalStorage"
        / "saoudrizwan.claude-dev" / "tasks",
        OPENHANDS_EVENTS.parents[2]: home / ".openhands" / "sessions",
        CURSOR.parents[2]: home / ".cursor" / "projects",
    }  # fmt: skip
    for source, target in places.items():
        shutil.copytree(source, target)
    opencode_database(home / ".local" / "share" / "opencode" / "opencode.db")
    return home


def test_default_roots_are_the_installed_agents_folders(home: Path) -> None:
    found = {str(root.relative_to(home)) for root in default_roots()}
    assert found == {
        ".claude/projects", ".gemini/tmp", ".gemini/antigravity/brain", ".local/share/opencode",
        ".copilot/session-state", ".qwen/projects", ".openhands/sessions", ".cursor/projects",
        ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
    }  # fmt: skip
    assert default_roots({"TOLL_TRANSCRIPTS": "/a"}) == [Path("/a")]


def test_agent_roots_honour_xdg_codex_home_and_each_platform(tmp_path: Path) -> None:
    environ = {"XDG_CONFIG_HOME": "/cfg", "XDG_DATA_HOME": "/data", "CODEX_HOME": "/cx"}
    roots = agent_roots(environ, tmp_path, "linux")
    assert ("opencode", Path("/data/opencode")) in roots
    assert ("codex", Path("/cx/sessions")) in roots
    assert ("claude", Path("/cfg/claude/projects")) in roots
    cline = "globalStorage/saoudrizwan.claude-dev/tasks"
    assert ("cline", Path(f"/cfg/Code/User/{cline}")) in roots
    mac = agent_roots({}, tmp_path, "darwin")
    support = tmp_path / "Library" / "Application Support"
    assert ("cline", support / "Code" / "User" / cline) in mac
    assert ("opencode", support / "opencode") in mac
    windows = agent_roots({"APPDATA": str(tmp_path / "Roaming")}, tmp_path, "win32")
    assert ("cline", tmp_path / "Roaming" / "Code - Insiders" / "User" / cline) in windows
    assert ("cline", tmp_path / ".vscode-server" / "data" / "User" / cline) in windows


def test_scan_without_root_says_which_agents_it_found(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["scan"]) == 0
    text = capsys.readouterr().out
    assert (
        "agents: claude 3 sessions, gemini 5 sessions, copilot 1 session, qwen 1 session, "
        "antigravity 1 session, opencode 2 sessions, openhands 1 session, cline 4 sessions, "
        "cursor 1 session"
    ) in text
    assert cli.main(["scan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["agents"]["opencode"] == 2  # tree + database


def test_discovery_by_content_one_file_per_session(tmp_path: Path) -> None:
    shutil.copytree(AGENTS, tmp_path / "agents")
    (tmp_path / "agents" / "settings.json").write_text('{"theme": "dark"}')
    (tmp_path / "agents" / "notes.db").write_bytes(b"not a database")
    found = [path.relative_to(tmp_path / "agents").as_posix() for path in discover([tmp_path])]
    assert "settings.json" not in found and "notes.db" not in found
    # A storage tree is found by its session file, an event store by its first event, a
    # Cline task with its API history once (its ui_messages.json is read beside it).
    assert [path for path in found if path.startswith("opencode/storage")] == [
        "opencode/storage/session/prj_1/ses_1.json"
    ]
    assert [path for path in found if "/events/" in path] == [
        "openhands/sessions/oh-1/events/0.json"
    ]
    assert [path for path in found if "1763900000000" in path] == [
        "cline/globalStorage/saoudrizwan.claude-dev/tasks/1763900000000/api_conversation_history.json"
    ]
    assert len(found) == 22


def _snapshot(root: Path) -> dict[str, tuple[int, str]]:
    return {
        str(path): (path.stat().st_mtime_ns, hashlib.sha256(path.read_bytes()).hexdigest())
        for path in sorted(root.rglob("*"))
        if path.is_file()
    }


def test_sessions_are_read_never_written_or_copied(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _snapshot(home)
    for arguments in (["scan", "--json"], ["scan"], ["drift", "--json"], ["repeats", "--json"]):
        assert cli.main(arguments) == 0
    capsys.readouterr()
    assert _snapshot(home) == before  # no byte, no mtime changed, no file added
    cache = tmp_path / "cache"
    assert cache.is_dir()
    # The cache holds facts (counts, shapes, ids), never a session's text.
    stored = b"".join(path.read_bytes() for path in cache.rglob("*") if path.is_file())
    for text in (b"def answer()", b"fatal: not a git repository", b"grep for TODO"):
        assert text not in stored


def test_a_database_in_wal_mode_gets_no_files_beside_it(tmp_path: Path) -> None:
    database = opencode_database(tmp_path / "opencode.db")
    connection = sqlite3.connect(database)
    connection.execute("pragma journal_mode=wal")
    connection.close()  # OpenCode has quit: its log is checkpointed and gone
    before = _snapshot(tmp_path)
    assert [r.call_id for r in read_records(database) if isinstance(r, ResultRecord)] == [
        "toolu_db1",
        "toolu_db2",
    ]
    assert _snapshot(tmp_path) == before


def test_the_scrubber_applies_to_every_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    token = "sk-live-1234567890abcdef"
    shutil.copytree(AGENTS, tmp_path / "agents")
    qwen = tmp_path / "agents" / "qwen" / "projects" / "-w" / "chats" / "qw-1.jsonl"
    qwen.write_text(qwen.read_text().replace("go build ./...", f"curl -H {token} x"))
    secrets.remember(token)
    try:
        assert cli.main(["repeats", "--root", str(tmp_path / "agents"), "--json"]) == 0
        assert cli.main(["scan", "--root", str(tmp_path / "agents"), "--json"]) == 0
    finally:
        secrets.forget_all()
    out = capsys.readouterr().out
    assert token not in out


def test_claude_roots_still_found_beside_the_others() -> None:
    assert MAIN in discover([FIXTURES])


def test_a_change_anywhere_in_a_storage_tree_is_seen_through_the_cache(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    storage = tmp_path / "opencode" / "storage"
    shutil.copytree(OPENCODE_TREE.parents[2], storage)
    root = ["--root", str(tmp_path / "opencode"), "--json"]
    assert cli.main(["scan", *root]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 4
    # A part written later (the session file itself unchanged): the cached summary is stale.
    (storage / "part" / "msg_2" / "prt_299.json").write_text(
        json.dumps(
            {"id": "prt_299", "messageID": "msg_2", "type": "tool", "callID": "toolu_oc9",
             "tool": "glob", "state": {"status": "completed", "input": {"pattern": "*"},
                                       "output": "a.py"}}
        )
    )  # fmt: skip
    assert cli.main(["scan", *root]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 5
