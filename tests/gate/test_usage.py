"""Cost per use: the SDK test server's tools (a real process) joined with transcript
fixtures (tests/fixtures/usage, written by tests/fixtures/transcripts/build.py
``usage_sessions``), per host; E131; and ``toll usage --fix``, which writes the hosts' own settings only with ``--write``, re-read
here through our own parsers."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from pytest_toll.core.parse import load_json, load_toml
from pytest_toll.definitions.source import weigh_source
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.usage import usage_report
from pytest_toll.transcripts.scan import ReadOptions, read_summaries
from pytest_toll.transcripts.usage import call_names, calls_of, session_calls
from tests.cli import run_main

SERVERS = Path(__file__).resolve().parents[1] / "servers"
SDK_SERVER = [sys.executable, str(SERVERS / "sdk_server.py")]
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "usage"
#: The fixtures' files, oldest first: their order decides which sessions are the newest.
ORDER = ("claude/use-1.jsonl", "claude/use-2.jsonl", "codex/rollout-2026-11-02-use-codex.jsonl")


@pytest.fixture
def transcripts(tmp_path: Path) -> Path:
    copy = tmp_path / "transcripts"
    shutil.copytree(FIXTURES, copy)
    for age, name in enumerate(ORDER):
        stamp = 1_700_000_000 + age * 60
        os.utime(copy / name, (stamp, stamp))
    return copy


@pytest.fixture(scope="module")
def weighed() -> dict[str, int]:
    report = weigh_source(command=SDK_SERVER)
    return {row.name: int(row.tokens) for row in report.tools}


def test_every_host_name_of_a_tool() -> None:
    names = call_names("my-files", "read.file")
    assert "mcp__my-files__read.file" in names  # as written
    assert "mcp__my-files__read_file" in names  # Claude Code's characters
    assert "mcp__my_files__read_file" in names  # Codex's ("-" refused too)
    assert "my-files__read.file" in names  # Codex before 0.40
    assert "mcp_my-files_read.file" in names  # Gemini CLI keeps "-" and "."


def test_codex_cuts_a_long_name_to_its_head_and_sha1() -> None:
    tool = "list_every_repository_in_the_organisation_with_topics"
    full = f"mcp__github__{tool}"
    cut = full[:24] + hashlib.sha1(full.encode()).hexdigest()
    assert len(cut) == 64
    assert cut in call_names("github", tool)


def test_calls_counted_once_by_id_newest_first(transcripts: Path) -> None:
    files = session_calls(read_summaries([transcripts], ReadOptions()))
    assert [Path(file.path).name for file in files] == [Path(name).name for name in ORDER[::-1]]
    read = calls_of(files, call_names("files", "read_file"))
    # r1 is in both Claude Code files (a resumed session copies it): counted once, in the
    # newer file, where the scan met it first; r2 in the older.
    assert (read.calls, read.sessions) == (2, 2)
    assert calls_of(files, call_names("files", "search")).calls == 1  # Codex's call
    assert calls_of(files, call_names("files", "write_file")).calls == 0


def test_the_server_joined_per_host(transcripts: Path, weighed: dict[str, int]) -> None:
    report = usage_report(
        {"files": {"command": SDK_SERVER}},
        {"roots": [str(transcripts)]},
        EntryContext(root=transcripts.parent),
        hosts=("claude-code", "codex", "gemini-cli"),
    )
    rows = {row.tool: row for row in report.tools}
    assert set(rows) == set(weighed)
    for tool, tokens in weighed.items():
        # Claude Code defers MCP tools; Codex and Gemini CLI send them on every request.
        assert rows[tool].per_request == {"claude-code": 0, "codex": tokens, "gemini-cli": tokens}
    assert (report.sessions, report.sessions_found) == (3, 3)
    [server] = report.servers
    total = sum(weighed.values())
    assert server.per_request == {"claude-code": 0, "codex": total, "gemini-cli": total}
    assert (server.calls, server.sessions) == (3, 3)  # two reads, one search
    assert [(f.rule, f.severity, f.subject) for f in report.findings] == [
        ("E131", "warn", "mcp__files__write_file")
    ]
    write = weighed["write_file"]
    assert report.findings[0].message == (
        f"costs {write} tok on every request (codex, gemini-cli; deferred by claude-code); "
        f"0 calls in 3 sessions; leaving the tool out saves {write * 1000:,} tok per 1,000 "
        "requests"
    )


def test_only_the_newest_sessions_count(transcripts: Path) -> None:
    report = usage_report(
        {"files": {"command": SDK_SERVER}},
        {"roots": [str(transcripts)], "unused_after_sessions": 1},
        EntryContext(root=transcripts.parent),
        hosts=("codex",),
    )
    # The newest session is Codex's, which only searched.
    assert report.sessions == 1
    assert sorted(f.subject or "" for f in report.findings) == [
        "mcp__files__read_file",
        "mcp__files__write_file",
    ]


def test_a_server_nobody_calls_is_one_finding(transcripts: Path, weighed: dict[str, int]) -> None:
    report = usage_report(
        {"other": {"command": SDK_SERVER}},
        {"roots": [str(transcripts)]},
        EntryContext(root=transcripts.parent),
        hosts=("codex", "claude-code"),
    )
    assert [(f.subject, f.message.split(";")[0]) for f in report.findings] == [
        ("mcp__other", f"costs {sum(weighed.values())} tok on every request (codex")
    ]


def test_a_host_deferring_everything_finds_nothing(transcripts: Path) -> None:
    report = usage_report(
        {"files": {"command": SDK_SERVER}},
        {"roots": [str(transcripts)]},
        EntryContext(root=transcripts.parent),
        hosts=("claude-code",),
    )
    assert report.findings == ()
    assert all(row.per_request == {"claude-code": 0} for row in report.tools)


def _repository(tmp_path: Path, transcripts: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    command = json.dumps(SDK_SERVER)
    (root / "toll.yaml").write_text(
        "version: 1\n"
        "servers:\n"
        f"  files: {{command: {command}}}\n"
        f"  other: {{command: {command}}}\n"
        f"transcripts:\n  roots: [{json.dumps(str(transcripts))}]\n",
        encoding="utf-8",
    )
    (root / ".codex").mkdir()
    (root / ".codex" / "config.toml").write_text(
        '# my servers\n[mcp_servers.files]\ncommand = "python3"\nargs = ["server.py"]\n\n'
        '[mcp_servers.other]\ncommand = "python3"\n',
        encoding="utf-8",
    )
    (root / ".gemini").mkdir()
    (root / ".gemini" / "settings.json").write_text(
        json.dumps({"mcpServers": {"files": {"command": "python3"}}}), encoding="utf-8"
    )
    (root / ".mcp.json").write_text(
        json.dumps({"mcpServers": {"other": {"command": "python3"}}}), encoding="utf-8"
    )
    return root


@pytest.mark.slow
def test_fix_proposes_and_writes_only_with_write(
    tmp_path: Path, transcripts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _repository(tmp_path, transcripts)
    before = {path: path.read_bytes() for path in root.rglob("*") if path.is_file()}
    cwd = Path.cwd()
    os.chdir(root)
    try:
        code, out, _ = run_main(capsys, "usage", "--no-cache", "--fix")
        assert code == 0
        assert "proposals (nothing is written without --write)" in out
        assert {path: path.read_bytes() for path in root.rglob("*") if path.is_file()} == before
        code, out, _ = run_main(capsys, "usage", "--no-cache", "--fix", "--write", "--json")
    finally:
        os.chdir(cwd)
    assert code == 0
    data = json.loads(out)
    assert sorted(data["written"]) == [
        ".claude/settings.local.json",
        ".codex/config.toml",
        ".gemini/settings.json",
    ]
    codex_text = (root / ".codex" / "config.toml").read_text(encoding="utf-8")
    codex = load_toml(codex_text, "config.toml")
    # One Codex change per run (each is built from the file as it is): the first, for files.
    assert codex["mcp_servers"]["files"] == {
        "command": "python3",
        "args": ["server.py"],
        "disabled_tools": ["write_file"],
    }
    assert codex["mcp_servers"]["other"] == {"command": "python3"}
    assert codex_text.startswith("# my servers\n")  # the rest of the file as it was
    gemini = load_json((root / ".gemini" / "settings.json").read_text(), "settings.json")
    assert gemini["mcpServers"]["files"]["excludeTools"] == ["write_file"]
    claude = load_json((root / ".claude" / "settings.local.json").read_text(), "settings")
    assert claude == {"disabledMcpjsonServers": ["other"]}
    advice = [p for p in data["proposals"] if not p["writable"]]
    assert {(p["host"], p["setting"]) for p in advice} == {
        ("codex", "[mcp_servers.other] enabled = false"),
        ("gemini-cli", '"mcp": {"excluded": ["other"]}'),
    }


@pytest.mark.parametrize(
    ("setting", "eager"),
    [("false", True), ("auto", False), ("auto:50", True), ("true", False)],
)
def test_claude_code_follows_the_repository_tool_search(
    transcripts: Path, weighed: dict[str, int], setting: str, eager: bool
) -> None:
    """Tool search off, or a threshold the tools stay under (auto:50 of a 1,000-token
    window: the SDK server's ~270 tok stay under 500), sends them on every request; auto's
    10% they cross, so they are deferred."""
    root = transcripts.parent
    (root / ".claude").mkdir()
    (root / ".claude" / "settings.json").write_text(
        json.dumps({"env": {"ENABLE_TOOL_SEARCH": setting}}), encoding="utf-8"
    )
    report = usage_report(
        {"files": {"command": SDK_SERVER}},
        {"roots": [str(transcripts)]},
        EntryContext(root=root, window=1000),
        hosts=("claude-code",),
    )
    rows = {row.tool: row.per_request["claude-code"] for row in report.tools}
    assert rows == (weighed if eager else dict.fromkeys(weighed, 0))


@pytest.mark.slow
def test_fix_turns_tool_search_back_on(
    tmp_path: Path, transcripts: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = _repository(tmp_path, transcripts)
    (root / ".claude").mkdir()
    team = root / ".claude" / "settings.json"
    team.write_text(
        json.dumps({"model": "opus", "env": {"ENABLE_TOOL_SEARCH": "false", "X": "1"}}),
        encoding="utf-8",
    )
    cwd = Path.cwd()
    os.chdir(root)
    try:
        code, out, _ = run_main(
            capsys, "usage", "--no-cache", "--host", "claude-code", "--fix", "--write", "--json"
        )
    finally:
        os.chdir(cwd)
    assert code == 0
    data = json.loads(out)
    assert ".claude/settings.json" in data["written"]
    settings = load_json(team.read_text(encoding="utf-8"), "settings.json")
    assert settings == {"model": "opus", "env": {"ENABLE_TOOL_SEARCH": "true", "X": "1"}}
    assert all(tool["per_request"]["claude-code"] == tool["tokens"] for tool in data["tools"])
