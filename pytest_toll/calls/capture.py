"""LLM requests captured while a test ran: read by API, measured like a request body.

The pytest adapter's hook (:mod:`pytest_toll.capture_hook`) hands over what was sent as a
:class:`SentRequest` (the endpoint and the body bytes, never a header); this module reads
the body as the call it makes (:mod:`pytest_toll.calls.providers`: which APIs, and how each
body's parts are found) and measures it with :func:`measure` exactly as ``toll measure
--messages body.json`` measures a request body: parts messages, system, skills and tools,
o200k (what budgets grade) and the model's scaled figure, USD when the model is priced.

What is kept of a request is its measurement, never its body: a run of many large requests
holds a few hundred bytes per request (:meth:`CaptureReport.as_dict` is all of it).

A body that cannot be read or measured (not JSON, nested past the depth limit, a shape the
API does not have) is a request that "could not judge", with the reason, never a request
dropped. Built-in tools a provider runs itself (web search, code execution) have no
definition in the body to count: they are left out and a note says so.

The run: ``largest`` is what ``budget`` grades, ``sum`` (the o200k totals of every request
added up) what ``run_budget`` grades. Of the sum, ``new`` is what each request adds over the
one before it (``max(tokens[i] - tokens[i-1], 0)``, the first request counting whole) and
``resent`` the rest, ``sum - new``: in an agent loop that resends its history every turn,
the history paid again. For one growing conversation ``new`` is the last request's size; it
assumes each request extends the previous one, so for unrelated requests it is an upper
bound on what was really resent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_toll.calls.measuring import PARTS, CallReport, measure
from pytest_toll.calls.prompt_caching import (
    NO_MARKS,
    CachedRequest,
    CacheMarks,
    cache_marks,
    run_cost,
)
from pytest_toll.calls.providers import (
    ANTHROPIC_MESSAGES,
    APIS,
    BEDROCK_CONVERSE,
    BEDROCK_INVOKE,
    GEMINI,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    UNSCALED_GEMINI,
    VERTEX_ANTHROPIC,
    WireCall,
    read_call,
    recognise,
    responses_messages,
)
from pytest_toll.core.errors import CouldNotJudge, UsageError, describe_type
from pytest_toll.core.models import Catalogue, Model, load_models
from pytest_toll.core.textio import TooDeep, json_within_depth
from pytest_toll.core.tokens import O200K

__all__ = [
    "ANTHROPIC_MESSAGES",
    "APIS",
    "BEDROCK_CONVERSE",
    "BEDROCK_INVOKE",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "VERTEX_ANTHROPIC",
    "CaptureReport",
    "MeasuredRequest",
    "SentRequest",
    "measure_request",
    "measure_sent",
    "recognise",
    "responses_messages",
]
#: The APIs whose bodies can mark prompt-caching breakpoints (Anthropic-shaped bodies).
_CACHING_APIS = (ANTHROPIC_MESSAGES, BEDROCK_INVOKE, BEDROCK_CONVERSE, VERTEX_ANTHROPIC)


@dataclass(frozen=True)
class SentRequest:
    """One request as it was sent: where to (no query string, no header) and its body.

    ``body`` is None when it could not be read, and ``read_error`` says why.
    """

    api: str
    host: str
    path: str
    body: bytes | None
    read_error: str = ""


@dataclass(frozen=True)
class MeasuredRequest:
    """One captured request, measured, or the reason it could not be."""

    number: int
    api: str
    host: str
    path: str
    model: str | None = None
    stream: bool = False
    report: CallReport | None = None
    error: str = ""
    notes: tuple[str, ...] = ()
    #: Its cacheable prefixes (``cache_control`` breakpoints), as digests and figures.
    cache: CacheMarks = NO_MARKS
    #: The catalogue row it was priced with (for the run's cache estimate).
    priced_as: Model | None = None

    @property
    def tokens(self) -> int | None:
        """The graded figure: the o200k total of the request, None when not judged."""
        return None if self.report is None else self.report.graded_tokens

    def describe(self) -> str:
        """``#2 anthropic.messages claude-sonnet-5 (stream)``: which request this is."""
        model = f" {self.model}" if self.model else ""
        return f"#{self.number} {self.api}{model}{' (stream)' if self.stream else ''}"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "number": self.number,
            "api": self.api,
            "host": self.host,
            "path": self.path,
            "model": self.model,
            "stream": self.stream,
            "tokens": self.tokens,
            "method": O200K if self.report is not None else None,
        }
        report = self.report
        if report is not None:
            data["parts"] = {name: report.parts[name].tokens for name in PARTS}
            data["scaled"] = report.total.scaled
            data["scaled_method"] = report.scaled_method
            data["cost_usd"] = report.as_dict()["total"].get("cost_usd")
            points = self.cache.breakpoints
            if points:
                data["cache_breakpoints"] = len(points)
                data["cacheable_prefix"] = max(point.tokens for point in points)
        else:
            data["error"] = self.error
        data["notes"] = [*self.notes, *(report.notes if report is not None else ())]
        return data


@dataclass(frozen=True)
class CaptureReport:
    """Every request a test sent while capturing, and the figures its budgets grade."""

    requests: tuple[MeasuredRequest, ...] = ()

    @property
    def judged(self) -> list[MeasuredRequest]:
        return [request for request in self.requests if request.report is not None]

    @property
    def unjudged(self) -> list[MeasuredRequest]:
        return [request for request in self.requests if request.report is None]

    @property
    def largest(self) -> MeasuredRequest | None:
        """The heaviest request (the first of equals): the per-call context a budget is about."""
        judged = self.judged
        return max(judged, key=lambda request: request.tokens or 0) if judged else None

    @property
    def total(self) -> int:
        """The run: the o200k totals of every judged request added up (what run_budget grades)."""
        return sum(request.tokens or 0 for request in self.judged)

    def added(self) -> dict[int, int]:
        """What each judged request adds over the one judged before it, by request number:
        the run's growth turn by turn (see the module's text)."""
        added: dict[int, int] = {}
        previous = 0
        for request in self.judged:
            tokens = request.tokens or 0
            added[request.number] = max(tokens - previous, 0)
            previous = tokens
        return added

    @property
    def new(self) -> int:
        """The sum of what each request adds over the one before it."""
        return sum(self.added().values())

    def cache_estimate(self) -> dict[str, Any] | None:
        """The run's cost with prompt caching beside it without (an estimate), when any
        request marks a breakpoint; see :mod:`pytest_toll.calls.prompt_caching`."""
        priced = [
            CachedRequest(request.priced_as, request.report.total.billed, request.cache)
            for request in self.judged
            if request.priced_as is not None and request.report is not None
        ]
        return run_cost(priced)

    def as_dict(self) -> dict[str, Any]:
        largest = self.largest
        total, new = self.total, self.new
        data: dict[str, Any] = {
            "count": len(self.requests),
            "largest": None if largest is None else largest.tokens,
            "largest_number": None if largest is None else largest.number,
            "sum": total,
            "new": new,
            "resent": total - new,
            "could_not_judge": len(self.unjudged),
            "requests": [request.as_dict() for request in self.requests],
        }
        added = self.added()
        for shown in data["requests"]:
            if shown["number"] in added:
                shown["new"] = added[shown["number"]]
        cache = self.cache_estimate()
        if cache is not None:
            data["cache"] = cache
        return data


def measure_sent(sent: Sequence[SentRequest], catalogue: Catalogue | None = None) -> CaptureReport:
    """Measure every captured request, numbered from 1 in the order they were sent; a
    request that is not a call measured here (see :func:`measure_request`) is left out."""
    catalogue = catalogue or load_models()
    measured = (measure_request(request, catalogue) for request in sent)
    kept = [request for request in measured if request is not None]
    return CaptureReport(tuple(replace(r, number=n) for n, r in enumerate(kept, 1)))


def measure_request(sent: SentRequest, catalogue: Catalogue) -> MeasuredRequest | None:
    """One request measured (numbered 0: the caller numbers it); None when its body is not
    a call measured here (a Bedrock InvokeModel body of a non-Anthropic model)."""
    request = MeasuredRequest(0, sent.api, sent.host, sent.path)
    if sent.body is None:
        return replace(request, error=f"the body could not be read: {sent.read_error}")
    try:
        body = json_within_depth(sent.body)
    except TooDeep as error:
        return replace(request, error=f"the body {error}")
    except (ValueError, UnicodeDecodeError) as error:
        return replace(request, error=f"the body is not JSON: {error}")
    if not isinstance(body, dict):
        found_type = describe_type(body, "json")
        return replace(request, error=f"the body must be a JSON object, not {found_type}")
    try:
        call = read_call(sent.api, sent.path, body)
    except CouldNotJudge as error:
        stream = body.get("stream") is True
        model = body.get("model") if isinstance(body.get("model"), str) else None
        return replace(request, model=model or None, stream=stream, error=str(error))
    if call is None:
        return None
    return _measured(request, call, catalogue)


def _measured(request: MeasuredRequest, call: WireCall, catalogue: Catalogue) -> MeasuredRequest:
    request = replace(request, model=call.model, stream=call.stream)
    notes = list(call.notes)
    try:
        model = _model(call, catalogue, notes)
        if request.api == GEMINI and not model.scale.measured:
            notes.append(UNSCALED_GEMINI)
        report = measure(model, call.system, call.messages, call.tools, catalogue=catalogue)
        cache = NO_MARKS
        if request.api in _CACHING_APIS:
            cache = cache_marks(model, call.system, call.messages, call.tools, catalogue)
    except (CouldNotJudge, UsageError) as error:
        return replace(request, error=str(error), notes=tuple(notes))
    except RecursionError:
        # A body under the JSON depth limit can still nest too deep for a measurer that
        # recurses (a schema's own nesting): could not judge, never a crashed test.
        return replace(request, error="the body nests too deep to measure", notes=tuple(notes))
    return replace(request, report=report, notes=tuple(notes), cache=cache, priced_as=model)


def _model(call: WireCall, catalogue: Catalogue, notes: list[str]) -> Model:
    """The catalogue's row for the call's model; a stand-in (no scale, no price) otherwise,
    so a model the catalogue does not know is still measured, and says so."""
    found = catalogue.find(call.catalogue_name)
    if found is not None:
        if call.catalogue_name != call.model:
            notes.append(f"{call.model} measured as the catalogue's {found.name}")
        return found
    notes.append(
        f"{call.model} is not in the model catalogue: unscaled and unpriced "
        "(add it under models: in toll.yaml)"
    )
    return Model(name=call.catalogue_name, provider=call.provider or "unknown")
