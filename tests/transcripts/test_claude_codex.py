"""Claude Code and Codex transcripts: records, pairing inputs, deduplication, bad input, image
headers."""

from __future__ import annotations

import base64
import json
import struct
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.transcripts.formats import read_records, transcript_format
from pytest_toll.transcripts.images import Image, image_size
from pytest_toll.transcripts.locations import default_roots, discover
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    ResultRecord,
    TextRecord,
    UsageRecord,
)
from pytest_toll.transcripts.summary import summarize_file

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
MAIN = FIXTURES / "claude" / "repo" / "sess-main.jsonl"
SUBAGENT = FIXTURES / "claude" / "repo" / "sess-main" / "subagents" / "agent-abc.jsonl"
CODEX = FIXTURES / "codex" / "2026" / "11" / "01" / "rollout-2026-11-01-codex-1.jsonl"
CORRUPT = FIXTURES / "corrupt" / "sess-bad.jsonl"


def test_claude_usage_is_deduplicated_per_message_id() -> None:
    usages = [r for r in read_records(MAIN) if isinstance(r, UsageRecord)]
    # msg_1 is written on four lines, msg_2 on seven, msg_3 on three: three turns.
    assert [(u.input, u.cache_read, u.cache_creation, u.output) for u in usages] == [
        (100, 0, 1000, 50),
        (10, 1100, 300, 40),
        (5, 1400, 200, 30),
    ]
    assert [u.prompt for u in usages] == [1100, 1410, 1605]
    assert {u.model for u in usages} == {"claude-sonnet-4-5"}


def test_claude_calls_and_results_keep_their_ids_and_file_order() -> None:
    records = list(read_records(MAIN))
    calls = [r.call_id for r in records if isinstance(r, CallRecord)]
    results = [r.call_id for r in records if isinstance(r, ResultRecord)]
    assert calls == [f"toolu_{n}" for n in range(1, 13)]
    assert results[:2] == ["toolu_2", "toolu_1"]  # the out-of-order pair, as written
    assert "toolu_orphan" in results and "toolu_9" not in results
    image = next(r for r in records if isinstance(r, ResultRecord) and r.call_id == "toolu_8")
    assert image.images == (Image("image/png", 100, 50),) and image.text == ""
    opaque = next(r for r in records if isinstance(r, ResultRecord) and r.call_id == "toolu_7")
    assert (opaque.text, opaque.opaque_blocks) == ("", 1)
    error = next(r for r in records if isinstance(r, ResultRecord) and r.call_id == "toolu_4")
    assert error.is_error


def test_text_records_only_when_asked() -> None:
    assert not [r for r in read_records(MAIN) if isinstance(r, TextRecord)]
    sources = [r.source for r in read_records(MAIN, with_text=True) if isinstance(r, TextRecord)]
    assert sources[:4] == ["user", "thinking", "assistant", "call"]


def test_subagent_file_is_its_own_session() -> None:
    sessions = {r.session for r in read_records(SUBAGENT) if not isinstance(r, BadLine)}
    assert sessions == {"sess-main:agent-abc"}


def test_codex_rollout_pairs_on_call_id_and_reads_exit_codes() -> None:
    records = list(read_records(CODEX))
    calls = {r.call_id: r for r in records if isinstance(r, CallRecord)}
    assert calls["c1"].input == {"command": ["bash", "-lc", "git status"]}
    assert calls["c3"].tool == "apply_patch"
    results = {r.call_id: r for r in records if isinstance(r, ResultRecord)}
    assert results["c2"].is_error and results["c2"].text == "ls: cannot access"
    assert not results["c1"].is_error
    usages = [r for r in records if isinstance(r, UsageRecord)]
    # the repeated token_count event is one turn; input_tokens include the cached part
    assert [(u.input, u.cache_read, u.output, u.model) for u in usages] == [
        (200, 800, 50, "gpt-5-codex"),
        (300, 1000, 60, "gpt-5-codex"),
    ]
    assert {r.session for r in records if not isinstance(r, BadLine)} == {"codex-1"}
    assert transcript_format(CODEX) == "codex" and transcript_format(MAIN) == "claude"


def test_codex_exit_code_banner_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "rollout.jsonl"
    lines = [
        {
            "type": "response_item",
            "payload": {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"false"}',
                "call_id": "x",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "function_call_output",
                "call_id": "x",
                "output": "Process exited with code 1\nOutput:\n",
            },
        },
    ]
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (result,) = [r for r in read_records(path) if isinstance(r, ResultRecord)]
    assert result.is_error


def test_corrupt_file_counts_each_bad_line() -> None:
    bad = [(r.line, r.reason) for r in read_records(CORRUPT) if isinstance(r, BadLine)]
    assert bad == [(2, "not JSON"), (3, "not a JSON object"), (5, "invalid UTF-8"), (6, "not JSON")]
    assert len([r for r in read_records(CORRUPT) if isinstance(r, ResultRecord)]) == 1


def test_a_50_megabyte_line_is_counted_not_held(tmp_path: Path) -> None:
    path = tmp_path / "huge.jsonl"
    with path.open("wb") as out:
        out.write(b'{"type":"user","message":{"role":"user","content":"')
        out.write(b"x" * (50 * 1024 * 1024))
        out.write(b'"}}\n{"type":"system","subtype":"compact_boundary","sessionId":"s"}\n')
    records = list(read_records(path))
    assert records == [
        BadLine(1, "line longer than 16,777,216 bytes, skipped"),
        BoundaryRecord("s"),
    ]


def test_compaction_boundary_record() -> None:
    path = FIXTURES / "claude" / "repo" / "sess-main.jsonl"
    assert not [r for r in read_records(path) if isinstance(r, BoundaryRecord)]


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_never_crash(tmp_path: Path, data: bytes) -> None:
    path = tmp_path / "fuzz.jsonl"
    path.write_bytes(data)
    for record in read_records(path, with_text=True, max_line_bytes=64):
        assert not isinstance(record, BadLine) or record.line >= 1
    summary = summarize_file(path, drift=True, count=len, max_line_bytes=64)
    assert summary.unreadable_lines <= data.count(b"\n") + 1


_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "message",
                    "content",
                    "id",
                    "usage",
                    "payload",
                    "tool_use_id",
                    "input",
                    "name",
                    "call_id",
                    "output",
                    "text",
                    "source",
                    "data",
                ]
            ),
            children,
            max_size=5,
        )
    ),
    max_leaves=20,
)


@settings(
    max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(lines=st.lists(_json_values, max_size=8))
def test_arbitrary_json_shapes_never_crash(tmp_path: Path, lines: list[object]) -> None:
    path = tmp_path / "shapes.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    summary = summarize_file(path, drift=True, count=len)
    # Every line is valid JSON: at most each line is unreadable (a shape no reader knows),
    # each one is named among the problems kept, and every tallied call is in the log.
    assert summary.unreadable_lines <= len(lines)
    assert len(summary.problems) == min(summary.unreadable_lines, 5)
    assert sum(tally.calls for tally in summary.shapes.values()) == len(summary.call_log)


def _png(width: int, height: int) -> bytes:
    return (
        b"\x89PNG\r\n\x1a\n"
        + struct.pack(">I", 13)
        + b"IHDR"
        + struct.pack(">II", width, height)
        + b"\x08\x02\x00\x00\x00"
    )


@pytest.mark.parametrize(
    ("data", "size"),
    [
        (_png(1920, 1080), (1920, 1080)),
        (b"GIF89a" + struct.pack("<HH", 32, 16), (32, 16)),
        (
            b"\xff\xd8\xff\xe0\x00\x04\x00\x00\xff\xc0\x00\x11\x08"
            + struct.pack(">HH", 480, 640)
            + b"\x03" * 8,
            (640, 480),
        ),
        (
            b"RIFF\x00\x00\x00\x00WEBPVP8X\x0a\x00\x00\x00\x00\x00\x00\x00"
            + (99).to_bytes(3, "little")
            + (49).to_bytes(3, "little"),
            (100, 50),
        ),
        (b"not an image", None),
    ],
)
def test_image_headers(data: bytes, size: tuple[int, int] | None) -> None:
    assert image_size(data) == size
    assert base64.b64encode(data)  # the reader decodes base64 before this


def test_roots_from_environment_and_discovery(tmp_path: Path) -> None:
    import os

    assert default_roots({"TOLL_TRANSCRIPTS": f"/a{os.pathsep}/b"}) == [Path("/a"), Path("/b")]
    found = discover([FIXTURES / "claude", MAIN])
    assert [p.relative_to(FIXTURES).as_posix() for p in found] == [
        "claude/flaky/sess-flaky.jsonl",
        "claude/repo/sess-main/subagents/agent-abc.jsonl",
        "claude/repo/sess-main.jsonl",
    ]


def test_synthetic_zero_usage_is_not_a_turn(tmp_path: Path) -> None:
    usage = {"input_tokens": 0, "output_tokens": 0, "cache_read_input_tokens": 0}
    message = {
        "id": "m0",
        "role": "assistant",
        "model": "<synthetic>",
        "content": "API Error",
        "usage": usage,
    }
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps({"type": "assistant", "sessionId": "s", "message": message}) + "\n")
    assert [r for r in read_records(path) if isinstance(r, UsageRecord)] == []


def test_codex_arguments_neither_text_nor_an_object_are_none(tmp_path: Path) -> None:
    lines = [
        {"type": "session_meta", "payload": {"id": "cx"}},
        {
            "type": "response_item",
            "payload": {"type": "function_call", "call_id": "a", "name": "f", "arguments": [1]},
        },
        {
            "type": "response_item",
            "payload": {"type": "custom_tool_call", "call_id": "b", "name": "g", "input": "raw"},
        },
    ]
    path = tmp_path / "rollout-args.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    calls = [r for r in read_records(path) if isinstance(r, CallRecord)]
    assert [dict(call.input) for call in calls] == [{}, {"input": "raw"}]


def test_codex_local_shell_and_image_outputs(tmp_path: Path) -> None:
    png = base64.b64encode(_png(64, 32)).decode()
    lines = [
        {
            "type": "response_item",
            "payload": {
                "type": "local_shell_call",
                "call_id": "l1",
                "action": {"type": "exec", "command": ["git", "diff"]},
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "local_shell_call_output",
                "call_id": "l1",
                "output": "diff --git a b",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call",
                "call_id": "v1",
                "name": "view_image",
                "input": "{}",
            },
        },
        {
            "type": "response_item",
            "payload": {
                "type": "custom_tool_call_output",
                "call_id": "v1",
                "output": [{"type": "input_image", "image_url": f"data:image/png;base64,{png}"}],
            },
        },
    ]
    path = tmp_path / "rollout-x.jsonl"
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    records = list(read_records(path))
    calls = [r for r in records if isinstance(r, CallRecord)]
    assert [(c.tool, dict(c.input)) for c in calls] == [
        ("local_shell", {"command": ["git", "diff"]}),
        ("view_image", {}),
    ]
    results = [r for r in records if isinstance(r, ResultRecord)]
    assert results[0].text == "diff --git a b"
    assert results[1].images == (Image("image/png", 64, 32),)


def test_a_line_nested_past_the_parsers_depth_says_so(tmp_path: Path) -> None:
    """JSON nested 2,000 levels deep is not "not JSON": the bad line says why it was left."""
    path = tmp_path / "deep.jsonl"
    deep = '{"type": "user", "message": ' + '{"a": ' * 2000 + "1" + "}" * 2000 + "}"
    path.write_text(deep + "\n" + '{"type": "user", "message": {"a":\n')
    bad = [(r.line, r.reason) for r in read_records(path) if isinstance(r, BadLine)]
    assert bad == [(1, "nests too deeply to read"), (2, "not JSON")]
