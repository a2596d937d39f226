"""``toll init``'s discovery: skills and MCP configs wherever they live (issue #25, item 1),
servers copied without literal secrets and with floating packages pinned or named (items 7
and #24.3), and a repository with nothing to measure refused with a clear message."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from pytest_toll.cli import main
from pytest_toll.cli.init import EXIT_NOTHING_TO_MEASURE
from pytest_toll.core.secrets import forget_all, scrub
from pytest_toll.gate.discovery import walk
from pytest_toll.gate.starter import discover
from pytest_toll.surface.memory import hosts_in

DEMO_SKILL = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills" / "release-notes"


def skill(at: Path) -> Path:
    shutil.copytree(DEMO_SKILL, at)
    return at


def config(path: Path, servers: dict[str, object], key: str | None = "mcpServers") -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({key: servers} if key else servers), encoding="utf-8")


def test_skills_are_found_wherever_they_live_and_grouped_by_place(tmp_path: Path) -> None:
    skill(tmp_path / "libs" / "cli" / "examples" / "skills" / "release-notes")
    skill(tmp_path / "src" / "server" / "skills" / "release-notes")
    skill(tmp_path / "plugins" / "writer" / "skills" / "notes")
    skill(tmp_path / ".claude" / "skills" / "release-notes")
    # A skill's own files are its data: an example SKILL.md inside one is no second skill.
    skill(tmp_path / "plugins" / "writer" / "skills" / "notes" / "references" / "example")
    found = discover(tmp_path)
    assert tuple((skill.name, skill.entry["path"]) for skill in found.found["skills"]) == (
        (".claude/skills/release-notes".rsplit("/", 1)[1], ".claude/skills/release-notes"),
        ("cli-release-notes", "libs/cli/examples/skills/release-notes"),
        ("notes", "plugins/writer/skills/notes"),
        ("server-release-notes", "src/server/skills/release-notes"),
    )
    assert found.where() == [
        ".claude/skills/: 1 skill(s)",
        "libs/cli/examples/skills/: 1 skill(s)",
        "plugins/writer/skills/: 1 skill(s)",
        "src/server/skills/: 1 skill(s)",
        # .claude/skills is Claude Code's: its fixed cost gets an entry of its own.
        "hosts: claude-code",
    ]


def test_the_walk_skips_dependencies_and_follows_each_folder_once(tmp_path: Path) -> None:
    for skipped in (".git", "node_modules/pkg", "build", "dist", "env"):
        skill(tmp_path / skipped / "skills" / "hidden")
    (tmp_path / "env" / "pyvenv.cfg").write_text("home = /usr\n", encoding="utf-8")
    skill(tmp_path / "real" / "skills" / "kept")
    os.symlink(tmp_path / "real", tmp_path / "link")  # the same folder twice
    os.symlink(tmp_path, tmp_path / "real" / "loop")  # and a loop back to the root
    outside = skill(tmp_path.parent / f"{tmp_path.name}-outside" / "skills" / "far").parent
    os.symlink(outside.parent, tmp_path / "elsewhere")  # out of the repository: not followed
    tree = walk(tmp_path)
    assert tree.skill_folders in (("link/skills/kept",), ("real/skills/kept",))


def test_mcp_configs_in_subprojects_and_plugins(tmp_path: Path) -> None:
    config(tmp_path / ".mcp.json", {"docs": {"type": "http", "url": "https://d.test/mcp"}})
    # A plugin's .mcp.json may hold its servers at the top level; ${CLAUDE_PLUGIN_ROOT} is
    # the plugin's folder.
    (tmp_path / "plugins" / "chat" / ".claude-plugin").mkdir(parents=True)
    config(
        tmp_path / "plugins" / "chat" / ".mcp.json",
        {"chat": {"command": "bun", "args": ["run", "--cwd", "${CLAUDE_PLUGIN_ROOT}"]}},
        key=None,
    )
    # The same name elsewhere, declared the same: kept once; declared differently: both.
    config(
        tmp_path / ".cursor" / "mcp.json", {"docs": {"type": "http", "url": "https://d.test/mcp"}}
    )
    config(tmp_path / "apps" / "web" / ".mcp.json", {"docs": {"url": "https://other.test/mcp"}})
    config(tmp_path / "packages" / "data" / "mcp.json", {"unrelated": True}, key="data")
    found = discover(tmp_path)
    assert [(s.name, s.origin, dict(s.entry)) for s in found.found["servers"]] == [
        ("docs", ".mcp.json", {"url": "https://d.test/mcp"}),
        ("web-docs", "apps/web/.mcp.json", {"url": "https://other.test/mcp"}),
        ("chat", "plugins/chat/.mcp.json", {"command": ["bun", "run", "--cwd", "plugins/chat"]}),
    ]
    assert found.notes == (
        ".cursor/mcp.json: docs: the same server as in .mcp.json; kept once",
        "apps/web/.mcp.json: docs: also declared in .mcp.json, differently; written as web-docs",
    )


def test_a_literal_secret_is_never_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    forget_all()
    token = "ghp_" + "a1B2c3D4e5F6g7H8i9J0k1L2"
    config(
        tmp_path / ".mcp.json",
        {
            "gh": {
                "type": "http",
                "url": "http://127.0.0.1:9/mcp",
                "headers": {"Authorization": f"Bearer {token}", "Accept": "application/json"},
            },
            "local": {
                "command": "no-such-program",
                "env": {"GITHUB_TOKEN": token, "LOG_LEVEL": "debug", "KEY": "${KEY:-none}"},
            },
        },
    )
    skill(tmp_path / "skills" / "release-notes")
    monkeypatch.chdir(tmp_path)
    assert main(["init"]) == 0
    text = (tmp_path / "toll.yaml").read_text(encoding="utf-8")
    assert token not in text and token[4:] not in text
    assert (
        'headers: {Authorization: "Bearer ${GH_AUTHORIZATION}", Accept: "application/json"}' in text
    )
    assert '"GITHUB_TOKEN": "${GITHUB_TOKEN}"' in text or 'GITHUB_TOKEN: "${GITHUB_TOKEN}"' in text
    assert 'LOG_LEVEL: "debug"' in text and 'KEY: "${KEY:-none}"' in text
    assert "Set GITHUB_TOKEN in the environment pytest --toll runs in (a CI secret)." in text
    assert "Set GH_AUTHORIZATION in the environment pytest --toll runs in" in text
    assert scrub("Bearer and more") == "Bearer and more"


def test_floating_packages_are_pinned_from_the_lockfile_or_named(tmp_path: Path) -> None:
    (tmp_path / "package-lock.json").write_text(
        json.dumps({"packages": {"node_modules/@scope/srv": {"version": "1.4.2"}}}),
        encoding="utf-8",
    )
    (tmp_path / "uv.lock").write_text(
        'version = 1\n\n[[package]]\nname = "py-srv"\nversion = "0.9.1"\n', encoding="utf-8"
    )
    config(
        tmp_path / ".mcp.json",
        {
            "node": {"command": "npx", "args": ["-y", "@scope/srv"]},
            "python": {"command": "uvx", "args": ["py_srv"]},
            "latest": {"command": "npx", "args": ["-y", "other@latest"]},
            "fixed": {"command": "npx", "args": ["-y", "other@2.0.0"]},
        },
    )
    servers = {server.name: server for server in discover(tmp_path).found["servers"]}
    assert servers["node"].entry["command"] == ["npx", "-y", "@scope/srv@1.4.2"]
    assert servers["node"].comments == (
        "from .mcp.json",
        "npx @scope/srv: pinned to 1.4.2, the version package-lock.json records",
    )
    assert servers["python"].entry["command"] == ["uvx", "py_srv@0.9.1"]
    assert servers["latest"].entry["command"] == ["npx", "-y", "other@latest"]
    assert "not pinned, so each run fetches the newest other" in servers["latest"].comments[1]
    assert servers["fixed"].comments == ("from .mcp.json",)


def test_nothing_to_measure_writes_no_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# no agent surface here\n", encoding="utf-8")
    assert main(["init"]) == EXIT_NOTHING_TO_MEASURE == 2
    assert "nothing to measure in" in capsys.readouterr().err
    # Only servers, none of which can be measured: no ledger of comments (pytest exit 5).
    config(tmp_path / ".mcp.json", {"gone": {"command": str(tmp_path / "no-such-server")}})
    assert main(["init"]) == EXIT_NOTHING_TO_MEASURE
    err = capsys.readouterr().err
    assert "nothing toll init could measure" in err and "command not found" in err
    assert not (tmp_path / "toll.yaml").exists()


def test_a_server_found_in_a_subproject_is_measured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    server = Path(__file__).resolve().parents[1] / "servers" / "sdk_server.py"
    config(
        tmp_path / "services" / "api" / ".mcp.json",
        {"files": {"command": sys.executable, "args": ["${TOLL_T_SERVER:-" + str(server) + "}"]}},
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("TOLL_T_SERVER", raising=False)
    assert main(["init"]) == 0
    out = capsys.readouterr()
    assert "found services/api/.mcp.json: 1 server(s)" in out.err
    assert "wrote toll.yaml: 1 server(s), 0 skill(s)" in out.out
    assert "      read_file: " in (tmp_path / "toll.yaml").read_text(encoding="utf-8")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_surface_is_found_through_the_one_walk_as_its_hosts_read_it(tmp_path: Path) -> None:
    """Memory files, subagents and commands come from the walk, not a search of their own:
    a config folder reached through a symlink is read through it, a symlinked folder below
    one is not entered, and nothing outside the repository is listed."""
    root = tmp_path / "repo"
    _write(root / ".claude" / "rules" / "style.md", "Use tabs.\n")
    # .cursor/rules links to a folder the walk lists first (.ai sorts before .cursor).
    _write(root / ".ai" / "rules" / "always.mdc", "---\nalwaysApply: true\n---\nBe brief.\n")
    (root / ".cursor").mkdir()
    os.symlink("../.ai/rules", root / ".cursor" / "rules")
    _write(root / ".claude" / "commands" / "git" / "commit.md", "Commit it.\n")
    _write(root / ".claude" / "commands" / "review.md", "Review the diff.\n")
    _write(root / "docs" / "commands" / "extra.md", "Not a command: reached by a link.\n")
    os.symlink("../../docs/commands", root / ".claude" / "commands" / "shared")
    _write(root / ".claude" / "agents" / "reviewer.md", "---\nname: critic\n---\nBe harsh.\n")
    _write(root / ".claude" / "agents" / "notes.txt", "not a subagent\n")
    _write(tmp_path / "outside" / "spy.toml", 'name = "spy"\n')
    (root / ".codex").mkdir()
    os.symlink(tmp_path / "outside", root / ".codex" / "agents")
    os.symlink(root / "no-such-file", root / "GEMINI.md")  # dangling: no host reads it
    _write(root / "AGENTS.md", "Run the tests.\n")

    found = discover(root).found
    memory = [entry.name for entry in found["memory"]]
    assert memory == ["claude", "codex", "cursor"] == hosts_in(root)
    assert [(entry.name, entry.entry["path"]) for entry in found["commands"]] == [
        ("git:commit", ".claude/commands/git/commit.md"),
        ("review", ".claude/commands/review.md"),
    ]
    assert [(entry.name, entry.entry["path"]) for entry in found["agents"]] == [
        ("critic", ".claude/agents/reviewer.md")
    ]
    assert found["plugins"] == ()
