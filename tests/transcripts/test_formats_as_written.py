"""The other agents' files as the agents write them (issue #38's formats): Gemini CLI
``Content`` lists (checkpoints, error reports), Cline's native calls answered in text,
OpenCode exports known by their own structure, Antigravity and Copilot CLI. Each case counts
the calls read, the results paired and their tokens."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.core.tokens import count
from pytest_toll.transcripts.formats import Detection, copilot, detect, read_records
from pytest_toll.transcripts.formats.base import Home
from pytest_toll.transcripts.formats.opencode import session_files
from pytest_toll.transcripts.locations import discover
from pytest_toll.transcripts.records import CallRecord, ResultRecord, TextRecord, UsageRecord
from pytest_toll.transcripts.summary import summarize_file
from tests.transcripts.agents_data import AGENTS, CLINE_NATIVE, CLINE_TASKS, COPILOT, GEMINI

GEMINI_REPORT = (
    AGENTS
    / "gemini"
    / "reports"
    / "gemini-client-error-Turn.run-sendMessageStream-2026-11-22T10-00-00-000Z.json"
)
GEMINI_CHECKPOINT_IDS = GEMINI / "77aa01" / "checkpoint-ids.json"
OPENCODE_OLD_EXPORT = AGENTS / "opencode" / "export" / "ses_8.json"
ANTIGRAVITY_FULL = (
    AGENTS
    / "antigravity"
    / "antigravity-cli"
    / "brain"
    / "5eed-2"
    / ".system_generated"
    / "logs"
    / "transcript_full.jsonl"
)
COPILOT_HISTORY = (
    AGENTS
    / "copilot"
    / "history-session-state"
    / "session_3f2a9c1e-7b4d-4e5f-9a10-2b3c4d5e6f70_1759957816398.json"
)
CLINE_NATIVE_TEXT = CLINE_TASKS / "1764000000000" / "api_conversation_history.json"


def tally(path: Path) -> tuple[int, int, int]:
    """(calls read, calls paired with a result, tokens of the ok results) of one file."""
    summary = summarize_file(path)
    paired = [row for row in summary.call_log if row[2] != "unpaired"]
    return summary.calls, len(paired), sum(row[3] for row in summary.call_log if row[2] == "ok")


def test_a_gemini_error_report_is_its_context_every_call_paired_by_name_and_order() -> None:
    assert detect(GEMINI_REPORT).name == "gemini"
    report = json.loads(GEMINI_REPORT.read_text())
    outputs = [
        part["functionResponse"]["response"].get("output")
        for content in report["context"]
        for part in content["parts"]
        if "functionResponse" in part
    ]
    ok_tokens = sum(count(text) for text in outputs if text is not None)
    assert tally(GEMINI_REPORT) == (4, 4, ok_tokens)
    summary = summarize_file(GEMINI_REPORT)
    assert [(row[1], row[2]) for row in summary.call_log] == [
        ("read_file", "ok"), ("read_file", "ok"), ("$ pytest", "ok"), ("glob", "error"),
    ]  # fmt: skip
    assert summary.paired_by_order == [GEMINI_REPORT.stem] and summary.orphan_results == 0


def test_a_checkpoint_list_whose_responses_carry_made_up_ids_pairs_them(tmp_path: Path) -> None:
    # The shape of a /chat save checkpoint: the model's calls carry no id, the CLI's responses
    # carry the id it made up; before, every response was an orphan and every call unpaired.
    checkpoint = tmp_path / "checkpoint-fix.json"
    checkpoint.write_text(json.dumps(json.loads(GEMINI_REPORT.read_text())["context"], indent=2))
    assert detect(checkpoint).name == "gemini"
    assert tally(checkpoint) == tally(GEMINI_REPORT)
    assert summarize_file(checkpoint).orphan_results == 0


def test_a_newer_checkpoint_pairs_by_id_in_any_order() -> None:
    summary = summarize_file(GEMINI_CHECKPOINT_IDS)
    assert sorted((row[0], row[1], row[2]) for row in summary.call_log) == [
        ("call-list-1", "list_directory", "ok"),
        ("call-read-2", "read_file", "ok"),
    ]
    assert tally(GEMINI_CHECKPOINT_IDS) == (2, 2, count("a = 1\n") + count("a.py\nb.py"))
    assert summary.paired_by_order == []


def test_cline_native_calls_answered_in_text_pair_by_tool_and_order() -> None:
    # Before: every native call unpaired (the text results were matched only to XML calls).
    summary = summarize_file(CLINE_NATIVE_TEXT)
    assert [row[:3] for row in summary.call_log] == [
        ["toolu_nt1", "read_file", "ok"],
        ["toolu_nt2", "$ npm test", "ok"],
        ["toolu_nt3", "replace_in_file", "error"],  # the failure Cline wrote in the text
        ["toolu_nt4", "attempt_completion", "unpaired"],  # the task ended on it
    ]
    page = "export default function Page() {\n  return null\n}\n"
    results = {
        r.call_id: r.text for r in read_records(CLINE_NATIVE_TEXT) if type(r) is ResultRecord
    }
    assert results["toolu_nt1"] == page  # the path's brackets did not end the head
    assert "environment_details" not in results["toolu_nt2"]
    assert tally(CLINE_NATIVE_TEXT) == (4, 3, count(page) + count(results["toolu_nt2"]))
    assert summary.paired_by_order == ["1764000000000"]


def test_cline_tool_results_by_id_still_pair_by_id_and_are_not_answered_twice() -> None:
    summary = summarize_file(CLINE_NATIVE)
    assert [row[2] for row in summary.call_log] == ["ok", "error"]
    assert summary.paired_by_order == [] and summary.orphan_results == 0


def test_an_opencode_export_is_known_by_its_structure_not_its_sessions_fields() -> None:
    # An older OpenCode's export: no projectID or directory in its session info. Before, no
    # format claimed it and it was read as Claude Code's (0 calls).
    assert detect(OPENCODE_OLD_EXPORT).name == "opencode"
    assert [row[:3] for row in summarize_file(OPENCODE_OLD_EXPORT).call_log] == [
        ["toolu_old1", "$ pytest", "ok"],
        ["toolu_old2", "read", "error"],
    ]
    assert tally(OPENCODE_OLD_EXPORT) == (2, 2, count("3 passed"))
    (turn,) = [r for r in read_records(OPENCODE_OLD_EXPORT) if type(r) is UsageRecord]
    assert (turn.input, turn.cache_read, turn.cache_creation, turn.output) == (40, 1200, 300, 25)


@pytest.mark.parametrize(
    "value",
    [
        {"info": {"id": "x1", "title": "t"}, "messages": [{"info": {}, "parts": []}]},
        {"info": {"id": "x1", "role": "user"}, "messages": []},
        {"info": {"id": "x1"}, "messages": []},  # no session id, nothing to know it by
        {"info": "ses_1", "messages": []},
    ],
)
def test_what_only_looks_like_an_export_is_not_claimed(value: object, tmp_path: Path) -> None:
    path = tmp_path / "other.json"
    path.write_text(json.dumps(value, indent=2))
    assert detect(path).name != "opencode"


def test_a_storage_tree_id_never_reaches_outside_the_tree(tmp_path: Path) -> None:
    storage = tmp_path / "storage"
    (storage / "message" / "ses_1").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    # A message and its part where a hostile session id points, outside the storage tree.
    (outside / "msg_1.json").write_text(json.dumps({"id": "msg_1", "role": "assistant"}))
    (storage / "part" / "msg_1").mkdir(parents=True)
    (storage / "part" / "msg_1" / "prt_1.json").write_text(
        json.dumps(
            {"type": "tool", "callID": "c1", "tool": "bash", "state": {"status": "completed"}}
        )
    )
    session = storage / "session" / "prj_1" / "evil.json"
    session.parent.mkdir(parents=True)
    session.write_text(json.dumps({"id": "ses_1/../../../outside", "projectID": "prj_1"}))
    assert detect(session).name == "opencode"
    assert [r for r in read_records(session) if type(r) is CallRecord] == []
    assert session_files(session) == [session]
    # A message id that climbs out of the part folder is not followed either.
    (storage / "message" / "ses_2").mkdir(parents=True)
    (storage / "message" / "ses_2" / "msg_2.json").write_text(
        json.dumps({"id": "../part/msg_1", "role": "assistant"})
    )
    good = storage / "session" / "prj_1" / "ses_2.json"
    good.write_text(json.dumps({"id": "ses_2", "projectID": "prj_1"}))
    assert [r for r in read_records(good) if type(r) is CallRecord] == []


def test_an_older_copilot_cli_session_document_pairs_by_tool_call_id() -> None:
    # Before: no format claimed it (read as Claude Code's, 0 calls).
    assert detect(COPILOT_HISTORY).name == "copilot"
    assert [row[:3] for row in summarize_file(COPILOT_HISTORY).call_log] == [
        ["call_h1", "$ make", "error"],  # the output ends with a non-zero exit code
        ["call_h2", "view", "ok"],
        ["call_h3", "$ ls", "unpaired"],
    ]
    view = "1. all: main.o\n2. \tcc -o app main.o"
    assert tally(COPILOT_HISTORY) == (3, 2, count(view))
    calls = [r for r in read_records(COPILOT_HISTORY) if type(r) is CallRecord]
    assert calls[0].input["command"] == "make"  # the arguments' JSON string, decoded
    sources = [
        r.source for r in read_records(COPILOT_HISTORY, with_text=True) if type(r) is TextRecord
    ]
    assert sources == ["user", "assistant", "call", "call", "call"]  # the system prompt is not


def test_a_copilot_events_file_of_one_line_is_still_read_as_events(tmp_path: Path) -> None:
    # One line is a whole JSON document too; it is an events file, not an older session.
    start = next(line for line in COPILOT.read_text().splitlines() if "execution_start" in line)
    path = tmp_path / "one.jsonl"
    path.write_text(start + "\n")
    assert detect(path) == Detection("copilot", True, True)
    assert [type(r) for r in read_records(path)] == [CallRecord]


def test_copilot_home_moves_the_sessions_folders(tmp_path: Path) -> None:
    home = Home(tmp_path, tmp_path / ".config", tmp_path / ".local", "linux", {})
    assert copilot.folders(home) == [
        tmp_path / ".copilot" / "session-state",
        tmp_path / ".copilot" / "history-session-state",
    ]
    moved = Home(tmp_path, tmp_path, tmp_path, "linux", {"COPILOT_HOME": "/srv/copilot"})
    assert copilot.folders(moved)[0] == Path("/srv/copilot/session-state")


def test_antigravity_cli_usage_background_tasks_and_the_full_transcript(tmp_path: Path) -> None:
    # Before: the planner steps' usage was not read (0 turns) and the background command's
    # result was the "running as a background task" notice, not its output.
    assert [row[:3] for row in summarize_file(ANTIGRAVITY_FULL).call_log] == [
        ["5eed-2#2", "view_file", "ok"],
        ["5eed-2#1", "$ pytest", "ok"],  # answered when its task finished
    ]
    results = {r.call_id: r.text for r in read_records(ANTIGRAVITY_FULL) if type(r) is ResultRecord}
    assert results["5eed-2#1"] == "12 passed, 1 failed in 41.2s"  # the log file is never opened
    output = "12 passed, 1 failed in 41.2s"
    assert tally(ANTIGRAVITY_FULL) == (
        2,
        2,
        count(output) + count("[tool:pytest]\nmarkers = slow\n"),
    )
    turns = [r for r in read_records(ANTIGRAVITY_FULL) if type(r) is UsageRecord]
    assert [(u.input, u.cache_read, u.output, u.model) for u in turns] == [
        (1800, 6000, 90, "Claude Sonnet 4.5 (Thinking)"),
        (300, 7900, 12, "Claude Sonnet 4.5 (Thinking)"),
    ]
    # The cut transcript.jsonl beside it is not read too (its steps would count twice) ...
    found = discover([ANTIGRAVITY_FULL.parents[3]])
    assert ANTIGRAVITY_FULL in found and ANTIGRAVITY_FULL.with_name("transcript.jsonl") not in found
    # ... but alone, it is.
    alone = tmp_path / "brain" / "x" / "transcript.jsonl"
    alone.parent.mkdir(parents=True)
    alone.write_bytes(ANTIGRAVITY_FULL.with_name("transcript.jsonl").read_bytes())
    assert discover([tmp_path]) == [alone]


def test_an_antigravity_background_task_that_never_finished_is_unpaired(tmp_path: Path) -> None:
    lines = ANTIGRAVITY_FULL.read_text().splitlines()
    path = tmp_path / "brain" / "5eed-2" / "transcript.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\n".join(line for line in lines if "SYSTEM_MESSAGE" not in line) + "\n")
    assert [row[2] for row in summarize_file(path).call_log] == ["ok", "unpaired"]


# --- the pairing, fuzzed: any mix of ids, names and order pairs each call at most once -------

NAMES = st.sampled_from(["read_file", "glob", "run_shell_command"])
IDS = st.one_of(st.none(), st.sampled_from(["a", "b", "c", "read_file-1-x"]))


@st.composite
def gemini_contents(draw: st.DrawFn) -> list[dict[str, Any]]:
    contents: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for _ in range(draw(st.integers(0, 5))):
        calls = draw(st.lists(st.tuples(NAMES, IDS), max_size=3))
        contents.append(
            {"role": "model", "parts": [
                {"functionCall": {"name": name, "args": {}, **({"id": i} if i else {})}}
                for name, i in calls
            ]}
        )  # fmt: skip
        answers = draw(st.lists(st.tuples(NAMES, IDS, st.booleans()), max_size=3))
        contents.append(
            {"role": "user", "parts": [
                {"functionResponse": {"name": name, **({"id": i} if i else {}),
                                      "response": {"error": "x"} if failed else {"output": "o"}}}
                for name, i, failed in answers
            ]}
        )  # fmt: skip
    return contents


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(contents=gemini_contents(), wrap=st.sampled_from(["list", "history", "context"]))
def test_gemini_content_pairing_answers_each_call_at_most_once(
    contents: list[dict[str, Any]], wrap: str, tmp_path: Path
) -> None:
    value: object = contents if wrap == "list" else {wrap: contents, "error": {"message": "x"}}
    path = tmp_path / "checkpoint-fuzz.json"
    path.write_text(json.dumps(value, indent=2))
    records = list(read_records(path))
    calls = [r.call_id for r in records if type(r) is CallRecord]
    seen: set[str] = set()
    answered = []  # the results given to a call already made
    for record in records:
        if type(record) is CallRecord:
            seen.add(record.call_id)
        elif type(record) is ResultRecord and record.call_id in seen:
            answered.append(record.call_id)
    asked = sum(1 for c in contents for p in c["parts"] if "functionCall" in p)
    responses = sum(1 for c in contents for p in c["parts"] if "functionResponse" in p)
    assert len(calls) == asked
    assert len(answered) == len(set(answered)) or len(calls) != len(set(calls))
    assert len([r for r in records if type(r) is ResultRecord]) <= responses


@st.composite
def cline_history(draw: st.DrawFn) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "user", "content": [{"type": "text", "text": "t"}]}]
    made = 0
    for _ in range(draw(st.integers(0, 5))):
        names = draw(st.lists(NAMES, max_size=3))
        blocks = []
        for name in names:
            made += 1
            blocks.append({"type": "tool_use", "id": f"toolu_{made}", "name": name, "input": {}})
        messages.append({"role": "assistant", "content": blocks})
        answers = draw(st.lists(st.tuples(NAMES, st.booleans()), max_size=3))
        messages.append(
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": f"toolu_{made}", "content": "r"}
                if by_id and made else
                {"type": "text", "text": f"[{name} for 'p[1]'] Result:\nout"}
                for name, by_id in answers
            ]}
        )  # fmt: skip
    return messages


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(messages=cline_history())
def test_cline_native_pairing_answers_each_call_at_most_once(
    messages: list[dict[str, Any]], tmp_path: Path
) -> None:
    path = tmp_path / "task" / "api_conversation_history.json"
    path.parent.mkdir(exist_ok=True)
    path.write_text(json.dumps(messages))
    records = list(read_records(path))
    calls = {r.call_id for r in records if type(r) is CallRecord}
    by_text = [
        r.call_id for r in records if type(r) is ResultRecord and r.text == "out"
    ]  # answered in text: by name and order, never one already answered in text
    assert len(by_text) == len(set(by_text)) and set(by_text) <= calls


def test_many_calls_no_result_answers_cost_one_pass_not_one_per_result(tmp_path: Path) -> None:
    # 20,000 calls of one tool and 20,000 responses of another, with ids no call carries:
    # each response looked through every waiting call (30 CPU s); now each step is O(1).
    n = 20_000
    calls = [{"functionCall": {"name": "a", "args": {}}} for _ in range(n)]
    answers = [
        {"functionResponse": {"name": "b", "id": f"b-{i}", "response": {"output": "o"}}}
        for i in range(n)
    ]
    path = tmp_path / "checkpoint-many.json"
    path.write_text(
        json.dumps([{"role": "model", "parts": calls}, {"role": "user", "parts": answers}])
    )
    start = time.process_time()
    records = list(read_records(path))
    assert time.process_time() - start < 5.0
    assert sum(1 for r in records if type(r) is CallRecord) == n
    assert sum(1 for r in records if type(r) is ResultRecord) == n  # each kept, as its own id


def test_a_finished_task_of_hostile_whitespace_is_read_in_one_pass(tmp_path: Path) -> None:
    lines = [json.loads(line) for line in ANTIGRAVITY_FULL.read_text().splitlines()]
    end = next(step for step in lines if step["type"] == "SYSTEM_MESSAGE")
    output = "x" + " " * 2_000_000 + "x"  # a run of whitespace inside the output
    end["content"] = 'Task id "5eed-2/task-7" finished with result:\n' + output
    path = tmp_path / "brain" / "5eed-2" / "transcript.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("".join(json.dumps(step) + "\n" for step in lines))
    start = time.process_time()
    results = {r.call_id: r.text for r in read_records(path) if type(r) is ResultRecord}
    assert time.process_time() - start < 2.0
    assert results["5eed-2#1"] == output
