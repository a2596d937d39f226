"""The typed reader (msgspec schemas, :mod:`pytest_toll.core.jsonlines`) against its oracle,
the dict reader: identical records on arbitrary and real-shaped Claude Code and Codex lines,
lines of every wrong type and out-of-range count among them, and identical ``toll scan
--json`` reports on every transcript fixture."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_toll.core import jsonlines
from pytest_toll.transcripts.formats import claude, codex
from pytest_toll.transcripts.records import BadLine, CallRecord, Record, ResultRecord, UsageRecord
from tests.cli import run_main

FIXTURES = Path(__file__).parents[1] / "fixtures"

# Values of every JSON type, and the numbers at the edges of each parser's integer range.
ODD = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63) - 1]),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=4), st.integers(), max_size=2),
)
#: The fields the schemas name (claude's and codex's ``_Line`` and what they hold).
READ = frozenset(
    name
    for module in (claude, codex)
    for schema in vars(module).values()
    if isinstance(schema, type) and issubclass(schema, jsonlines.Struct)
    for name in schema.__struct_fields__
)
KEYS = st.text(max_size=6).filter(lambda key: key not in READ)
JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False,
              allow_infinity=False), st.text(max_size=20)),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(KEYS, inner, max_size=3),
    max_leaves=12,
)  # fmt: skip
COUNTS = st.one_of(st.integers(0, 10**6), ODD)
SESSIONS = st.sampled_from(["s-1", "s-2", "", "agent-x"])
IDS = st.sampled_from(["toolu_1", "toolu_2", "call_1", "msg_1", "msg_2"])


def _maybe(value: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field as written, or of another type now and then, or absent (``...``)."""
    return st.one_of(value, value, value, ODD, st.just(...))


def _object(**fields: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    present = st.fixed_dictionaries({name: _maybe(value) for name, value in fields.items()})
    extra = st.dictionaries(st.sampled_from(["toolUseResult", "uuid", "signature"]), JSON)
    return st.builds(
        lambda values, more: {**more, **{k: v for k, v in values.items() if v is not ...}},
        present,
        extra,
    )


IMAGE = st.fixed_dictionaries(
    {"type": st.just("image"), "source": st.fixed_dictionaries(
        {"type": st.just("base64"), "media_type": st.just("image/png"), "data": st.text(max_size=8)})}
)  # fmt: skip
RESULT_CONTENT = st.one_of(
    st.text(max_size=30),
    st.lists(
        st.one_of(_object(type=st.just("text"), text=st.text(max_size=20)), IMAGE), max_size=3
    ),
    JSON,
)
CLAUDE_BLOCK = st.one_of(
    _object(type=st.just("tool_use"), id=IDS, name=st.sampled_from(["Read", "Bash", ""]),
            input=st.one_of(st.dictionaries(st.sampled_from(["file_path", "command"]), JSON), JSON)),
    _object(type=st.just("tool_result"), tool_use_id=IDS, content=RESULT_CONTENT,
            is_error=st.booleans()),
    _object(type=st.just("text"), text=st.text(max_size=10)),
    _object(type=st.just("thinking"), thinking=st.text(max_size=10), signature=st.text()),
)  # fmt: skip
USAGE = _object(
    input_tokens=COUNTS, output_tokens=COUNTS, cache_read_input_tokens=COUNTS,
    cache_creation_input_tokens=COUNTS,
    cache_creation=_object(ephemeral_1h_input_tokens=COUNTS, ephemeral_5m_input_tokens=COUNTS),
)  # fmt: skip
CLAUDE_LINE = _object(
    type=st.sampled_from(["assistant", "user", "system", "progress", "file-history-snapshot"]),
    subtype=st.sampled_from(["compact_boundary", "other"]),
    sessionId=SESSIONS, agentId=st.sampled_from(["x", "agent-x"]), isSidechain=st.booleans(),
    cwd=st.sampled_from(["/repo", "C:\\repo"]),
    message=_object(id=IDS, model=st.sampled_from(["claude-opus-4-1", ""]), usage=USAGE,
                    content=st.one_of(st.text(max_size=10), st.lists(CLAUDE_BLOCK, max_size=4))),
)  # fmt: skip
CODEX_PAYLOAD = _object(
    type=st.sampled_from(["function_call", "custom_tool_call", "local_shell_call",
                          "function_call_output", "custom_tool_call_output",
                          "local_shell_call_output", "message", "reasoning", "token_count",
                          "context_compacted"]),
    id=SESSIONS, model=st.sampled_from(["gpt-5", ""]), call_id=IDS, name=st.sampled_from(["shell", ""]),
    arguments=st.one_of(st.builds(json.dumps, JSON), JSON), input=st.one_of(st.text(max_size=10), JSON),
    action=_object(command=JSON),
    output=st.one_of(st.sampled_from(['{"output": "x", "metadata": {"exit_code": 1}}',
                                      "Exit code: 0\nok", "Process exited with code 2"]),
                     RESULT_CONTENT, _object(content=RESULT_CONTENT)),
    info=_object(total_token_usage=st.sampled_from([{"t": 1}, {"t": 2}, None]),
                 last_token_usage=_object(input_tokens=COUNTS, cached_input_tokens=COUNTS,
                                          output_tokens=COUNTS)),
)  # fmt: skip
CODEX_LINE = _object(
    type=st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "compacted"]),
    payload=CODEX_PAYLOAD,
)  # fmt: skip

#: Bytes a line may be spoiled with: invalid UTF-8, numbers no parser reads as a count,
#: a cut, a value nested past every parser's depth.
SPOILS = st.sampled_from(
    [b"", b"\xff", b"\xc3", b"1e400", b"1" * 401, b"-1e999", b'"\\ud800"', b"[" * 1100]
)


@contextmanager
def _path(name: str) -> Iterator[None]:
    before = os.environ.get(jsonlines.ENVIRONMENT)
    os.environ[jsonlines.ENVIRONMENT] = name
    try:
        yield
    finally:
        if before is None:
            del os.environ[jsonlines.ENVIRONMENT]
        else:
            os.environ[jsonlines.ENVIRONMENT] = before


def _both(
    module: Any, data: bytes, name: str = "session.jsonl"
) -> tuple[list[Record], list[Record]]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        path.write_bytes(data)

        def read() -> list[Record]:
            return list(module.read(path, with_text=False, max_line_bytes=1 << 16, document=False))

        with _path(jsonlines.PURE):
            pure = read()
        with _path("typed"):
            typed = read()
    return pure, typed


def _spoiled(line: bytes, spoil: bytes, where: int) -> bytes:
    """The line cut short, or with ``spoil`` in place of the scalar value of a field the
    schemas name (elsewhere a number that overflows is the one documented difference, see
    :func:`test_the_one_documented_difference_a_huge_number_in_a_field_never_read`); as is
    when it has no such field."""
    if not spoil:
        return line[: where % (len(line) + 1)]
    text = line.decode()
    marks = [match.end() for match in re.finditer(r'"(\w+)":', text) if match.group(1) in READ]
    if not marks:
        return line
    at = marks[where % len(marks)]
    while text[at : at + 1] == " ":
        at += 1
    end = at
    while end < len(text) and text[end] not in ",}]":
        end += 1
    if text[at : at + 1] in ("{", "["):
        return line
    return text[:at].encode() + spoil + text[end:].encode()


def _lines(values: list[dict[str, Any]], spoils: list[tuple[bytes, int]]) -> bytes:
    lines = [json.dumps(value).encode() for value in values]
    for index, (spoil, where) in enumerate(spoils[: len(lines)]):
        lines[index] = _spoiled(lines[index], spoil, where)
    return b"\n".join(lines) + b"\n"


SETTINGS = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow
@SETTINGS
@given(
    st.lists(CLAUDE_LINE, min_size=1, max_size=6),
    st.lists(st.tuples(SPOILS, st.integers(0, 10**6)), max_size=3),
    st.booleans(),
)
@example(
    [{"type": "assistant", "message": {"id": "m", "usage": {"input_tokens": 2**64}}}], [], False
)
@example(
    [{"type": "assistant", "message": {"id": "m", "usage": {"input_tokens": 10**400}}}], [], False
)
def test_claude_lines_read_alike_on_both_paths(
    values: list[dict[str, Any]], spoils: list[tuple[bytes, int]], subagent: bool
) -> None:
    name = "agent-a1.jsonl" if subagent else "session.jsonl"
    pure, typed = _both(claude, _lines(values, spoils), name)
    assert typed == pure


@pytest.mark.slow
@SETTINGS
@given(
    st.lists(CODEX_LINE, min_size=1, max_size=6),
    st.lists(st.tuples(SPOILS, st.integers(0, 10**6)), max_size=3),
)
def test_codex_lines_read_alike_on_both_paths(
    values: list[dict[str, Any]], spoils: list[tuple[bytes, int]]
) -> None:
    pure, typed = _both(codex, _lines(values, spoils))
    assert typed == pure


@pytest.mark.slow
@SETTINGS
@given(st.lists(st.binary(max_size=60), min_size=1, max_size=4))
def test_arbitrary_bytes_read_alike_on_both_paths(lines: list[bytes]) -> None:
    data = b"\n".join(lines) + b"\n"
    for module in (claude, codex):
        pure, typed = _both(module, data)
        assert typed == pure


def test_a_line_of_each_kind_is_read_typed_and_alike() -> None:
    """Real-shaped lines (one of each kind the readers use) give their records on both paths,
    and the typed path gives none of them up (it would be no faster if it did)."""
    claude_lines = [
        {"type": "assistant", "sessionId": "s", "cwd": "/r", "message": {
            "id": "m1", "model": "claude-opus-4-1",
            "usage": {"input_tokens": 3, "output_tokens": 5, "cache_read_input_tokens": 100,
                      "cache_creation_input_tokens": 7,
                      "cache_creation": {"ephemeral_1h_input_tokens": 7}},
            "content": [{"type": "thinking", "thinking": "hm", "signature": "EqQB"},
                        {"type": "tool_use", "id": "t1", "name": "Read",
                         "input": {"file_path": "/r/a.py", "limit": 1.5}}]}},
        {"type": "user", "sessionId": "s", "toolUseResult": {"file": {"content": "x"}},
         "message": {"role": "user", "content": [
             {"type": "tool_result", "tool_use_id": "t1", "is_error": False,
              "content": [{"type": "text", "text": "1\tprint()"}]}]}},
        {"type": "system", "subtype": "compact_boundary", "sessionId": "s"},
    ]  # fmt: skip
    codex_lines = [
        {"type": "session_meta", "payload": {"id": "rollout-1", "cwd": "/r"}},
        {"type": "turn_context", "payload": {"model": "gpt-5"}},
        {"type": "response_item", "payload": {"type": "function_call", "name": "shell",
                                              "arguments": '{"command": ["ls"]}', "call_id": "c1"}},
        {"type": "response_item", "payload": {"type": "function_call_output", "call_id": "c1",
                                              "output": "Exit code: 1\nno"}},
        {"type": "event_msg", "payload": {"type": "token_count", "info": {
            "total_token_usage": {"input_tokens": 9},
            "last_token_usage": {"input_tokens": 9, "cached_input_tokens": 4, "output_tokens": 2}}}},
    ]  # fmt: skip
    for module, values, kinds in (
        (claude, claude_lines, ["UsageRecord", "CallRecord", "ResultRecord", "BoundaryRecord"]),
        (codex, codex_lines, ["CallRecord", "ResultRecord", "UsageRecord"]),
    ):
        data = b"".join(json.dumps(value).encode() + b"\n" for value in values)
        pure, typed = _both(module, data)
        assert typed == pure
        assert [type(record).__name__ for record in typed] == kinds
        decode = module._decode
        for value in values:
            module._typed_records(
                decode(json.dumps(value).encode()), module._Lines(Path("s"), False)
            )


def test_a_count_out_of_range_or_of_another_type_is_read_as_the_dict_reader_reads_it() -> None:
    lines = b"".join(
        b'{"type": "assistant", "message": {"id": "m%d", "usage": {"input_tokens": %s, '
        b'"output_tokens": 1}, "content": [{"type": "tool_use", "id": "t%d", "name": "Bash", '
        b'"input": {"n": %s}}]}}\n' % (index, value, index, value)
        for index, value in enumerate(
            [b"18446744073709551616", b"9223372036854775808", b"1" * 400, b"1e400", b"2.5", b"true"]
        )
    )
    pure, typed = _both(claude, lines)
    assert typed == pure
    # orjson reads 2**64 and beyond as a float and refuses what overflows a double; a token
    # count past MAX_TOKEN_COUNT (2**40) is a bad line of its own (core/limits.py)
    assert sum(isinstance(record, BadLine) for record in pure) == 4
    calls = [record for record in typed if isinstance(record, CallRecord)]
    assert [call.input["n"] for call in calls] == [2.5, True]


def test_the_one_documented_difference_a_huge_number_in_a_field_never_read() -> None:
    """orjson refuses a number that overflows a double anywhere in a line; msgspec skips a
    field the schema does not name without reading its numbers, so the typed path reads the
    line's records where the pure path counts one bad line (core/jsonlines.py says so)."""
    line = (
        b'{"type": "user", "toolUseResult": {"size": 1e400}, "message": {"content": '
        b'[{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]}}\n'
    )
    pure, typed = _both(claude, line)
    assert [type(record) for record in pure] == [BadLine]
    assert [type(record) for record in typed] == [ResultRecord]


def _scan_json(capsys: pytest.CaptureFixture[str], roots: list[Path], parser: str) -> Any:
    with _path(parser):
        arguments = ["scan", "--json", "--no-cache", "--workers", "1"]
        for root in roots:
            arguments += ["--root", str(root)]
        code, out, err = run_main(capsys, *arguments)
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    "roots",
    [
        ["transcripts/claude"],
        ["transcripts/codex"],
        ["transcripts/claude", "transcripts/codex", "transcripts/corrupt"],
        ["agents"],
    ],
)
def test_toll_scan_reports_alike_on_both_paths(
    capsys: pytest.CaptureFixture[str], roots: list[str]
) -> None:
    folders = [FIXTURES / root for root in roots]
    pure = _scan_json(capsys, folders, jsonlines.PURE)
    typed = _scan_json(capsys, folders, "typed")
    assert typed == pure
    assert pure["calls"] > 0


def _doctor_reader(capsys: pytest.CaptureFixture[str], parser: str, cache: Path) -> str:
    """The detail of ``toll doctor --json``'s transcript reader check under ``TOLL_PARSER``."""
    before = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(cache)
    try:
        with _path(parser):
            _, out, _ = run_main(capsys, "doctor", "--json")
    finally:
        if before is None:
            del os.environ["XDG_CACHE_HOME"]
        else:
            os.environ["XDG_CACHE_HOME"] = before
    checks = {check["check"]: check for check in json.loads(out)["checks"]}
    reader = checks["transcript reader"]
    assert reader["status"] == "ok"
    detail: str = reader["detail"]
    return detail


def test_doctor_says_typed_when_msgspec_imports_and_pure_when_asked(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # What the release workflow asserts of the wheel installed alone on each platform.
    import msgspec

    typed = _doctor_reader(capsys, "typed", tmp_path)
    assert typed.startswith(f"typed: msgspec {msgspec.__version__} ")
    assert _doctor_reader(capsys, "", tmp_path).startswith("typed: msgspec")
    pure = _doctor_reader(capsys, jsonlines.PURE, tmp_path)
    assert pure.startswith("pure Python") and "TOLL_PARSER=pure" in pure


def test_a_codex_count_out_of_range_leaves_the_next_one_of_that_total_counted() -> None:
    # Codex re-emits a count with the same total; when the first copy is a bad line (a count
    # out of range), the re-emission is the turn's only readable copy. The dict reader (which
    # the typed one falls back to for such a line) marked the total seen before reading the
    # count and dropped it; one function now serves both readers and reads the count first.
    def token_count(input_tokens: str) -> bytes:
        return (
            b'{"type": "event_msg", "payload": {"type": "token_count", "info": '
            b'{"total_token_usage": {"total_tokens": 50}, "last_token_usage": '
            b'{"input_tokens": %s, "output_tokens": 2}}}}\n' % input_tokens.encode()
        )

    meta = b'{"type": "session_meta", "payload": {"id": "s1"}}\n'
    pure, typed = _both(
        codex, meta + token_count("18446744073709551616") + token_count("7"), "rollout-x.jsonl"
    )
    assert typed == pure
    assert sum(isinstance(record, BadLine) for record in pure) == 1
    assert [r.input for r in pure if isinstance(r, UsageRecord)] == [7]
