"""What measuring one ledger entry takes and gives: its context in, an EntryMeasurement out.

Plain data shared by the measurers (:mod:`pytest_toll.gate.measurers`), the kinds registry
and the ratchet, so none of them has to import another only for a type.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.findings import RuleOverrides
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.core.models import Catalogue


@dataclass(frozen=True)
class EntryMeasurement:
    """What one entry measured: the primary total, how, per-part numbers and findings."""

    total: int
    method: str
    parts: Mapping[str, int] = field(default_factory=dict)
    findings: tuple[Mapping[str, Any], ...] = ()
    #: Other pinned numbers of the entry, by ledger key (``waste_ratio_pin``): measured
    #: values that ratchet down like pins; going above them is the measuring rules' call.
    other_pins: Mapping[str, float] = field(default_factory=dict)
    #: Other pins gated like the total, by key, with the ledger key of each one's budget:
    #: a server's ``results.<name>.pin`` and ``results.<name>.budget``. A key with dots is a
    #: path inside the entry.
    other_budgets: Mapping[str, str] = field(default_factory=dict)
    #: What the report shows beside the numbers and never judges or pins: a server's
    #: per-tool split (``{"tools": {name: {"description", "schema", "output_schema"}}}``),
    #: the heaviest transcript shapes (``{"shapes": [...]}``). None when the kind has none.
    detail: Mapping[str, Any] | None = None
    #: The files behind the parts whose files can grow (a kind's ``file_parts``), by part:
    #: ``{"references": {"references/style.md": 111}}``, judged against ``file_pins_key``.
    files: Mapping[str, Mapping[str, int]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "total": self.total,
            "method": self.method,
            "parts": dict(self.parts),
            "findings": [dict(finding) for finding in self.findings],
            "other_pins": dict(self.other_pins),
        }
        if self.detail is not None:
            data["detail"] = dict(self.detail)
        if self.files:
            data["files"] = {part: dict(files) for part, files in self.files.items()}
        return data


@dataclass(frozen=True)
class EntryContext:
    """What every measurement needs besides its entry: where the ledger is, and its settings."""

    root: Path
    window: int = DEFAULT_WINDOW
    rules: Mapping[str, Any] = field(default_factory=dict)
    limits: Mapping[str, Any] = field(default_factory=dict)
    duplicate_decisions: tuple[tuple[str, int], ...] = ()
    source: str = "toll.yaml"
    #: The ledger's top-level ``model:`` and its catalogue with ``models:`` overrides.
    model: str | None = None
    catalogue: Catalogue | None = None
    #: The ledger's ``servers:`` section and its ``hosts:`` entries' names: a ``transcripts:``
    #: entry joins them with the calls it reads (cost per use, E131).
    servers: Mapping[str, Any] = field(default_factory=dict)
    hosts: tuple[str, ...] = ()

    def settings(self, entry: Mapping[str, Any], where: str) -> RuleOverrides:
        """Ledger-wide rule severities and limits, overridden by the entry's own ``rules``."""
        severities = {**self.rules, **(entry.get("rules") or {})}
        return RuleOverrides.parse(severities, self.limits, source=where)

    def resolve(self, path: str) -> Path:
        candidate = Path(path).expanduser()
        return candidate if candidate.is_absolute() else self.root / candidate
