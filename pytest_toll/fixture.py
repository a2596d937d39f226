"""The ``toll`` fixture's object: measure inside a test, recorded under the test's node id.

Every measurement adds a record (name, source, tokens, method); the test's total is the sum
of its records, judged after the test body against ``@pytest.mark.toll(budget=N)`` and the
ledger's ``tests:`` entry. Requests captured while the test ran (``toll(capture=True)``, or
``with toll.capture():``) add one record: the largest of them, the context one call carries.
Their sum, what the whole run sent, is graded on its own by ``run_budget`` and its ledger
pin ``run_pin`` (see :meth:`Toll.capture`).
This module does not import pytest: the plugin wraps it.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.calls.capture import CaptureReport
from pytest_toll.calls.measuring import PARTS, CallReport, measure
from pytest_toll.capture_hook import Capture
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.core.models import Catalogue
from pytest_toll.core.tokens import O200K, count
from pytest_toll.definitions.source import weigh_source
from pytest_toll.definitions.tools import load_tools_file, normalize_tools
from pytest_toll.definitions.weigh import ToolsReport, weigh
from pytest_toll.gate.measurers import skill_levels
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.report import SkillsReport
from pytest_toll.transcripts.report import ScanReport
from pytest_toll.transcripts.scan import ReadOptions
from pytest_toll.transcripts.scan import scan as scan_tolls

#: The source of the record of the largest captured request.
CAPTURE_SOURCE = "capture"


@dataclass(frozen=True)
class Record:
    """One measurement a test made."""

    name: str
    #: What was measured, by the fixture method that measured it (``text``, ``tools``,
    #: ``skills``, ``call``, ``transcripts``), or ``capture`` for the largest captured request.
    source: str
    tokens: int
    method: str
    #: What the tokens are made of, where the record is more than one thing: a captured
    #: request's parts (messages, system, skills, tools), each its own part of the test.
    parts: Mapping[str, int] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "source": self.source,
            "tokens": self.tokens,
            "method": self.method,
        }


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
    #: Budgets given to ``toll.capture(budget=…, run_budget=…)`` (the lowest applies, with
    #: the marker's): of the test's total, and of the sum of every captured request.
    budget: int | None = None
    run_budget: int | None = None

    def __post_init__(self) -> None:
        if self.capturing.catalogue is None:
            self.capturing.catalogue = self.catalogue

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
        """Per-record tokens, keyed by name (a repeated name gets ``#2``, ``#3``…); the
        largest captured request by its parts (``capture/messages``, ``capture/system`` …),
        so a pin of each names the part that grew."""
        parts: dict[str, int] = {}
        for record in self.records:
            pieces = (
                {f"{CAPTURE_SOURCE}/{part}": tokens for part, tokens in record.parts.items()}
                if record.parts
                else {record.name: record.tokens}
            )
            for name, tokens in pieces.items():
                key = name
                number = 2
                while key in parts:
                    key = f"{name}#{number}"
                    number += 1
                parts[key] = tokens
        return parts

    def _record(
        self,
        name: str,
        source: str,
        tokens: int,
        method: str,
        parts: Mapping[str, int] | None = None,
    ) -> int:
        self.records.append(Record(name, source, tokens, method, parts))
        return tokens

    def text(self, name: str, text: str) -> int:
        """Count ``text`` (o200k) and record it as ``name``; returns its tokens."""
        if not isinstance(text, str):
            raise TypeError(f"toll.text({name!r}, …) needs a str, not {type(text).__name__}")
        return self._record(name, "text", count(text), O200K)

    def tools(self, tools_or_server: Any, *, name: str | None = None) -> ToolsReport:
        """Weigh tool definitions and record their claude total; returns the ToolsReport.

        Accepts a tools array (MCP, OpenAI or Anthropic dicts, the mcp SDK's ``Tool``
        models, or a ``tools/list`` result), a path to such a file, a server given as a
        mapping of ``weigh_source`` arguments (``{"command": [...]}``, ``{"url": ...}``), or
        an mcp SDK server object (``MCPServer``, FastMCP), listed in-process.
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

    def capture(self, *, budget: int | None = None, run_budget: int | None = None) -> Capture:
        """Record the LLM requests sent inside ``with toll.capture():`` (httpx, sync and
        async, and boto3 clients; the APIs of :mod:`pytest_toll.calls.providers`). At the
        end of the test the largest of them is recorded as ``largest captured request``;
        every request shows in the report. Inside ``toll(capture=True)`` it is already on
        (no double count). ``budget`` grades the test's total (the largest request, when
        that is all it measures), ``run_budget`` the sum of every request it sent; with the
        marker's, the lower of each applies.
        """
        self.budget = _lower(self.budget, _budget(budget, "budget"))
        self.run_budget = _lower(self.run_budget, _budget(run_budget, "run_budget"))
        return self.capturing

    def captured(self) -> CaptureReport:
        """The requests captured so far, measured (the model from each body)."""
        return self.capturing.measure()

    def finish_capture(self) -> CaptureReport | None:
        """Stop capturing and record the largest request judged; None when never captured."""
        self.capturing.close()
        if not self.capturing.used:
            return None
        report = self.captured()
        largest = report.largest
        recorded = any(record.source == CAPTURE_SOURCE for record in self.records)
        if largest is not None and largest.tokens is not None and not recorded:
            parts = (
                {name: largest.report.parts[name].tokens for name in PARTS}
                if largest.report is not None
                else None
            )
            self._record("largest captured request", CAPTURE_SOURCE, largest.tokens, O200K, parts)
        return report


def _budget(value: object, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(
            f"toll.capture({name}=…): must be a whole number of tokens >= 0, not {value!r}"
        )
    return value


def _lower(first: int | None, second: int | None) -> int | None:
    given = [value for value in (first, second) if value is not None]
    return min(given) if given else None


SERVER_KEYS = frozenset({"command", "url", "tools_file"})


def _weigh(tools_or_server: Any, window: int) -> ToolsReport:
    if isinstance(tools_or_server, Mapping) and SERVER_KEYS & set(tools_or_server):
        arguments = dict(tools_or_server)
        arguments.setdefault("window", window)
        return weigh_source(**arguments)
    if isinstance(tools_or_server, str | Path):
        tools, shape = load_tools_file(tools_or_server)
        return weigh(tools, target=str(tools_or_server), source_shape=shape, window=window)
    if isinstance(tools_or_server, Mapping):
        tools, shape = normalize_tools(tools_or_server)
        return weigh(tools, target="tools", source_shape=shape, window=window)
    if isinstance(tools_or_server, Sequence):
        tools, shape = normalize_tools([_plain(tool) for tool in tools_or_server])
        return weigh(tools, target="tools", source_shape=shape, window=window)
    if callable(getattr(tools_or_server, "list_tools", None)):
        return _weigh_sdk_server(tools_or_server, window)
    raise CouldNotJudge(
        "toll.tools() needs a tools array (dicts or the mcp SDK's Tool models), a tools file "
        f"path, a server mapping or an mcp SDK server, not {type(tools_or_server).__name__}"
    )


def _plain(tool: Any) -> Any:
    """A tool as its wire dict: a pydantic model (the mcp SDK's ``Tool``) is dumped by alias
    (``inputSchema``), without unset fields, as the SDK itself sends it."""
    dump = getattr(tool, "model_dump", None)
    if callable(dump) and not isinstance(tool, Mapping):
        return dump(mode="json", by_alias=True, exclude_none=True)
    return tool


def _weigh_sdk_server(server: Any, window: int) -> ToolsReport:
    """The tools an in-process server object lists (the mcp SDK's ``MCPServer``, FastMCP):
    its own ``list_tools()``, no subprocess and no transport. Duck-typed, so the mcp SDK is
    never imported here."""
    name = str(getattr(server, "name", "") or type(server).__name__)
    try:
        listed = _result_of(server.list_tools())
    except Exception as error:
        raise CouldNotJudge(
            f"{name}: list_tools() failed: {type(error).__name__}: {error}"
        ) from None
    if not isinstance(listed, Sequence) or isinstance(listed, str | bytes):
        raise CouldNotJudge(f"{name}: list_tools() returned {type(listed).__name__}, not a list")
    tools, _ = normalize_tools([_plain(tool) for tool in listed], source=name)
    instructions = getattr(server, "instructions", None)
    return weigh(
        tools,
        instructions=instructions if isinstance(instructions, str) else None,
        target=name,
        source_shape="mcp",
        window=window,
    )


def _result_of(value: Any) -> Any:
    """``value``, or what it resolves to when it is a coroutine (an async ``list_tools``)."""
    if not inspect.isawaitable(value):
        return value
    import asyncio

    async def wait() -> Any:
        return await value

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(wait())
    # Called from inside an event loop (an async test): a loop of its own, in a thread.
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, wait()).result()
