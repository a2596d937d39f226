"""Subagents and commands at their two levels, judged by A101–A103."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import RuleOverrides
from pytest_toll.surface.agents import AGENT, COMMAND, measure_delegates
from pytest_toll.surface.files import split_frontmatter

PLUGIN = (
    Path(__file__).resolve().parents[1]
    / "fixtures/surface/wshobson-agents/plugins/git-pr-workflows"
)


def count(text: str) -> int:
    return tokens.O200kCounter().count(text)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_a_real_subagent_lists_name_and_description_and_loads_its_body() -> None:
    path = PLUGIN / "agents" / "code-reviewer.md"
    report = measure_delegates(path, AGENT, root=PLUGIN)
    (agent,) = report.delegates
    split = split_frontmatter(path.read_text(encoding="utf-8"), "code-reviewer.md")
    assert agent.name == "git-pr-workflows-code-reviewer" == split.fields["name"]
    assert agent.metadata == count(f"{agent.name}: {split.fields['description'].strip()}")
    assert agent.body == count(split.body)
    # "Use PROACTIVELY for …" says when: no A102.
    assert [f.rule for f in report.findings] == []


def test_real_commands_take_the_first_line_when_there_is_no_description() -> None:
    report = measure_delegates(PLUGIN / "commands", COMMAND, root=PLUGIN)
    by_name = {c.name: c for c in report.delegates}
    assert sorted(by_name) == ["git-workflow", "onboard", "pr-enhance"]
    onboard = by_name["onboard"]
    assert onboard.description == "Onboard" and onboard.description_source == "first line"
    assert onboard.metadata == count("onboard: Onboard")
    assert report.totals == {
        "metadata": sum(c.metadata for c in report.delegates),
        "body": sum(c.body for c in report.delegates),
    }


def test_commands_in_subfolders_are_namespaced_either_way_they_are_named(tmp_path: Path) -> None:
    path = write(
        tmp_path / ".claude/commands/git/commit.md", "---\ndescription: Commit\n---\nDo it\n"
    )
    whole = measure_delegates(tmp_path / ".claude/commands", COMMAND, root=tmp_path)
    one = measure_delegates(path, COMMAND, root=tmp_path)
    assert whole.delegates[0].name == one.delegates[0].name == "git:commit"
    # Claude Code lists it under its folder-prefixed name.
    assert one.delegates[0].metadata == count("git:commit: Commit")


def test_a_command_the_model_may_not_invoke_is_not_listed(tmp_path: Path) -> None:
    write(
        tmp_path / ".claude/commands/release.md",
        "---\ndisable-model-invocation: true\n---\nTag and publish.\n",
    )
    write(tmp_path / ".claude/commands/ship.md", "---\ndescription: Ship it\n---\nShip.\n")
    report = measure_delegates(tmp_path / ".claude/commands", COMMAND, root=tmp_path)
    by_name = {c.name: c for c in report.delegates}
    assert by_name["release"].metadata == 0 and not by_name["release"].listed
    assert by_name["release"].body == count("Tag and publish.\n")
    assert by_name["ship"].metadata == count("ship: Ship it")
    # No description, but never listed: nothing for A101 to say.
    assert report.findings == ()


def test_codex_toml_agents(tmp_path: Path) -> None:
    write(
        tmp_path / ".codex/agents/reviewer.toml",
        'name = "reviewer"\ndescription = "Reviews diffs. Use when a PR is ready."\n'
        'developer_instructions = """\nRead the diff.\n"""\n',
    )
    write(tmp_path / ".codex/agents/broken.toml", "name = \n")
    report = measure_delegates(tmp_path / ".codex/agents", AGENT, root=tmp_path)
    by_name = {a.name: a for a in report.delegates}
    assert by_name["reviewer"].body == count("Read the diff.\n")
    assert by_name["reviewer"].metadata == count("reviewer: Reviews diffs. Use when a PR is ready.")
    (finding,) = report.findings
    assert (
        finding.rule == "A101"
        and finding.severity == "error"
        and "not valid TOML" in finding.message
    )


def test_a_rules(tmp_path: Path) -> None:
    agents = tmp_path / ".claude/agents"
    write(agents / "silent.md", "---\nname: silent\n---\nbody\n")
    write(agents / "vague.md", "---\nname: vague\ndescription: Reviews code carefully.\n---\nb\n")
    write(agents / "nameless.md", "---\ndescription: Use when asked.\n---\nb\n")
    long_description = "Use when reviewing. " + "Very thorough reviewer of code. " * 80
    write(agents / "long.md", f"---\nname: long\ndescription: {long_description}\n---\nb\n")
    report = measure_delegates(agents, AGENT, root=tmp_path)
    found = sorted((f.rule, f.severity, f.subject) for f in report.findings)
    assert found == [
        ("A101", "error", "nameless"),
        ("A101", "error", "silent"),
        ("A102", "warn", "vague"),
        ("A103", "warn", "long"),
    ]
    quieter = RuleOverrides.parse({"A102": "off"}, {"agent_metadata_tokens": 10_000})
    report = measure_delegates(agents, AGENT, root=tmp_path, settings=quieter)
    assert sorted(f.rule for f in report.findings) == ["A101", "A101"]


def test_a_description_yaml_refuses_is_read_as_the_host_reads_it(tmp_path: Path) -> None:
    # The shape of the subagents in Claude Code's own plugins: <example> blocks with
    # unquoted "Context: …" lines inside the description.
    text = (
        "---\nname: helper\ndescription: Use this agent when asked. Examples:\n\n<example>\n"
        'Context: a user asks\nuser: "help"\n</example>\nmodel: inherit\n---\nBody.\n'
    )
    write(tmp_path / "helper.md", text)
    (agent,) = measure_delegates(tmp_path / "helper.md", AGENT, root=tmp_path).delegates
    assert agent.problem is None
    assert agent.description.startswith("Use this agent when asked.")
    assert agent.description.endswith("</example>") and "model" not in agent.description


def test_nothing_to_measure_is_could_not_judge(tmp_path: Path) -> None:
    (tmp_path / "agents").mkdir()
    with pytest.raises(CouldNotJudge, match="no subagent"):
        measure_delegates(tmp_path / "agents", AGENT)
    with pytest.raises(CouldNotJudge, match="no such file"):
        measure_delegates(tmp_path / "missing", COMMAND)


def test_a_file_outside_the_repository_is_not_read(tmp_path: Path) -> None:
    outside = write(tmp_path / "outside.md", "---\ndescription: x\n---\n")
    (tmp_path / "repo").mkdir()
    with pytest.raises(CouldNotJudge, match="outside the repository"):
        measure_delegates(outside, COMMAND, root=tmp_path / "repo")
