"""What measuring a catalogue gives: the SkillsReport, per-skill levels, totals and findings.

Source -> records -> measurement: :mod:`pytest_toll.skills.measuring` reads a skill folder into
:class:`pytest_toll.skills.records.Skill` records and gathers them here with their findings.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.core import tokens
from pytest_toll.core.findings import Finding
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.skills.records import Skill


@dataclass(frozen=True)
class SkillsReport:
    """A catalogue (or a single skill) measured: per-skill levels, totals and findings."""

    path: str
    skills: tuple[Skill, ...]
    totals: Mapping[str, int]
    findings: tuple[Finding, ...]
    window: int = DEFAULT_WINDOW
    tokenizer: str = tokens.TOKENIZER_NAME
    #: How every count in the report was made (always the exact o200k count).
    method: str = tokens.O200K

    @property
    def metadata_share(self) -> float:
        """The always-on cost (all metadata) as a fraction of the context window."""
        return self.totals["metadata"] / self.window

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "skills",
            "tokenizer": self.tokenizer,
            "skills": [skill.as_dict() for skill in self.skills],
            "totals": dict(self.totals),
            "findings": [finding.as_dict("skill") for finding in self.findings],
        }
