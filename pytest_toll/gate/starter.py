"""A starter ledger from what a repository already declares (``toll init``).

Three steps, kept apart so each can be tested on its own, each a loop over the kinds'
``toll init`` rows (:data:`pytest_toll.gate.kinds.FINDERS`):

1. :func:`discover` walks the tree once (:mod:`.discovery`) and runs each kind's finder over
   it: every folder holding a SKILL.md, every MCP config, a committed transcripts folder,
   memory files, subagents, commands and plugins, anywhere they live — nothing outside the
   repository, nothing from the network;
2. :func:`measure` weighs each one with its kind's measurer, the one ``pytest --toll`` uses,
   so the pins it writes are exactly what the first gate run measures;
3. :func:`render` writes the ledger text: pins as measured, budgets with headroom
   (:func:`budget_for`), a comment on each entry saying where it came from. An entry that
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
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.findings import INIT_REASON_PREFIX, current_day
from pytest_toll.core.kinds import KINDS, KindName, kind_rank
from pytest_toll.gate.discovery import Found, walk
from pytest_toll.gate.kinds import FINDERS, measurer_of
from pytest_toll.gate.ledger.write import INIT_PIN_NOTE
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.server_config import DeclaredServer, server_entry

#: The budget is the pin times this, rounded up to the next BUDGET_STEP tokens.
HEADROOM = 1.25
BUDGET_STEP = 100

_PLAIN_KEY = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*\Z")


def budget_for(pin: int, headroom: float = HEADROOM) -> int:
    """``pin × headroom``, rounded up to the next hundred tokens (never below one step)."""
    return max(BUDGET_STEP, math.ceil(pin * headroom / BUDGET_STEP) * BUDGET_STEP)


# --- discovering --------------------------------------------------------------------------


@dataclass(frozen=True)
class Discovery:
    """What the repository holds, by kind (in :data:`FINDERS` order)."""

    root: Path
    found: Mapping[KindName, tuple[Found, ...]] = field(default_factory=dict)
    #: Places that were read and ignored, with why (a second declaration of a name …).
    notes: tuple[str, ...] = ()

    @property
    def empty(self) -> bool:
        return not any(self.found.values())

    def where(self) -> list[str]:
        """What was found where, one line per place, for the user to check."""
        lines: list[str] = []
        for kind, found in self.found.items():
            if KINDS[kind].whole_section:
                lines += [f"{item.place}: {kind}" for item in found]
            elif FINDERS[kind].counted_as:
                places: dict[str, int] = {}
                for item in found:
                    places[item.place] = places.get(item.place, 0) + 1
                noun = FINDERS[kind].counted_as
                lines += [f"{place}: {count} {noun}" for place, count in places.items()]
            elif found:
                lines.append(f"{kind}: {', '.join(item.name for item in found)}")
        return lines


def discover(root: Path) -> Discovery:
    """What the repository at ``root`` declares; reads files only, starts nothing."""
    tree = walk(root)
    found: dict[KindName, tuple[Found, ...]] = {}
    notes: list[str] = []
    for kind, finder in FINDERS.items():
        entries, kind_notes = finder.find(tree)
        found[kind] = tuple(entries)
        notes += kind_notes
    return Discovery(root, found, tuple(notes))


# --- measuring --------------------------------------------------------------------------

#: What became of one found entry: the entry to write, or why it could not be measured.
Result = dict[str, Any] | str


@dataclass
class Starter:
    """What :func:`measure` made of a discovery: entries with pins, or a reason each failed."""

    discovery: Discovery
    #: By kind, in :data:`FINDERS` order: each found entry and what became of it.
    entries: dict[KindName, list[tuple[Found, Result]]] = field(default_factory=dict)
    #: Error-severity findings at init, each written as an acknowledged rule override.
    failing_findings: list[str] = field(default_factory=list)
    #: Warn-severity findings: not acknowledged (they fail nothing), but the gate shows them
    #: beside the acknowledged ones on every run, so init's summary names them too.
    warnings: list[str] = field(default_factory=list)
    headroom: float = HEADROOM
    #: The date the acknowledgements say they were found on (ISO; ``TOLL_TODAY`` when set).
    today: str = field(default_factory=lambda: current_day().isoformat())
    #: Top-level ``rules:`` acknowledgements (for a kind whose entry has no rules of its own).
    ledger_rules: dict[str, dict[str, Any]] = field(default_factory=dict)

    @property
    def measured(self) -> int:
        """Entries the gate will measure (not commented out)."""
        return sum(len(self.measured_entries(kind)) for kind in self.entries)

    def measured_entries(self, kind: KindName) -> list[Found]:
        """The entries of ``kind`` written to be measured (not commented out)."""
        rows = self.entries.get(kind, [])
        return [found for found, result in rows if not isinstance(result, str)]

    def counts(self) -> list[str]:
        """What the ledger measures, kind by kind (``3 skill(s)``, ``transcripts``)."""
        counted: list[str] = []
        for kind in FINDERS:
            number = len(self.measured_entries(kind))
            if FINDERS[kind].counted_as:
                counted.append(f"{number} {FINDERS[kind].counted_as}")
            elif number:
                counted.append(kind if KINDS[kind].whole_section else f"{number} {kind}")
        return counted

    def not_measured(self) -> list[tuple[str, str]]:
        """(what, why) of every entry written commented out: ``servers.x (.mcp.json)``."""
        return [
            (_label(kind, found) + (f" ({found.origin})" if found.origin else ""), result)
            for kind in FINDERS
            for found, result in self.entries.get(kind, [])
            if isinstance(result, str)
        ]


def _label(kind: KindName, found: Found) -> str:
    """How a finding's message names an entry: ``servers.files``, ``transcripts``."""
    return ".".join(KINDS[kind].keys(found.name))


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


def _failing(
    label: str, findings: Sequence[Mapping[str, Any]], severity: str = "error"
) -> list[str]:
    """The findings of one severity as init's summary lists them, one line each."""
    return [
        f"{label}: {finding.get('rule')} {finding.get('subject') or ''}: {finding.get('message')}"
        for finding in findings
        if finding.get("severity") == severity
    ]


def measure(discovery: Discovery, headroom: float = HEADROOM, today: str | None = None) -> Starter:
    """Measure every discovered entry as ``pytest --toll`` will; failures become reasons.

    An entry that cannot be measured here (a server that needs the network, a variable that
    is not set) cannot be measured by the gate either, so it is written commented out.
    """
    context = EntryContext(root=discovery.root)
    starter = Starter(discovery, headroom=headroom)
    if today is not None:
        starter.today = today
    for kind, finder in FINDERS.items():
        measurer = measurer_of(KINDS[kind])
        rows = starter.entries[kind] = []
        for found in discovery.found.get(kind, ()):
            if found.unusable:
                rows.append((found, found.unusable))
                continue
            try:
                entry = finder.settle(found.entry, discovery.root) if finder.settle else found.entry
                measured = measurer(found.name, entry, context)
            except CouldNotJudge as error:
                rows.append((found, str(error)))
                continue
            written = finder.entry(entry, measured, budget_for(measured.total, headroom))
            label = _label(kind, found)
            starter.failing_findings += _failing(label, measured.findings)
            starter.warnings += _failing(label, measured.findings, "warn")
            overrides = _acknowledge(label, measured.findings, starter.today)
            if finder.ledger_rules:
                starter.ledger_rules.update(overrides)
            elif overrides:
                written["rules"] = overrides
            rows.append((found, written))
    return starter


# --- rendering --------------------------------------------------------------------------


#: Characters a YAML stream may not hold at all, even in a comment or a quoted string: C0
#: controls but tab and line breaks, DEL, C1 controls but NEL, surrogates, U+FFFE/U+FFFF.
_UNPRINTABLE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]")


def _escaped(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


#: Line breaks YAML knows and JSON does not escape (inside a quoted key they end the line),
#: and bidi controls (they show the ledger's line in an order other than its own).
_UNICODE_BREAKS = re.compile("[\x85\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
#: Bidi controls in a comment: shown as escapes, as in a quoted name.
_BIDI = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


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
    text = _BIDI.sub(_escaped, _UNPRINTABLE.sub(_escaped, text))
    pieces = re.split("\r\n|[\n\r\x85\u2028\u2029]", text)
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
        if key == "files" and isinstance(value, Mapping) and value:
            lines.append(f"{indent}  files:          # machine: per-file pins, each gated")
            for part, paths in value.items():
                lines.append(f"{indent}    {_key(str(part))}:")
                lines += [
                    f"{indent}      {_key(str(path))}: {tokens}" for path, tokens in paths.items()
                ]
            continue
        if key == "rules" and isinstance(value, Mapping) and value:
            lines.append(
                f"{indent}  rules:   # found when the ledger was made: say why, or fix and remove"
            )
            lines += [f"{indent}    {_key(str(rule))}: {_value(v)}" for rule, v in value.items()]
            continue
        if key == "decisions" and isinstance(value, Mapping) and value:
            lines.append(f"{indent}  decisions:")
            lines += [f"{indent}    {_key(str(shape))}: {_value(v)}" for shape, v in value.items()]
            continue
        comment = {
            "budget": "  # human ceiling: raise or lower it on purpose",
            "pin": f"  # machine: {INIT_PIN_NOTE}; --toll-update lowers it",
            "waste_ratio_pin": "   # machine: ratchets down",
        }.get(key, "")
        lines.append(f"{indent}  {key}: {_value(value)}{comment}")
    return lines


def _commented(name: str, entry: Mapping[str, Any], reason: str, indent: str = "  ") -> list[str]:
    lines = comment_lines(f"{_key(name)}: not measured — {reason}", f"{indent}# ")
    lines += [f"{indent}# {line[len(indent) :]}" for line in _block(name, entry, indent)]
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
    for kind in sorted(starter.entries, key=kind_rank):
        lines += _section(kind, starter.entries[kind])
    return "\n".join(lines) + "\n"


def _section(kind: KindName, rows: Sequence[tuple[Found, Result]]) -> list[str]:
    """One kind's section: its comment, then each entry (or why it is commented out) under
    the comments its finder wrote; a whole section (``transcripts:``) is its one entry."""
    if not rows:
        return []
    comment = [FINDERS[kind].comment] if FINDERS[kind].comment else []
    if KINDS[kind].whole_section:
        found, result = rows[0]
        if isinstance(result, str):
            return ["", *_commented(kind, found.entry, result, indent="")]
        return ["", *comment, *_block(kind, result, indent="")]
    lines = ["", *comment, f"{kind}:"]
    for found, result in rows:
        for text in found.comments:
            lines += comment_lines(text, "  # ")
        if isinstance(result, str):
            lines += _commented(found.name, found.entry, result)
        else:
            lines += _block(found.name, result)
    return lines


__all__ = ["DeclaredServer", "Discovery", "budget_for", "discover", "server_entry"]
