"""One measuring function per ledger entry kind: a ledger entry in, an EntryMeasurement out.

Each function resolves paths against the ledger's directory and raises
:class:`CouldNotJudge` when it cannot measure — an error outcome, never a pass. The gate's
half of the kinds table (:mod:`pytest_toll.gate.kinds`) names which function measures which
kind.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_toll.calls.entry import measure_entry
from pytest_toll.calls.measuring import PARTS
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import Finding
from pytest_toll.core.hosts import HOSTS as HOST_PROFILES
from pytest_toll.core.kinds import EXECUTED, PAST_CUT
from pytest_toll.core.tokens import O200K
from pytest_toll.gate.locate import (
    place_tool_findings,
    placed,
    skill_part_places,
    tool_places,
)
from pytest_toll.gate.measurement import EntryContext, EntryMeasurement
from pytest_toll.gate.results import measure_results_of, weigh_server
from pytest_toll.gate.usage import usage_report
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.rules import subjects_of
from pytest_toll.surface.agents import AGENT, COMMAND, measure_delegates
from pytest_toll.surface.bill import host_bill
from pytest_toll.surface.memory import CODEX_MAX_BYTES, HOSTS, measure_memory
from pytest_toll.surface.plugins import measure_plugin
from pytest_toll.transcripts.decisions import judge_decisions, pinned_ratio


def _findings(findings: Any) -> tuple[dict[str, Any], ...]:
    out = []
    for finding in findings or ():
        if isinstance(finding, Finding):
            out.append(finding.as_dict())
        elif isinstance(finding, Mapping):
            data = dict(finding)
            if "subject" not in data:
                # Other reports name the subject after what it is (tool, skill, shape).
                for key in ("tool", "skill", "shape", "subject"):
                    if key in data:
                        data["subject"] = data.pop(key)
                        break
                else:
                    data["subject"] = None
            out.append(data)
    return tuple(out)


def measure_servers_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """A server's tool definitions: the claude total, per-tool lines, the E1xx findings."""
    where = f"servers.{name}"
    settings = context.settings(entry, where)
    report, source = weigh_server(
        name, entry, context, check_order=bool(entry.get("check_order", False)), settings=settings
    )
    results = measure_results_of(name, entry, context, settings, source)
    tools_file = entry.get("tools_file")
    top = source.cwd if tools_file is None else context.resolve(str(tools_file)).parent
    descriptions = {tool.name: tool.description for tool in report.records if tool.description}
    parts = {row.name: int(row.tokens) for row in report.tools}
    # Where each tool that grew past its pin is described, for a regression to point at:
    # looked for only when one grew, so an unchanged server costs no search of its source.
    places = tool_places(
        {
            tool: descriptions[tool]
            for tool in _grown(parts, entry.get("tools"))
            if tool in descriptions
        },
        top,
        context.root,
    )
    return EntryMeasurement(
        total=int(report.claude),
        method=str(report.method),
        parts=parts,
        # A tool's finding points at its description in the repository, when found there.
        findings=place_tool_findings(_findings(report.findings), descriptions, top, context.root)
        + tuple(finding.as_dict() for cost in results for finding in cost.findings),
        # Each result's largest sample is pinned beside the definitions and gated like them.
        other_pins={f"results.{cost.name}.pin": cost.max for cost in results},
        other_budgets={
            f"results.{cost.name}.pin": f"results.{cost.name}.budget" for cost in results
        },
        detail={
            "tools": {
                row.name: {
                    "description": int(row.description_tokens),
                    "schema": int(row.schema_tokens),
                    "output_schema": int(row.output_schema_tokens),
                }
                for row in report.tools
            },
            **({"results": {cost.name: cost.as_dict() for cost in results}} if results else {}),
            **({"places": places} if places else {}),
        },
    )


def _grown(parts: Mapping[str, int], pins: Any) -> list[str]:
    """The tools measured above their pin in the entry's ``tools:``, or not pinned there
    while others are (a new tool): the ones a regression is about."""
    if not isinstance(pins, Mapping) or not pins:
        return []
    return [
        tool
        for tool, tokens in parts.items()
        if not isinstance(pins.get(tool), int) or tokens > int(pins[tool])
    ]


SKILL_LEVELS = ("metadata", "body", "references")


def measure_skills_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """One skill at its three loading levels; each level is gated against its own pin."""
    where = f"skills.{name}"
    report = measure_skills(
        context.resolve(str(entry["path"])),
        window=context.window,
        settings=context.settings(entry, where),
    )
    levels = skill_levels(report, where)
    return EntryMeasurement(
        # What the skill can load: a script's source is not (its own part, not in a budget).
        total=sum(value for level, value in levels.items() if level != EXECUTED),
        method=str(getattr(report, "method", O200K)),
        parts=levels,
        findings=placed(
            _findings(getattr(report, "findings", ())),
            _skill_folders(report),
            context.root,
            "skill",
        ),
        files=skill_files(report),
        detail=_skill_places(report, context.root),
    )


def _skill_places(report: Any, root: Path) -> dict[str, Any]:
    """Where one skill's metadata and body are written, for a regression to point at (a
    directory of several skills has no one place for a part)."""
    skills = list(getattr(report, "skills", ()) or ())
    if len(skills) != 1:
        return {}
    places = skill_part_places(Path(skills[0].path), root)
    return {"places": places} if places else {}


def _skill_folders(report: Any) -> dict[str | None, Path]:
    """Each skill's folder by the subject its findings name."""
    skills = list(getattr(report, "skills", ()) or ())
    return {subject: Path(skill.path) for skill, subject in zip(skills, subjects_of(skills))}


def skill_files(report: Any) -> dict[str, dict[str, int]]:
    """The tokens of each file behind a skill's ``references`` and ``executed`` parts, so a
    regression of either names its files (pinned in the entry's ``files``, each gated). A
    directory of several skills names each file under its skill."""
    skills = list(getattr(report, "skills", ()))
    files: dict[str, dict[str, int]] = {"references": {}, EXECUTED: {}}
    for skill in skills:
        prefix = f"{skill.name}/" if len(skills) > 1 else ""
        for part, rows in (
            ("references", skill.references),
            (EXECUTED, getattr(skill, EXECUTED, ())),
        ):
            for row in rows:
                if row.tokens is not None:
                    files[part][prefix + row.path] = int(row.tokens)
    return files


#: The part of a skill that is not loaded: the source of the scripts it runs. Only skills
#: that run scripts have it, so the pins of every other skill stay as they were.


def skill_levels(report: Any, where: str) -> dict[str, int]:
    """Per-level totals of a skills report (one skill, or the sum over a directory), with
    the executed part when the skill runs scripts."""
    totals = getattr(report, "totals", None)
    if not getattr(report, "skills", None) or not isinstance(totals, Mapping):
        raise CouldNotJudge(f"{where}: no skill found to measure")
    levels = {level: int(totals.get(level, 0)) for level in SKILL_LEVELS}
    if EXECUTED in totals:
        levels[EXECUTED] = int(totals[EXECUTED])
    return levels


def measure_transcripts_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """The decisions ledger: TL rules over the transcripts under ``roots``."""
    roots = [context.resolve(str(root)) for root in entry.get("roots") or ()]
    report = judge_decisions(
        entry,
        # No roots in the ledger: the decisions module's defaults (environment, agent dirs).
        roots=roots or None,
        duplicate_decisions=list(context.duplicate_decisions),
        source=context.source,
        settings=context.settings({}, "transcripts"),
    )
    # With servers in the ledger, what each of their tools costs per request is set beside
    # how often these transcripts call it (E131: paid for, never called).
    usage = (
        usage_report(context.servers, entry, context, hosts=context.hosts, roots=roots)
        if context.servers
        else None
    )
    return EntryMeasurement(
        total=int(report.ok_tokens),
        method=O200K,
        parts={},
        findings=_findings(report.findings) + _findings(usage.findings if usage else ()),
        # Rounded up to 4 decimals as `toll check --init` pins it, so an unchanged history
        # equals its pin rather than "improving" by a rounding error.
        other_pins={"waste_ratio_pin": pinned_ratio(float(report.waste_ratio))},
        detail={
            "sessions": int(report.sessions),
            "calls": int(report.calls),
            "shapes": [row.as_dict() for row in report.top_shapes],
            **({"usage": usage.as_dict()} if usage else {}),
        },
    )


def measure_calls_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """One whole call built from files: its o200k total, and each part beside it."""
    report = measure_entry(
        entry,
        root=context.root,
        where=f"calls.{name}",
        default_model=context.model,
        catalogue=context.catalogue,
    )
    return EntryMeasurement(
        total=int(report.graded_tokens),
        method=str(report.method),
        parts={part: int(report.parts[part].tokens) for part in PARTS},
    )


def measure_memory_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """One host's always-on memory files, each a gated part; on-demand files beside them."""
    where = f"memory.{name}"
    host = str(entry.get("host", name))
    if host not in HOSTS:
        # Without host:, the entry's name is the host: say which key to set.
        raise UsageError(
            f"{where}: host {host!r} is not one of {', '.join(HOSTS)} (set host: to one of them)"
        )
    cwd = entry.get("cwd")
    report = measure_memory(
        context.root,
        host,
        cwd=None if cwd is None else context.resolve(str(cwd)),
        max_bytes=int(entry.get("max_bytes", CODEX_MAX_BYTES)),
        settings=context.settings(entry, where),
    )
    if not report.files:
        raise CouldNotJudge(f"{where}: no {report.host} memory file found in {context.root}")
    parts = {file.path: file.tokens for file in report.always_on}
    if report.past_cut:
        # What the host never reads: more of it is instructions lost, a regression of its own.
        parts[PAST_CUT] = report.past_cut
    return EntryMeasurement(
        total=report.total,
        method=report.method,
        parts=parts,
        findings=placed(_findings(report.findings), None, context.root, "memory"),
        detail={"files": [file.as_dict() for file in report.files]},
    )


def _delegates_entry(
    role: str, name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    where = f"{role}s.{name}"
    report = measure_delegates(
        context.resolve(str(entry["path"])),
        role,
        root=context.root,
        settings=context.settings(entry, where),
    )
    levels = report.totals
    return EntryMeasurement(
        total=sum(levels.values()),
        method=report.method,
        parts=levels,
        findings=placed(
            _findings(report.findings),
            {delegate.name: context.root / delegate.path for delegate in report.delegates},
            context.root,
            "delegate",
        ),
    )


def measure_agents_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """A subagent (or a folder of them) at its two levels: metadata and body, each gated."""
    return _delegates_entry(AGENT, name, entry, context)


def measure_commands_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """A command (or a folder of them) at its two levels: metadata and body, each gated."""
    return _delegates_entry(COMMAND, name, entry, context)


def measure_plugins_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """A plugin: each component's always-on listing a gated part, findings by its own kind."""
    report = measure_plugin(
        context.resolve(str(entry["path"])),
        name=name,
        settings=context.settings(entry, f"plugins.{name}"),
    )
    if not report.components:
        raise CouldNotJudge(f"plugins.{name}: no skill, subagent or command found to measure")
    return EntryMeasurement(
        total=report.total,
        method=report.method,
        parts={component.name: component.always_on for component in report.components},
        # A component's finding points at its SKILL.md line or its file, as on its own.
        findings=placed(
            placed(
                _findings(report.findings),
                {c.name: Path(c.path) for c in report.components if c.path and _is_skill(c.name)},
                context.root,
                "skill",
            ),
            {c.name: Path(c.path) for c in report.components if c.path and not _is_skill(c.name)},
            context.root,
            "delegate",
        ),
        detail={
            "components": [component.as_dict() for component in report.components],
            "hooks": list(report.hooks),
            "mcp_servers": list(report.mcp_servers),
        },
    )


def _is_skill(component: str) -> bool:
    return component.startswith("skills/")


def measure_hosts_entry(
    name: str, entry: Mapping[str, Any], context: EntryContext
) -> EntryMeasurement:
    """One host's bill: every item it pays on every request a gated part (a new skill or
    command is growth from zero); tokens past its byte cut a gated part outside the total."""
    where = f"hosts.{name}"
    host = HOST_PROFILES.get(name)
    if host is None:
        raise UsageError(f"{where}: {name!r} is not one of {', '.join(HOST_PROFILES)}")
    cwd = entry.get("cwd")
    bill = host_bill(
        context.root,
        host,
        cwd=None if cwd is None else context.resolve(str(cwd)),
        max_bytes=int(entry.get("max_bytes", CODEX_MAX_BYTES)),
        settings=context.settings(entry, where),
        window=context.window,
    )
    if not bill.parts and not bill.on_demand:
        raise CouldNotJudge(f"{where}: nothing {host.name} loads was found in {context.root}")
    parts = dict(bill.parts)
    if bill.past_cut:
        parts[PAST_CUT] = bill.past_cut
    return EntryMeasurement(
        total=bill.total,
        method=bill.method,
        parts=parts,
        findings=_findings(bill.findings),
        detail={"on_demand": dict(bill.on_demand), "mcp_tools": host.mcp_tools},
    )
