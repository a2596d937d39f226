"""Subagents and commands: a frontmatter and a body, the metadata always on.

Claude Code's sub-agents page (docs.anthropic.com/en/docs/claude-code/sub-agents and its
code.claude.com twin, found with the search tool) says each subagent "uses its own context
window separate from the main conversation" and that Claude delegates when a task matches a
subagent's description: the description is listed, the body (its system prompt) is not.
A host lists each subagent (``.claude/agents/*.md``; Codex's ``.codex/agents/*.toml``) and
each command (``.claude/commands/**/*.md``) to the model by name and description on every
request; the body loads only when a subagent is delegated to (in the subagent's own
context) or a command is invoked. Both levels are measured in o200k tokens; the listing is
``name: description`` as for a skill, the host's bullet and slash left out.

A command's description is its frontmatter ``description``, else "First line of command
prompt" (the command-development reference that ships in anthropics/claude-code's plugin-dev
plugin, found with the search tool). Claude Code (the row of :mod:`pytest_toll.core.hosts`)
lists a command in a subfolder by its folder: ``git/commit.md`` is ``git:commit``, and the
listing counted is ``git:commit: description``; a command with
``disable-model-invocation: true`` is not listed to the model at all (only the user runs
it): its metadata is 0 and no listing rule applies to it. A Codex agent is TOML with ``name``, ``description`` and
``developer_instructions`` (its body), as Codex's subagent docs describe.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core import tokens
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import RuleOverrides, worst_first
from pytest_toll.core.hosts import CLAUDE_CODE
from pytest_toll.core.parse import ParseError, load_toml
from pytest_toll.core.textio import walk_inside
from pytest_toll.skills.records import metadata_text
from pytest_toll.surface import rules as surface_rules
from pytest_toll.surface.files import read_text_inside, relative, split_frontmatter, walk_files
from pytest_toll.surface.records import Delegate
from pytest_toll.surface.report import DelegatesReport

AGENT = "agent"
COMMAND = "command"
#: Where a project keeps them, relative to the repository root.
AGENT_FOLDERS = (".claude/agents", ".codex/agents")
COMMAND_FOLDERS = (".claude/commands",)
#: The files that are subagents (in their folder, not below it) and commands (at any depth).
AGENT_SUFFIXES = (".md", ".toml")
COMMAND_SUFFIX = ".md"


def command_name(path: Path, commands_folder: Path) -> str:
    """The ledger's name of a command: ``git/commit.md`` under the commands folder is
    ``git:commit`` (the host lists it as ``commit``)."""
    parts = Path(relative(path, commands_folder)).with_suffix("").parts
    return ":".join(parts)


def _first_line(body: str) -> str:
    for line in body.split("\n"):
        if line.strip():
            return line.strip().lstrip("#").strip()
    return ""


def _toml(text: str, name: str) -> tuple[Mapping[str, Any], str | None]:
    try:
        loaded = load_toml(text, name)
    except ParseError as error:
        return {}, str(error)
    return (loaded, None) if isinstance(loaded, Mapping) else ({}, f"{name}: not a TOML table")


def _read(
    path: Path, root: Path, tolerant: bool = True
) -> tuple[Mapping[str, Any], str | None, str]:
    """A subagent or command file's fields, why they could not be read, and its body. A
    file that cannot be read at all (not UTF-8, not a regular file, outside the repository,
    over its cap) is that problem: it never hides the other files of its folder."""
    shown = relative(path, root)
    try:
        text = read_text_inside(path, root)
    except CouldNotJudge as error:
        if not tolerant:
            raise
        return {}, str(error), ""
    if path.suffix == ".toml":
        fields, problem = _toml(text, shown)
        body_field = fields.get("developer_instructions")
        return fields, problem, body_field if isinstance(body_field, str) else ""
    split = split_frontmatter(text, shown)
    return split.fields, split.problem, split.body


def _name(fields: Mapping[str, Any], path: Path) -> str:
    named = fields.get("name")
    return named if isinstance(named, str) and named.strip() else path.stem


def delegate_name(path: Path, root: Path) -> str:
    """The name a host lists a subagent by: its ``name`` field, else its file name."""
    return _name(_read(path, root)[0], path)


def measure_delegate(
    path: Path,
    root: Path,
    role: str,
    counter: tokens.O200kCounter,
    *,
    name: str = "",
    tolerant: bool = True,
) -> Delegate:
    """One subagent or command file at its two levels; a broken file becomes ``problem``
    (one that cannot be read at all, too, unless it is the only file asked for: then
    ``CouldNotJudge``)."""
    fields, problem, body = _read(path, root, tolerant)
    described = fields.get("description")
    description = described.strip() if isinstance(described, str) else ""
    source = "frontmatter" if description else ""
    if not description and role == COMMAND and problem is None:
        description = _first_line(body)
        source = "first line" if description else ""
    name = name or _name(fields, path)
    # Claude Code lists a command under its folder-prefixed name (git:commit).
    prefixed = CLAUDE_CODE.command_folder_prefix
    listed_name = (name if prefixed else path.stem) if role == COMMAND else name
    unlisted_key = CLAUDE_CODE.command_unlisted_key
    listed = not (role == COMMAND and unlisted_key and fields.get(unlisted_key) is True)
    return Delegate(
        role=role,
        name=name,
        path=relative(path, root),
        metadata=(
            counter.count(metadata_text(listed_name, description)) if description and listed else 0
        ),
        body=counter.count(body),
        description=description,
        description_source=source,
        problem=problem,
        fields=fields,
        listed=listed,
    )


def find_delegates(path: Path, role: str, root: Path | None = None) -> list[tuple[Path, Path]]:
    """Each subagent or command file at ``path`` (a file or a folder of them, inside the
    repository ``root``, by default ``path``), with the folder its command name is taken
    from."""
    root = path if root is None else root
    if path.is_file():
        # A command is named from its commands folder (git/commit.md is git:commit) however
        # it is pointed at: one file or the whole folder.
        top = next((p for p in path.parents if p.name == "commands"), path.parent)
        return [(path, top)]
    if not path.is_dir():
        raise CouldNotJudge(f"{path}: no such file or folder")
    if role == AGENT:
        found = sorted(
            p for p in walk_inside(path, root, max_depth=0) if p.suffix in AGENT_SUFFIXES
        )
    else:
        found = walk_files(path, COMMAND_SUFFIX, root)
    if not found:
        wanted = "subagent (*.md, *.toml)" if role == AGENT else "command (*.md)"
        raise CouldNotJudge(f"{path}: no {wanted} file found")
    return [(file, path) for file in found]


def measure_delegates(
    path: Path,
    role: str,
    *,
    root: Path | None = None,
    settings: RuleOverrides | None = None,
) -> DelegatesReport:
    """The subagents or commands at ``path`` measured and judged by A101–A103.

    ``root`` is the repository (nothing outside it is read); by default ``path`` itself, or
    its folder for a single file.
    """
    path = Path(path)
    root = Path(root) if root is not None else (path.parent if path.is_file() else path)
    counter = tokens.O200kCounter()
    single = path.is_file()
    delegates = tuple(
        measure_delegate(
            file,
            root,
            role,
            counter,
            name=command_name(file, folder) if role == COMMAND else "",
            tolerant=not single,
        )
        for file, folder in find_delegates(path, role, root)
    )
    findings = worst_first(surface_rules.check(delegates, settings or RuleOverrides()))
    return DelegatesReport(role, path.as_posix(), delegates, tuple(findings))
