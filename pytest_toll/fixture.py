"""The ``toll`` fixture's object: measure inside a test, recorded under the test's node id.

Every measurement adds a record (name, kind, tokens, method); the test's total is the sum
of its records, judged after the test body against ``@pytest.mark.toll(budget=N)`` and the
ledger's ``tests:`` entry. Requests captured while the test ran (``toll(capture=True)``, or
``with toll.capture():``) add one record: the largest of them, the context one call carries.
This module does not import pytest: the plugin wraps it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.calls.capture import CaptureReport
from pytest_toll.calls.measuring import CallReport, measure
from pytest_toll.capture_hook import Capture
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.core.models import Catalogue
from pytest_toll.core.tokens import O200K, count
from pytest_toll.definitions.source import weigh_source
from pytest_toll.definitions.tools import load_tools_file, normalize_tools
from pytest_toll.definitions.weigh import ToolsReport, weigh
from pytest_toll.gate.measurers import skill_levels
from pytest_toll.skills.measure import measure_skills
from pytest_toll.skills.records import SkillsReport
from pytest_toll.transcripts.report import ScanReport
from pytest_toll.transcripts.scan import ReadOptions
from pytest_toll.transcripts.scan import scan as scan_tolls

#: The record kind of the largest captured request.
CAPTURE_KIND = "capture"


@dataclass(frozen=True)
class Record:
    """One measurement a test made."""

    name: str
    kind: str
    tokens: int
    method: str

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "tokens": self.tokens, "method": self.method}


@dataclass
class Toll:
    """Measures text, tool definitions and skills, and keeps a running total for the test.

    ``window`` is the context window used for window shares in the reports it returns.
    """

    nodeid: str
    window: int = DEFAULT_WINDOW
    #: The model catalogue with toll.yaml's ``models:`` overrides (None: the shipped one).
    catalogue: Catalogue | None = None
    records: list[Record] = field(default_factory=list)
    #: The LLM requests the code under test sent while capturing (see :meth:`capture`).
    capturing: Capture = field(default_factory=Capture)
    _captured: CaptureReport | None = field(default=None, init=False, repr=False)

    @property
    def total(self) -> int:
        return sum(record.tokens for record in self.records)

    @property
    def method(self) -> str:
        """The method label of the total: one label, or ``mixed`` when records differ."""
        methods = {record.method for record in self.records}
        if len(methods) == 1:
            return methods.pop()
        return "mixed" if methods else O200K

    def parts(self) -> dict[str, int]:
        """Per-record tokens, keyed by name (a repeated name gets ``#2``, ``#3``…)."""
        parts: dict[str, int] = {}
        for record in self.records:
            key = record.name
            number = 2
            while key in parts:
                key = f"{record.name}#{number}"
                number += 1
            parts[key] = record.tokens
        return parts

    def _record(self, name: str, kind: str, tokens: int, method: str) -> int:
        self.records.append(Record(name, kind, tokens, method))
        return tokens

    def text(self, name: str, text: str) -> int:
        """Count ``text`` (o200k) and record it as ``name``; returns its tokens."""
        if not isinstance(text, str):
            raise TypeError(f"toll.text({name!r}, …) needs a str, not {type(text).__name__}")
        return self._record(name, "text", count(text), O200K)

    def tools(self, tools_or_server: Any, *, name: str | None = None) -> ToolsReport:
        """Weigh tool definitions and record their claude total; returns the ToolsReport.

        Accepts a tools array (MCP, OpenAI or Anthropic shape, or a ``tools/list`` result),
        a path to such a file, or a server given as a mapping of ``weigh_source`` arguments
        (``{"command": [...]}``, ``{"url": ...}``).
        """
        report = _weigh(tools_or_server, self.window)
        label = name or report.target or "tools"
        self._record(str(label), "tools", int(report.claude), str(report.method))
        return report

    def skills(self, path: str | Path, *, name: str | None = None) -> SkillsReport:
        """Measure a skill (or a directory of skills); records metadata + body + references."""
        report = measure_skills(Path(path), window=self.window)
        levels = skill_levels(report, str(path))
        method = str(getattr(report, "method", O200K))
        self._record(name or Path(path).name, "skills", sum(levels.values()), method)
        return report

    def call(self, model: str, *, name: str | None = None, **call: Any) -> CallReport:
        """Measure one whole call (``pytest_toll.calls.measure``); records its total.

        The recorded number is the o200k total of system + messages + skills + tools, the
        deterministic count budgets use, also when ``exact=True`` asked for native counts;
        native or scaled counts stay in the returned report.
        """
        if self.catalogue is not None:
            call.setdefault("catalogue", self.catalogue)
        report = measure(model, **call)
        method = O200K if report.o200k is not None else str(report.method)
        self._record(name or f"call {model}", "call", int(report.graded_tokens), method)
        return report

    def transcripts(self, *roots: str | Path, name: str | None = None, **scan: Any) -> ScanReport:
        """The tolls under ``roots`` (``pytest_toll.transcripts.scan.scan``); records the ok tool-result
        tokens they paid. No transcripts or no tool calls is CouldNotJudge, never zero."""
        report = scan_tolls([Path(root) for root in roots], ReadOptions(**scan))
        self._record(name or "transcripts", "transcripts", int(report.ok_tokens), O200K)
        return report

    def capture(self) -> Capture:
        """Record the LLM requests sent inside ``with toll.capture():`` (httpx, sync and
        async; Anthropic Messages, OpenAI Chat Completions and Responses). At the end of the
        test the largest of them is recorded as ``largest captured request``; every request
        shows in the report. Inside ``toll(capture=True)`` it is already on (no double count).
        """
        return self.capturing

    def captured(self) -> CaptureReport:
        """The requests captured so far, measured (the model from each body)."""
        if self._captured is None or len(self._captured.requests) != len(self.capturing.sent):
            self._captured = self.capturing.measure(self.catalogue)
        return self._captured

    def finish_capture(self) -> CaptureReport | None:
        """Stop capturing and record the largest request judged; None when never captured."""
        self.capturing.close()
        if not self.capturing.used:
            return None
        report = self.captured()
        largest = report.largest
        recorded = any(record.kind == CAPTURE_KIND for record in self.records)
        if largest is not None and largest.tokens is not None and not recorded:
            self._record("largest captured request", CAPTURE_KIND, largest.tokens, O200K)
        return report


SERVER_KEYS = frozenset({"command", "url", "tools_file"})


def _weigh(tools_or_server: Any, window: int) -> ToolsReport:
    if isinstance(tools_or_server, Mapping) and SERVER_KEYS & set(tools_or_server):
        arguments = dict(tools_or_server)
        arguments.setdefault("window", window)
        return weigh_source(**arguments)
    if isinstance(tools_or_server, str | Path):
        tools, shape = load_tools_file(tools_or_server)
        return weigh(tools, target=str(tools_or_server), source_shape=shape, window=window)
    if isinstance(tools_or_server, Mapping | Sequence):
        tools, shape = normalize_tools(tools_or_server)
        return weigh(tools, target="tools", source_shape=shape, window=window)
    raise CouldNotJudge(
        "toll.tools() needs a tools array, a tools file path or a server mapping, "
        f"not {type(tools_or_server).__name__}"
    )
