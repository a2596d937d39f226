"""A starter ledger from what a repository already declares (``toll init``).

Three steps, kept apart so each can be tested on its own:

1. :func:`discover` (:mod:`.discovery`) finds every folder holding a SKILL.md, every MCP
   config and a committed transcripts folder anywhere in the tree — nothing outside the
   repository, nothing from the network;
2. :func:`measure` weighs each one with the same measurers ``pytest --toll`` uses, so the
   pins it writes are exactly what the first gate run measures;
3. :func:`render` writes the ledger text: pins as measured, budgets with headroom
   (:func:`budget_for`), a comment on each entry saying where it came from. A server that
   cannot be measured is written commented out with the reason — never silently dropped —
   and a finding that exists already is written as an acknowledged rule override (its
   reason says toll init found it, and on which day), so a fresh ledger passes its own gate
   while a new finding still fails.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import INIT_REASON_PREFIX
from pytest_toll.gate import starter_surface
from pytest_toll.gate.discovery import Discovery, discover, skill_group
from pytest_toll.gate.ledger.write import INIT_PIN_NOTE
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import (
    SKILL_LEVELS,
    measure_servers_entry,
    measure_skills_entry,
    measure_transcripts_entry,
)
from pytest_toll.gate.server_config import DeclaredServer, server_entry
from pytest_toll.transcripts.decisions import SHAPES_TO_DECIDE, initial_settings
from pytest_toll.transcripts.scan import ReadOptions, scan

#: The budget is the pin times this, rounded up to the next BUDGET_STEP tokens.
HEADROOM = 1.25
BUDGET_STEP = 100

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")


def budget_for(pin: int, headroom: float = HEADROOM) -> int:
    """``pin × headroom``, rounded up to the next hundred tokens (never below one step)."""
    return max(BUDGET_STEP, math.ceil(pin * headroom / BUDGET_STEP) * BUDGET_STEP)


@dataclass
class Starter:
    """What :func:`measure` made of a discovery: entries with pins, or a reason each failed."""

    discovery: Discovery
    servers: list[tuple[DeclaredServer, dict[str, Any] | str]] = field(default_factory=list)
    skills: list[tuple[str, str, dict[str, Any] | str]] = field(default_factory=list)
    transcripts: dict[str, Any] | str | None = None
    #: Error-severity findings at init, each written as an acknowledged rule override.
    failing_findings: list[str] = field(default_factory=list)
    headroom: float = HEADROOM
    #: The date the acknowledgements say they were found on (ISO).
    today: str = field(default_factory=lambda: date.today().isoformat())
    #: Top-level ``rules:`` acknowledgements (the transcripts kind has no rules of its own).
    ledger_rules: dict[str, dict[str, Any]] = field(default_factory=dict)
    surface: starter_surface.SurfaceStarter = field(default_factory=starter_surface.SurfaceStarter)

    @property
    def measured(self) -> int:
        """Entries the gate will measure (not commented out)."""
        return (
            sum(not isinstance(result, str) for _, result in self.servers)
            + sum(not isinstance(result, str) for _, _, result in self.skills)
            + isinstance(self.transcripts, dict)
            + sum(
                not isinstance(result, str)
                for rows in self.surface.entries.values()
                for _, _, result in rows
            )
        )


# --- measuring --------------------------------------------------------------------------

#: At most this many findings are quoted in one acknowledgement's reason (the rest counted).
REASON_QUOTES = 3


def _acknowledge(
    label: str, findings: Sequence[Mapping[str, Any]], today: str
) -> dict[str, dict[str, Any]]:
    """Rule overrides for the error-severity findings of one entry: each rule turned down to
    ``warn`` for the subjects it was found on, with a reason quoting what was found."""
    by_rule: dict[str, list[Mapping[str, Any]]] = {}
    for finding in findings:
        if finding.get("severity") == "error":
            by_rule.setdefault(str(finding.get("rule")), []).append(finding)
    overrides: dict[str, dict[str, Any]] = {}
    for rule, found in sorted(by_rule.items()):
        quoted = "; ".join(str(item.get("message")) for item in found[:REASON_QUOTES])
        more = len(found) - REASON_QUOTES
        override: dict[str, Any] = {
            "severity": "warn",
            "reason": f"{INIT_REASON_PREFIX}{today}: {quoted}"
            + (f"; and {more} more" if more > 0 else ""),
        }
        subjects = [item.get("subject") for item in found]
        if all(isinstance(subject, str) for subject in subjects):
            override["subjects"] = sorted(set(map(str, subjects)))
        overrides[rule] = override
    return overrides


def _failing(label: str, findings: Sequence[Mapping[str, Any]]) -> list[str]:
    return [
        f"{label}: {finding.get('rule')} {finding.get('subject') or ''}: {finding.get('message')}"
        for finding in findings
        if finding.get("severity") == "error"
    ]


def _transcripts_entry(root: Path, relative: str) -> dict[str, Any]:
    report = scan([root / relative], ReadOptions())
    threshold, pin = initial_settings([row.ok_tokens for row in report.shapes], report.waste_ratio)
    heaviest = sorted(report.shapes, key=lambda row: -row.ok_tokens)[:SHAPES_TO_DECIDE]
    decisions = {
        row.shape: {"status": "watch", "reason": "written by toll init: decide replace/keep/watch"}
        for row in heaviest
        if row.ok_tokens > threshold
    }
    return {
        "roots": [relative],
        "decide_above_tokens": threshold,
        "waste_ratio_pin": pin,
        "decisions": decisions,
    }


def measure(discovery: Discovery, headroom: float = HEADROOM, today: str | None = None) -> Starter:
    """Measure every discovered source as ``pytest --toll`` will; failures become reasons.

    A source that cannot be measured here (a server that needs the network, a variable that
    is not set) cannot be measured by the gate either, so it is written commented out.
    """
    context = EntryContext(root=discovery.root)
    starter = Starter(discovery, headroom=headroom)
    if today is not None:
        starter.today = today
    for server in discovery.servers:
        if server.unusable:
            starter.servers.append((server, server.unusable))
            continue
        try:
            measured = measure_servers_entry(server.name, server.entry, context)
        except CouldNotJudge as error:
            starter.servers.append((server, str(error)))
            continue
        entry = dict(server.entry)
        entry.update(budget=budget_for(measured.total, headroom), pin=measured.total)
        entry["tools"] = dict(measured.parts)
        _add_rules(entry, f"servers.{server.name}", measured.findings, starter)
        starter.servers.append((server, entry))
    for name, path in discovery.skills:
        try:
            measured = measure_skills_entry(name, {"path": path}, context)
        except CouldNotJudge as error:
            starter.skills.append((name, path, str(error)))
            continue
        levels = {level: int(measured.parts[level]) for level in SKILL_LEVELS}
        entry = {"path": path, "budget": budget_for(measured.total, headroom), "pin": levels}
        _add_rules(entry, f"skills.{name}", measured.findings, starter)
        starter.skills.append((name, path, entry))
    if discovery.transcripts is not None:
        try:
            entry = _transcripts_entry(discovery.root, discovery.transcripts)
            checked = measure_transcripts_entry("transcripts", entry, context)
            starter.transcripts = entry
            starter.failing_findings += _failing("transcripts", checked.findings)
            starter.ledger_rules.update(
                _acknowledge("transcripts", checked.findings, starter.today)
            )
        except CouldNotJudge as error:
            starter.transcripts = str(error)
    starter.surface = starter_surface.measure(
        discovery.surface, context, lambda pin: budget_for(pin, headroom)
    )
    for label, written, findings in starter.surface.findings:
        _add_rules(written, label, findings, starter)
    return starter


def _add_rules(
    entry: dict[str, Any], label: str, findings: Sequence[Mapping[str, Any]], starter: Starter
) -> None:
    starter.failing_findings += _failing(label, findings)
    overrides = _acknowledge(label, findings, starter.today)
    if overrides:
        entry["rules"] = overrides


# --- rendering --------------------------------------------------------------------------


#: Characters a YAML stream may not hold at all, even in a comment or a quoted string: C0
#: controls but tab and line breaks, DEL, C1 controls but NEL, surrogates, U+FFFE/U+FFFF.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


#: Line breaks YAML knows and JSON does not escape: inside a quoted key they end the line.
_UNICODE_BREAKS = re.compile("[\x85\u2028\u2029]")


def _json(value: Any) -> str:
    """JSON text (valid YAML), with the characters YAML refuses or reads as a line break as
    ``\\uXXXX`` escapes."""
    text = _UNPRINTABLE.sub(_escaped, json.dumps(value, ensure_ascii=False))
    return _UNICODE_BREAKS.sub(_escaped, text)


def _key(name: str) -> str:
    return name if _PLAIN_KEY.match(name) else _json(name)


def _value(value: Any) -> str:
    """A YAML flow value; JSON strings, lists and objects are valid YAML."""
    if isinstance(value, Mapping):
        inner = ", ".join(f"{_key(str(k))}: {_value(v)}" for k, v in value.items())
        return "{" + inner + "}"
    return _json(value)


def comment_lines(text: str, prefix: str = "# ") -> list[str]:
    """``text`` as comment lines: every line of it commented, whatever it holds.

    YAML ends a comment at any line break — ``\n``, ``\r`` and also NEL and the Unicode line
    and paragraph separators — so each piece between them gets its own ``#``; a reason
    that is a Python traceback stays a comment. Characters no YAML stream may hold (a
    server's stderr can carry any byte) are written as ``\\uXXXX``.
    """
    pieces = re.split("\r\n|[\n\r\x85\u2028\u2029]", _UNPRINTABLE.sub(_escaped, text))
    return [(prefix + piece).rstrip() for piece in pieces]


def _block(name: str, entry: Mapping[str, Any], indent: str = "  ") -> list[str]:
    lines = [f"{indent}{_key(name)}:"]
    for key, value in entry.items():
        if key == "pin" and isinstance(value, Mapping) and len(value) > 3:
            lines.append(f"{indent}  pin:            # machine: measured by toll init, per part")
            lines += [f"{indent}    {_key(str(part))}: {tokens}" for part, tokens in value.items()]
            continue
        if key == "tools" and isinstance(value, Mapping) and value:
            lines.append(f"{indent}  tools:          # machine: per-tool pins, shown in the diff")
            lines += [f"{indent}    {_key(str(tool))}: {tokens}" for tool, tokens in value.items()]
            continue
        if key == "rules" and isinstance(value, Mapping) and value:
            lines.append(
                f"{indent}  rules:   # found when the ledger was made: say why, or fix and remove"
            )
            lines += [f"{indent}    {_key(str(rule))}: {_value(v)}" for rule, v in value.items()]
            continue
        comment = {
            "budget": "  # human ceiling: raise or lower it on purpose",
            "pin": f"  # machine: {INIT_PIN_NOTE}; --toll-update lowers it",
        }.get(key, "")
        lines.append(f"{indent}  {key}: {_value(value)}{comment}")
    return lines


def _commented(name: str, entry: Mapping[str, Any], reason: str) -> list[str]:
    lines = comment_lines(f"{_key(name)}: not measured — {reason}", "  # ")
    lines += ["  # " + line[2:] for line in _block(name, entry)]
    return lines


def render(starter: Starter) -> str:
    """The starter ledger's text: valid for ``pytest --toll`` as written."""
    percent = round((starter.headroom - 1) * 100)
    lines = [
        "# toll.yaml — written by `toll init`: what this repository's agent surface may cost,",
        "# in o200k tokens. `pytest --toll toll.yaml` measures every entry below and fails when",
        "# one goes over its budget or above its pin; `pytest --toll toll.yaml --toll-update`",
        "# lowers pins that improved. toll.yaml.example in pytest-toll documents every key.",
        "# Pins are what toll init measured. Budgets give headroom: pin ×",
        f"# {starter.headroom:g} (+{percent}%), rounded up to the next {BUDGET_STEP} tokens; set them to what",
        "# you intend. Findings that existed already are turned down to `warn` under `rules:`,",
        f"# each with a reason starting '{INIT_REASON_PREFIX}…'; they are shown on every run",
        "# until you fix them or write why they stay.",
        "version: 1",
        "tokenizer: o200k_base",
    ]
    if starter.ledger_rules:
        lines += ["", "rules:"]
        lines += [f"  {_key(rule)}: {_value(v)}" for rule, v in starter.ledger_rules.items()]
    if starter.servers:
        lines += ["", "servers:"]
        for server, result in starter.servers:
            lines.append(f"  # from {server.origin}")
            for note in server.notes:
                lines += comment_lines(note, "  # ")
            if isinstance(result, str):
                lines += _commented(server.name, server.entry, result)
            else:
                lines += _block(server.name, result)
    if starter.skills:
        lines += [
            "",
            "# Each skill's three loading levels are pinned and gated on their own.",
            "skills:",
        ]
        group = None
        for name, path, skill in starter.skills:
            here = skill_group(path)
            if here != group:
                lines.append(f"  # from {here}/")
                group = here
            if isinstance(skill, str):
                lines += _commented(name, {"path": path}, skill)
            else:
                lines += _block(name, skill)
    lines += _surface_lines(starter.surface)
    if isinstance(starter.transcripts, Mapping):
        section = starter.transcripts
        lines += [
            "",
            "# Tolls from the committed transcripts. The heaviest shapes are set to `watch`:",
            "# decide each (replace: {with: …} / keep / watch, with a reason).",
            "transcripts:",
            f"  roots: {_value(section['roots'])}",
            f"  decide_above_tokens: {section['decide_above_tokens']}",
            f"  waste_ratio_pin: {section['waste_ratio_pin']}   # machine: ratchets down",
        ]
        if section["decisions"]:
            lines.append("  decisions:")
            lines += [
                f"    {_key(shape)}: {_value(decision)}"
                for shape, decision in section["decisions"].items()
            ]
    elif isinstance(starter.transcripts, str):
        lines += [""]
        lines += comment_lines(f"transcripts: not measured — {starter.transcripts}")
        lines.append(f"#   roots: [{starter.discovery.transcripts}]")
    return "\n".join(lines) + "\n"


__all__ = ["DeclaredServer", "Discovery", "budget_for", "discover", "server_entry"]


def _surface_lines(surface: starter_surface.SurfaceStarter) -> list[str]:
    """The memory, agents, commands and plugins sections of the starter ledger."""
    lines: list[str] = []
    for kind in starter_surface.SURFACE_KINDS:
        rows = surface.entries.get(kind) or []
        if not rows:
            continue
        lines += ["", starter_surface.COMMENTS[kind], f"{kind}:"]
        for name, entry, result in rows:
            if isinstance(result, str):
                lines += _commented(name, entry, result)
            else:
                lines += _block(name, result)
    return lines
