"""The other agents' formats: each detected by content, each read into the common records,
paired by id (or by order, said so), usage carried; Claude Code and Codex unchanged."""

from __future__ import annotations

import contextlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

import pytest_toll
from pytest_toll import cli
from pytest_toll.core.tokens import count
from pytest_toll.transcripts.formats import (
    FORMATS,
    HEAD_BYTES,
    Detection,
    detect,
    format_of,
    read_records,
    session_name,
)
from pytest_toll.transcripts.outcomes import OUTCOMES
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    ResultRecord,
    TextRecord,
    UsageRecord,
)
from pytest_toll.transcripts.summary import summarize_file
from tests.transcripts.agents_data import (
    AGENTS,
    ANTIGRAVITY,
    CLINE_NATIVE,
    CLINE_UI_ONLY,
    CLINE_XML,
    COPILOT,
    CURSOR,
    GEMINI_CHECKPOINT,
    GEMINI_JSON,
    GEMINI_JSONL,
    GEMINI_REWRITTEN,
    OPENCODE_EXPORT,
    OPENCODE_TREE,
    OPENHANDS_EVENTS,
    OPENHANDS_OUTPUT,
    OPENHANDS_REAL,
    QWEN,
    opencode_database,
)
from tests.transcripts.transcripts_data import FIXTURES


def outcomes(path: Path) -> list[tuple[str, str, str]]:
    """(call id, shape, outcome) of each call of a file, as its summary logs them."""
    return [
        (call_id, shape, outcome) for call_id, shape, outcome, _ in summarize_file(path).call_log
    ]


def of_type(path: Path, kind: type[Any], **options: Any) -> list[Any]:
    return [record for record in read_records(path, **options) if type(record) is kind]


def test_claude_and_codex_are_rows_of_the_table_like_every_agent() -> None:
    for path in sorted(FIXTURES.rglob("*.jsonl")):
        format = format_of(path)
        assert format.name == ("codex" if "codex" in path.parts else "claude"), path
        # Only the Codex row claims a Codex file; Claude Code's reads what no row claims.
        assert detect(path).claimed == (format.name == "codex")
        for with_text in (False, True):
            assert list(read_records(path, with_text=with_text)) == list(
                format.read(path, with_text=with_text, max_line_bytes=1 << 20, document=False)
            ), path
    assert [format.name for format in FORMATS if format.sniff is None] == ["claude"]


def test_the_root_option_names_every_agent_of_the_table(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        cli.main(["scan", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert ", ".join(format.title for format in FORMATS) in help_text


@pytest.mark.parametrize(
    ("path", "agent"),
    [
        (GEMINI_JSONL, "gemini"), (GEMINI_JSON, "gemini"), (GEMINI_CHECKPOINT, "gemini"),
        (ANTIGRAVITY, "antigravity"), (OPENCODE_TREE, "opencode"), (OPENCODE_EXPORT, "opencode"),
        (COPILOT, "copilot"), (QWEN, "qwen"), (CLINE_NATIVE, "cline"), (CLINE_UI_ONLY, "cline"),
        (OPENHANDS_EVENTS, "openhands"), (OPENHANDS_OUTPUT, "openhands"),
        (OPENHANDS_REAL, "openhands"), (CURSOR, "cursor"),
    ],
)  # fmt: skip
def test_each_format_is_known_by_its_content_not_its_name(
    path: Path, agent: str, tmp_path: Path
) -> None:
    assert detect(path).name == agent and detect(path).claimed
    renamed = tmp_path / "anything.jsonl"
    shutil.copyfile(path, renamed)
    assert detect(renamed).name == agent


def test_an_agents_document_cut_short_is_its_transcript_with_one_bad_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A whole-document file an agent names as its own (a Gemini CLI checkpoint written
    indented, a Cline task's history written on one line) that a crash cut short claims
    nothing by its content: by its name it is still counted, as one unreadable line with the
    reason, beside the sessions that read; a broken document under any other name is no
    transcript. A Cline task whose history is cut short is read from its messages."""
    gemini = tmp_path / "gemini"
    gemini.mkdir()
    call = {"role": "model", "parts": [{"functionCall": {"name": "ls", "args": {}}}]}
    answer = {"role": "user", "parts": [{"functionResponse": {"name": "ls", "response": {}}}]}
    (gemini / "checkpoint-ok.json").write_text(json.dumps([call, answer], indent=2))
    (gemini / "checkpoint-cut.json").write_text(json.dumps([call, answer], indent=2)[:-40])
    (gemini / "settings.json").write_text('{"theme": ')
    task = tmp_path / "cline" / "tasks" / "1700000000000"
    task.mkdir(parents=True)
    history = [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "x"}]}]
    (task / "api_conversation_history.json").write_text(json.dumps(history)[:-3])
    # The task's messages are read instead of its broken history: the task is not lost.
    shutil.copyfile(CLINE_UI_ONLY, task / "ui_messages.json")
    for broken in (gemini / "checkpoint-cut.json", task / "api_conversation_history.json"):
        detection = detect(broken)
        assert detection.claimed and detection.document
        assert detection.unreadable.startswith("not a JSON document (not valid JSON: ")
        assert list(read_records(broken)) == [BadLine(1, detection.unreadable)]
    assert detect(gemini / "checkpoint-cut.json").name == "gemini"
    assert detect(task / "api_conversation_history.json").name == "cline"
    assert not detect(gemini / "settings.json").claimed

    assert cli.main(["scan", "--no-cache", "--json", "--root", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    ui_only = summarize_file(CLINE_UI_ONLY).calls
    assert ui_only > 0
    assert (report["sessions"], report["unreadable_lines"]) == (2, 2)
    assert report["calls"] == 1 + ui_only
    for name in ("checkpoint-cut.json", "api_conversation_history.json"):
        assert f"{name}: 1 unreadable line(s): line 1: not a JSON document" in captured.err
    assert "settings.json" not in captured.err


def test_an_sqlite_file_that_is_no_session_store_is_one_bad_line_never_json_lines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A database OpenCode's name is on that cannot be opened (its pages torn) is its store,
    counted as one unreadable line; another SQLite file is no transcript in a folder, and
    named on its own is one bad line saying what it is, not its pages read as JSON lines."""
    import sqlite3

    torn = tmp_path / "opencode.db"
    torn.write_bytes(b"SQLite format 3\x00" + b"\xff" * 8192)
    other = tmp_path / "other.db"
    with contextlib.closing(sqlite3.connect(other)) as connection:
        connection.execute("create table notes (text)")
        connection.commit()
    assert detect(torn).claimed and detect(torn).name == "opencode"
    assert not detect(other).claimed
    for path in (torn, other):
        (bad,) = read_records(path)
        assert isinstance(bad, BadLine) and bad.line == 1
        assert bad.reason.startswith("an SQLite database without OpenCode's session, message")

    assert cli.main(["scan", "--no-cache", "--root", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "1 transcript file(s) read" in said and f"{torn} (line 1: an SQLite database" in said
    assert cli.main(["scan", "--no-cache", "--root", str(other)]) == 2
    assert f"{other} (line 1: an SQLite database" in capsys.readouterr().err


def test_gemini_jsonl_last_append_wins_patches_skipped_bad_line_counted() -> None:
    assert outcomes(GEMINI_JSONL) == [
        ("read_file-1", "read_file", "ok"),
        ("shell-2", "$ pytest", "error"),
        ("shell-3", "$ cat", "truncated"),
        ("glob-4", "glob", "unpaired"),
    ]
    (result,) = [r for r in of_type(GEMINI_JSONL, ResultRecord) if r.call_id == "read_file-1"]
    assert result.text == "def answer():\n    return 42\n"
    turns = of_type(GEMINI_JSONL, UsageRecord)
    # m1's first append had partial tokens; the line written last counts. input includes cached.
    assert [(u.message_id, u.input, u.cache_read, u.output, u.model) for u in turns] == [
        ("g1/m1", 400, 600, 50, "gemini-2.5-pro"),
        ("g1/m2", 300, 1000, 20, "gemini-2.5-pro"),
    ]
    assert [(b.line, b.reason) for b in of_type(GEMINI_JSONL, BadLine)] == [
        (9, "not a JSON object")
    ]
    sources = [r.source for r in of_type(GEMINI_JSONL, TextRecord, with_text=True)]
    assert sources == ["user", "thinking", "assistant", "call", "call", "call", "call"]


def test_gemini_messages_rewrite_replaces_what_came_before() -> None:
    assert outcomes(GEMINI_REWRITTEN) == [("kept-1", "read_file", "ok")]


def test_gemini_json_document_and_checkpoint_paired_by_order() -> None:
    assert outcomes(GEMINI_JSON) == [("ls-1", "list_directory", "ok")]
    assert [u.prompt for u in of_type(GEMINI_JSON, UsageRecord)] == [500]
    assert outcomes(GEMINI_CHECKPOINT) == [("checkpoint-review#1", "read_file", "ok")]
    assert summarize_file(GEMINI_CHECKPOINT).paired_by_order == ["checkpoint-review"]
    assert summarize_file(GEMINI_JSON).paired_by_order == []


def test_antigravity_steps_follow_calls_by_order() -> None:
    assert outcomes(ANTIGRAVITY) == [
        ("c0ffee-1#1", "list_dir", "ok"),
        ("c0ffee-1#2", "$ git log", "error"),
        ("c0ffee-1#3", "view_file", "truncated"),  # truncated_fields named
        ("c0ffee-1#4", "grep_search", "unpaired"),
    ]
    calls = of_type(ANTIGRAVITY, CallRecord)
    # Argument values are JSON-encoded strings: decoded, so a command reads as a command.
    assert calls[1].input["CommandLine"] == "git log --oneline"
    assert calls[1].input["WaitMsBeforeAsync"] == 5000
    assert summarize_file(ANTIGRAVITY).paired_by_order == ["c0ffee-1"]
    turns = of_type(ANTIGRAVITY, UsageRecord)
    assert [(u.input, u.cache_read, u.output) for u in turns] == [(500, 1500, 30), (2600, 0, 20)]
    assert {u.model for u in turns} == {"Gemini 3 Pro (High)"}  # as the user picked it
    assert len(of_type(ANTIGRAVITY, BoundaryRecord)) == 1
    assert session_name(ANTIGRAVITY) == "c0ffee-1"


def test_opencode_storage_tree_export_and_database(tmp_path: Path) -> None:
    assert outcomes(OPENCODE_TREE) == [
        ("toolu_oc1", "$ pytest", "ok"),
        ("toolu_oc2", "read", "error"),
        ("toolu_oc3", "read", "ok"),
        ("toolu_oc4", "$ sleep", "unpaired"),  # still running when the session was read
    ]
    (turn,) = of_type(OPENCODE_TREE, UsageRecord)  # from the step, not the message again
    assert (turn.input, turn.cache_read, turn.cache_creation, turn.output) == (12, 3000, 500, 60)
    assert outcomes(OPENCODE_EXPORT) == [("call_x1", "read", "ok")]
    assert [u.output for u in of_type(OPENCODE_EXPORT, UsageRecord)] == [20]  # reasoning too
    database = opencode_database(tmp_path / "opencode.db")
    assert detect(database).name == "opencode"
    assert outcomes(database) == [("toolu_db1", "grep", "ok"), ("toolu_db2", "$ make", "error")]
    (turn,) = of_type(database, UsageRecord)
    assert (turn.session, turn.prompt, turn.model) == ("ses_db", 1005, "claude-sonnet-4-5")
    assert [
        r.text for r in of_type(database, TextRecord, with_text=True) if r.source == "user"
    ] == ["grep for TODO"]


def test_copilot_pairs_start_and_complete_by_tool_call_id() -> None:
    assert outcomes(COPILOT) == [
        ("call_c1", "$ pytest", "error"),
        ("call_c2", "view", "ok"),
        ("call_c3", "$ make", "unpaired"),
    ]
    (result,) = [r for r in of_type(COPILOT, ResultRecord) if r.call_id == "call_c1"]
    assert result.text == "1 failed"  # what the model read, not the screen's detailed copy
    (turn,) = of_type(COPILOT, UsageRecord)
    assert (turn.session, turn.input, turn.cache_read, turn.output) == ("cp-1", 3000, 21000, 400)
    assert session_name(COPILOT) == "cp-1"


def test_qwen_pairs_function_call_id_with_tool_result_call_id() -> None:
    assert outcomes(QWEN) == [
        ("call_q1", "$ go build", "error"),
        ("call_q2", "read_file", "ok"),
        ("call_q3", "glob", "unpaired"),
    ]
    (turn,) = of_type(QWEN, UsageRecord)
    assert (turn.input, turn.cache_read, turn.output, turn.message_id) == (400, 800, 35, "q2")


def test_cline_native_ids_xml_by_order_and_ui_messages_by_order() -> None:
    assert outcomes(CLINE_NATIVE) == [
        ("toolu_cl1", "read_file", "ok"),
        ("toolu_cl2", "$ pytest", "error"),
    ]
    assert summarize_file(CLINE_NATIVE).paired_by_order == []
    turns = of_type(CLINE_NATIVE, UsageRecord)  # read from ui_messages.json beside it
    assert [(u.input, u.cache_read, u.cache_creation, u.output) for u in turns] == [
        (10, 0, 4000, 80),
        (6, 4000, 300, 40),
    ]
    assert outcomes(CLINE_XML) == [
        ("1700000000000#1", "list_files", "ok"),
        ("1700000000000#2", "$ make", "error"),
    ]
    results = of_type(CLINE_XML, ResultRecord)
    assert results[0].text == "a.py\nb.py"  # the environment details are not the result
    assert summarize_file(CLINE_XML).paired_by_order == ["1700000000000"]
    assert outcomes(CLINE_UI_ONLY) == [
        ("1763950000000#1", "readFile", "ok"),
        ("1763950000000#2", "$ make", "ok"),
    ]
    assert [r.text for r in of_type(CLINE_UI_ONLY, ResultRecord)] == [
        "b = 1\n",
        "cc -o app main.c\n",
    ]
    assert summarize_file(CLINE_UI_ONLY).paired_by_order == ["1763950000000"]


def test_openhands_cause_is_the_action_id_and_legacy_pairs_go_by_order() -> None:
    assert outcomes(OPENHANDS_EVENTS) == [
        ("oh-1/1", "$ ls", "ok"),
        ("oh-1/3", "$ cat", "error"),  # a non-zero exit code
        ("oh-1/5", "read", "unpaired"),
    ]
    assert session_name(OPENHANDS_EVENTS) == "oh-1"
    assert summarize_file(OPENHANDS_EVENTS).paired_by_order == []
    assert outcomes(OPENHANDS_OUTPUT) == [
        ("repo__issue-1#1", "$ ls", "ok"),
        ("repo__issue-1#2", "read", "error"),
    ]
    assert summarize_file(OPENHANDS_OUTPUT).paired_by_order == ["repo__issue-1"]


def test_openhands_real_trajectory() -> None:
    """OpenHands' own replay trajectory (tests/fixtures/agents/SOURCES.md)."""
    assert outcomes(OPENHANDS_REAL) == [("basic/3", "str_replace_editor", "ok")]
    (call,) = of_type(OPENHANDS_REAL, CallRecord)
    assert call.input["command"] == "create"  # the function's arguments, as the model sent them
    turns = of_type(OPENHANDS_REAL, UsageRecord)
    # litellm's prompt_tokens hold the cache reads and writes: the fresh part is what is left.
    assert [(u.input, u.cache_read, u.cache_creation, u.output) for u in turns] == [
        (4, 0, 3482, 1135),
        (6, 3482, 1158, 177),
    ]
    (result,) = of_type(OPENHANDS_REAL, ResultRecord)
    assert result.text.startswith("--- /workspace/game_2048.py")


def test_cursor_calls_without_results_are_not_recorded_never_unpaired() -> None:
    assert outcomes(CURSOR) == [
        ("cu-1#1", "Read", "result not recorded"),
        ("cu-1#2", "$ pytest", "result not recorded"),
    ]


def test_scan_names_agents_and_sessions_paired_by_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    database = opencode_database(tmp_path / "opencode.db")
    assert cli.main(["scan", "--root", str(AGENTS), "--root", str(database), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["agents"] == {
        "gemini": 6, "copilot": 2, "qwen": 1, "antigravity": 2, "opencode": 4,
        "openhands": 3, "cline": 4, "cursor": 1,
    }  # fmt: skip
    assert data["paired_by_order"] == [
        "1700000000000", "1763950000000", "1764000000000", "5eed-2", "c0ffee-1",
        "checkpoint-review",
        "gemini-client-error-Turn.run-sendMessageStream-2026-11-22T10-00-00-000Z", "repo__issue-1",
    ]  # fmt: skip
    rows = {row["shape"]: row for row in data["shapes"]}
    assert rows["Read"]["by_outcome"] == {"result not recorded": 1}
    assert rows["view_file"]["by_outcome"] == {"truncated": 1, "ok": 1}
    assert data["sessions"] == 23 and data["calls"] == 55
    assert cli.main(["scan", "--root", str(AGENTS)]) == 0
    text = capsys.readouterr().out
    assert "agents: gemini 6 sessions, copilot 2 sessions, qwen 1 session" in text
    assert "paired by order (their results name no call): 8 session(s): 1700000000000" in text
    assert "result not recorded=1" in text


def test_drift_and_context_read_the_other_formats(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["drift", "--root", str(AGENTS), "--json"]) == 0
    models = {row["model"] for row in json.loads(capsys.readouterr().out)["models"]}
    assert {"gemini-2.5-pro", "claude-3-5-sonnet-20241022"} <= models
    assert cli.main(["context", "cp-1", "--root", str(AGENTS), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["slices"]["tool_results"] == count("1 failed") + count(
        "def answer():\n    return 42\n"
    )


def test_the_report_schema_names_every_outcome() -> None:
    schema = json.loads(
        (Path(pytest_toll.__file__).parent / "data" / "report.schema.json").read_text()
    )
    found: list[list[str]] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "by_outcome" in node and isinstance(node["by_outcome"], dict):
                found.append(node["by_outcome"]["propertyNames"]["enum"])
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    assert found == [list(OUTCOMES)]


def test_a_first_line_longer_than_the_head_is_read_alone(tmp_path: Path) -> None:
    big = "x" * (HEAD_BYTES + 10)
    lines = COPILOT.read_text().splitlines()
    first = json.loads(lines[1])
    first["data"]["content"] = big
    jsonl = tmp_path / "long-first-line.jsonl"
    jsonl.write_text("\n".join([json.dumps(first), *lines[2:]]) + "\n")
    assert detect(jsonl) == Detection("copilot", False, True)
    document = tmp_path / "compact.json"
    value = json.loads(GEMINI_JSON.read_text())
    value["messages"][0]["content"] = big
    document.write_text(json.dumps(value))  # one line, no newline: a whole document
    assert detect(document) == Detection("gemini", True, True)
    assert outcomes(document) == [("ls-1", "list_directory", "ok")]


def test_qwen_codes_older_sessions_are_gemini_format_but_qwens(tmp_path: Path) -> None:
    older = tmp_path / ".qwen" / "tmp" / "77aa01" / "chats" / GEMINI_JSON.name
    older.parent.mkdir(parents=True)
    shutil.copyfile(GEMINI_JSON, older)
    assert detect(older).name == "gemini"  # the format, from the content
    summary = summarize_file(older)
    assert summary.format == "qwen" and outcomes(older) == [("ls-1", "list_directory", "ok")]
