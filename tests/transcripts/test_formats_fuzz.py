"""Each reader of the other agents' formats, fed arbitrary bytes or arbitrary JSON shaped
like its own, yields records and bad lines and raises nothing but the project's own
could-not-judge error."""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.transcripts.formats import FORMATS, Format, read_records
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    PairedByOrder,
    ResultRecord,
    TextRecord,
    UsageRecord,
)

RECORD_TYPES = (
    BadLine, BoundaryRecord, CallRecord, ResultRecord, TextRecord, UsageRecord, PairedByOrder
)  # fmt: skip
KEYS = st.sampled_from(
    ["type", "id", "role", "content", "parts", "message", "data", "toolCalls", "result",
     "status", "tokens", "args", "functionCall", "functionResponse", "response", "output",
     "error", "toolCallId", "toolName", "arguments", "success", "sessionId", "projectHash",
     "$set", "messages", "tool_calls", "source", "step_index", "truncated_fields", "usage",
     "info", "state", "callID", "tool", "action", "observation", "cause", "history",
     "tool_call_metadata", "model_response", "ts", "say", "ask", "text", "toolCallResult",
     "callId", "usageMetadata", "name", "input", "tool_use_id", "projectID", "directory",
     "context", "chatMessages", "tool_call_id", "function", "input_tokens", "cache_read_tokens"]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 10**6), st.text(max_size=12),
    st.sampled_from(["user", "gemini", "assistant", "tool", "completed", "error",
                     "tool_result", "PLANNER_RESPONSE", "MODEL", "tool.execution_start",
                     "tool.execution_complete", "assistant.usage", "run", "say", "command",
                     "command_output", "api_req_started", "ses_1", "step-finish", "SYSTEM_MESSAGE",
                     "RUNNING", "background task with task id: t1",
                     'Task id "t1" finished with result: ok', "[read_file for 'a'] Result:"]),
)  # fmt: skip
JSON_VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=6),
    max_leaves=30,
)


def _drain(format: Format, data: bytes, document: bool) -> Iterator[Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "session.json"
        path.write_bytes(data)
        try:
            yield from format.read(path, with_text=True, max_line_bytes=4096, document=document)
        except CouldNotJudge:
            return


@pytest.mark.parametrize("format", FORMATS, ids=lambda format: format.name)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400), document=st.booleans())
def test_arbitrary_bytes(format: Format, data: bytes, document: bool) -> None:
    for record in _drain(format, data, document):
        assert isinstance(record, RECORD_TYPES)


@pytest.mark.parametrize("format", FORMATS, ids=lambda format: format.name)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(JSON_VALUES, min_size=1, max_size=4), document=st.booleans())
def test_arbitrary_json_of_the_formats_own_keys(
    format: Format, values: list[Any], document: bool
) -> None:
    lines = "\n".join(json.dumps(value) for value in values).encode()
    whole = json.dumps(values if len(values) > 1 else values[0]).encode()
    for record in _drain(format, whole if document else lines, document):
        assert isinstance(record, RECORD_TYPES)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.binary(max_size=400))
def test_detection_and_dispatch_never_raise(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "anything.jsonl"
        path.write_bytes(data)
        for record in read_records(path, with_text=True):
            assert isinstance(record, RECORD_TYPES)
