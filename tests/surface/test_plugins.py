"""A plugin as one entry whose parts are its components, each by its own kind's rules."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_toll.skills.measuring import measure_skills
from pytest_toll.surface.agents import AGENT, COMMAND, measure_delegates
from pytest_toll.surface.plugins import marketplace_plugins, measure_plugin

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "surface"
MARKET = FIXTURES / "wshobson-agents"
PLUGIN = MARKET / "plugins" / "git-pr-workflows"
DEMO_SKILLS = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills"


def test_a_real_marketplace_lists_its_plugin_and_the_plugin_its_components() -> None:
    listed, notes = marketplace_plugins(MARKET)
    assert [(name, folder.relative_to(MARKET).as_posix()) for name, folder in listed] == [
        ("git-pr-workflows", "plugins/git-pr-workflows")
    ]
    assert notes == []
    report = measure_plugin(PLUGIN)
    assert report.name == "git-pr-workflows"  # plugin.json's name
    agents = measure_delegates(PLUGIN / "agents", AGENT, root=PLUGIN)
    commands = measure_delegates(PLUGIN / "commands", COMMAND, root=PLUGIN)
    expected = {f"agents/{a.name}": (a.metadata, a.body) for a in agents.delegates}
    expected |= {f"commands/{c.name}": (c.metadata, c.body) for c in commands.delegates}
    assert {c.name: (c.always_on, c.later) for c in report.components} == expected
    assert report.total == agents.totals["metadata"] + commands.totals["metadata"]


def test_skills_hooks_and_mcp_servers_of_a_plugin(tmp_path: Path) -> None:
    plugin = tmp_path / "kit"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin/plugin.json").write_text(
        json.dumps({"name": "kit", "commands": "./cmds"}), encoding="utf-8"
    )
    (plugin / "cmds").mkdir()
    (plugin / "cmds/go.md").write_text("---\ndescription: Go\n---\nGo now.\n", encoding="utf-8")
    (plugin / "commands").mkdir()  # ignored: plugin.json names ./cmds instead
    (plugin / "commands/ignored.md").write_text("ignored\n", encoding="utf-8")
    import shutil

    shutil.copytree(DEMO_SKILLS, plugin / "skills")
    (plugin / "skills/bad").mkdir()
    (plugin / "skills/bad/SKILL.md").write_text(
        "---\nname: Bad Name\ndescription: Does things.\n---\nbody\n", encoding="utf-8"
    )
    (plugin / "hooks").mkdir()
    (plugin / "hooks/hooks.json").write_text(
        json.dumps({"hooks": {"SessionStart": [], "Stop": []}}), encoding="utf-8"
    )
    (plugin / ".mcp.json").write_text(json.dumps({"mcpServers": {"db": {}}}), encoding="utf-8")
    report = measure_plugin(plugin)
    skills = measure_skills(plugin / "skills")
    assert "commands/ignored" not in [c.name for c in report.components]
    names = [c.name for c in report.components]
    assert names == [*(f"skills/{s.name}" for s in skills.skills), "commands/go"]
    assert report.hooks == ("SessionStart", "Stop") and report.mcp_servers == ("db",)
    assert report.total == skills.totals["metadata"] + next(
        c.always_on for c in report.components if c.name == "commands/go"
    )
    # A skill's findings (S1xx, as for any skill) come with the plugin, named by component.
    assert skills.findings
    assert sorted((f.rule, f.subject) for f in report.findings) == sorted(
        (f.rule, f"skills/{f.subject}") for f in skills.findings
    )
    assert ("S101", "skills/Bad Name") in {(f.rule, f.subject) for f in report.findings}


def test_marketplace_entries_outside_the_repository_are_notes(tmp_path: Path) -> None:
    (tmp_path / ".claude-plugin").mkdir()
    (tmp_path / ".claude-plugin/marketplace.json").write_text(
        json.dumps(
            {
                "plugins": [
                    {"name": "remote", "source": {"source": "github", "repo": "o/r"}},
                    {"name": "escape", "source": "../elsewhere"},
                    {"source": "./x"},
                ]
            }
        ),
        encoding="utf-8",
    )
    listed, notes = marketplace_plugins(tmp_path)
    assert listed == []
    assert notes == [
        ".claude-plugin/marketplace.json: remote lives outside this repository",
        ".claude-plugin/marketplace.json: escape: ../elsewhere is not a folder here",
        ".claude-plugin/marketplace.json: plugins[2] has no name; skipped",
    ]


def _root_plugin(root: Path) -> None:
    """A repository that is a plugin and its own marketplace (obra/superpowers' layout)."""
    (root / ".claude-plugin").mkdir(parents=True)
    (root / ".claude-plugin/plugin.json").write_text('{"name": "superpowers"}', encoding="utf-8")
    (root / ".claude-plugin/marketplace.json").write_text(
        json.dumps({"plugins": [{"name": "superpowers-dev", "source": "./"}]}), encoding="utf-8"
    )
    skill = root / "skills" / "brainstorm"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: brainstorm\ndescription: Use when an idea needs shaping.\n---\nAsk.\n",
        encoding="utf-8",
    )


def test_a_root_plugin_is_one_plugin_named_by_its_manifest(tmp_path: Path) -> None:
    from pytest_toll.cli.surface import measure_surface
    from pytest_toll.gate.discovery import find_plugins, walk

    root = tmp_path / "checkout-folder"
    _root_plugin(root)
    surface = measure_surface(root, None, None, 32768)
    assert [(p.name, [c.name for c in p.components]) for p in surface.plugins] == [
        ("superpowers", ["skills/brainstorm"])
    ]
    found, _ = find_plugins(walk(root))
    assert [(f.name, f.entry) for f in found] == [("superpowers", {"path": "."})]
