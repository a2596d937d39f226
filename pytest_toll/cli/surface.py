"""``toll surface [ROOT]``: the always-on surface of a repository outside pytest: memory files
per host, subagents, commands and plugins, and a fresh session's rows."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import has_errors
from pytest_toll.core.hosts import BY_MEMORY, HOSTS, host_named
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.surface.agents import (
    AGENT,
    AGENT_FOLDERS,
    COMMAND,
    COMMAND_FOLDERS,
    measure_delegates,
)
from pytest_toll.surface.bill import has_files, host_bill
from pytest_toll.surface.memory import CODEX_MAX_BYTES, measure_memory
from pytest_toll.surface.plugins import measure_plugin, repository_plugins
from pytest_toll.surface.render import Surface, render_fresh, render_text
from pytest_toll.surface.report import DelegatesReport

#: Project skill folders a fresh session lists (as ``toll init`` finds them).
SKILL_FOLDERS = (".claude/skills", ".codex/skills", ".agents/skills")


def add_surface_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--host",
        action="append",
        choices=list(dict.fromkeys([*HOSTS, *BY_MEMORY])),
        default=None,
        help="the host to measure: its memory files and its fixed cost per request "
        "(repeatable; claude-code or claude, codex, gemini-cli or gemini, copilot, cursor; "
        "default: every host with files here)",
    )
    parser.add_argument(
        "--cwd",
        default=None,
        metavar="DIR",
        help="the working folder a session starts in (default: the repository root)",
    )
    parser.add_argument(
        "--max-bytes",
        type=int,
        default=CODEX_MAX_BYTES,
        metavar="N",
        help=f"Codex's project_doc_max_bytes (default {CODEX_MAX_BYTES:,})",
    )


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "root", nargs="?", default=".", metavar="ROOT", help="the repository (default .)"
    )
    add_surface_options(parser)
    add_json_option(parser)


def _delegates(root: Path, role: str) -> DelegatesReport | None:
    folders = [root / folder for folder in (AGENT_FOLDERS if role == AGENT else COMMAND_FOLDERS)]
    reports = []
    for folder in folders:
        try:
            reports.append(measure_delegates(folder, role, root=root))
        except CouldNotJudge:
            continue  # no such folder, or nothing in it
    if not reports:
        return None
    return DelegatesReport(
        role,
        root.as_posix(),
        tuple(d for report in reports for d in report.delegates),
        tuple(f for report in reports for f in report.findings),
    )


def _skills_metadata(root: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for folder in SKILL_FOLDERS:
        try:
            found[folder] = measure_skills(root / folder).totals["metadata"]
        except CouldNotJudge:
            continue  # no such folder, or no skill in it
    return found


def measure_surface(
    root: Path, hosts: list[str] | None, cwd: str | None, max_bytes: int
) -> Surface:
    """Everything a fresh session in ``root`` (started in ``cwd``) carries from it."""
    if not root.is_dir():
        raise CouldNotJudge(f"{root}: not a folder")
    working = None if cwd is None else root / cwd
    named = [host_named(name) for name in hosts or ()]
    chosen = [h for h in named if h is not None] or [
        host for host in HOSTS.values() if has_files(root, host)
    ]
    memory = tuple(
        measure_memory(root, host.memory, cwd=working, max_bytes=max_bytes) for host in chosen
    )
    bills = tuple(host_bill(root, host, cwd=working, max_bytes=max_bytes) for host in chosen)
    listed, notes = repository_plugins(root)
    plugins = [measure_plugin(folder, name=name) for name, folder in listed]
    return Surface(
        root=root.as_posix(),
        memory=memory,
        skills_metadata=_skills_metadata(root),
        agents=_delegates(root, AGENT),
        commands=_delegates(root, COMMAND),
        plugins=tuple(plugins),
        notes=tuple(notes),
        bills=bills,
    )


def surface_dict(surface: Surface) -> dict[str, object]:
    return {
        "kind": "surface",
        "root": surface.root,
        "host_rows": "system prompt and built-in tools are the host's: not known, not guessed",
        "fixed_cost": {bill.host.name: bill.as_dict() for bill in surface.bills},
        "memory": [report.as_dict() for report in surface.memory],
        "skills_metadata": surface.skills_metadata,
        "agents": surface.agents.as_dict() if surface.agents else None,
        "commands": surface.commands.as_dict() if surface.commands else None,
        "plugins": [plugin.as_dict() for plugin in surface.plugins],
        "notes": list(surface.notes),
    }


def run(args: argparse.Namespace) -> int:
    surface = measure_surface(Path(args.root), args.host, args.cwd, args.max_bytes)
    if args.json:
        print(json.dumps(surface_dict(surface), indent=2, ensure_ascii=False))
    else:
        print(render_text(surface))
    return EXIT_VIOLATION if has_errors(surface.findings) else EXIT_OK


def run_fresh(root: Path, args: argparse.Namespace) -> int:
    """``toll context --fresh``: a fresh session's rows only."""
    surface = measure_surface(root, args.host, args.cwd, args.max_bytes)
    if args.json:
        print(json.dumps(surface_dict(surface), indent=2, ensure_ascii=False))
    else:
        print(render_fresh(surface))
    return EXIT_OK
