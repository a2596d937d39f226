"""Many files: selection, the summary cache, the process pool; the scan and repeats CLI."""

from __future__ import annotations

import contextlib
import json
import os
import pty
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll import cli
from pytest_toll.cli._transcripts import json_text
from pytest_toll.core.tokens import TOKENIZER_NAME, count
from pytest_toll.transcripts import scan as tolls
from pytest_toll.transcripts.cache import (
    DATABASE_NAME,
    REPORTS_KEPT,
    SCHEMA_VERSION,
    SummaryCache,
    report_key,
)
from pytest_toll.transcripts.report import ScanReport, build_report
from pytest_toll.transcripts.scan import select_files, summarize_files
from pytest_toll.transcripts.summary import SUMMARY_VERSION, FileSummary
from tests.transcripts.transcripts_data import A_PY, FIXTURES, MAIN

CODEX = FIXTURES / "codex" / "2026" / "11" / "01" / "rollout-2026-11-01-codex-1.jsonl"


def test_cache_makes_a_rescan_read_nothing(tmp_path: Path) -> None:
    root = tmp_path / "history"
    root.mkdir()
    (root / "a.jsonl").write_bytes(MAIN.read_bytes())
    cache = tmp_path / "c"
    first, cold = summarize_files(select_files([root]), cache=cache, workers=1)
    second, warm = summarize_files(select_files([root]), cache=cache, workers=1)
    assert (cold.cached, warm.cached, warm.read_bytes) == (0, 1, 0)
    assert build_report(first).as_dict() == build_report(second).as_dict()
    # a changed file (size and mtime) is read again
    with (root / "a.jsonl").open("a") as out:
        out.write("{broken\n")
    _, changed = summarize_files(select_files([root]), cache=cache, workers=1)
    assert changed.cached == 0


def test_process_pool_gives_the_same_report(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tolls, "POOL_MIN_BYTES", 0)
    serial, _ = summarize_files(select_files([FIXTURES]), workers=1)
    pooled, stats = summarize_files(select_files([FIXTURES]), workers=2)
    assert stats.workers == 2
    assert build_report(pooled).as_dict() == build_report(serial).as_dict()


def test_since_days_and_limit(tmp_path: Path) -> None:
    old, new = tmp_path / "old.jsonl", tmp_path / "new.jsonl"
    old.write_bytes(MAIN.read_bytes())
    new.write_bytes(MAIN.read_bytes())
    os.utime(old, (1_000_000_000, 1_000_000_000))
    assert [p.name for p, _ in select_files([tmp_path], since_days=30)] == ["new.jsonl"]
    assert [p.name for p, _ in select_files([tmp_path], limit=1)] == ["new.jsonl"]
    assert [p.name for p, _ in select_files([tmp_path])] == ["new.jsonl", "old.jsonl"]


def test_scan_json(capsys: pytest.CaptureFixture[str]) -> None:
    code = cli.main(["scan", "--root", str(FIXTURES / "claude"), "--json", "--top", "2"])
    out = capsys.readouterr().out
    data = json.loads(out)
    assert code == 0
    assert [row["shape"] for row in data["shapes"]] == ["Read", "$ git log"]
    assert data["sessions"] == 3 and data["calls"] == 17


def test_scan_text_and_problems(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scan", "--root", str(FIXTURES)]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[0] == (
        "22 tool calls in 5 sessions (5 files, 4 unreadable lines); tokens: o200k (only ok results ranked)"
    )
    assert "mcp__flaky__get" in captured.out and "SUSPICIOUS: mostly not ok" in captured.out
    assert "resend amplification: ×" in captured.out
    assert "sess-bad.jsonl: 4 unreadable line(s): line 2: not JSON" in captured.err
    assert "\r" not in captured.err  # progress is for a terminal only


def test_scan_reads_roots_from_the_environment(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(
        "TOLL_TRANSCRIPTS", f"{FIXTURES / 'codex'}{os.pathsep}{FIXTURES / 'corrupt'}"
    )
    assert cli.main(["scan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["sessions"] == 2


def test_no_transcripts_cannot_judge(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scan", "--root", str(tmp_path)]) == 2
    assert "no transcripts found" in capsys.readouterr().err
    (tmp_path / "quiet.jsonl").write_text(
        '{"type":"user","message":{"role":"user","content":"hi"}}\n'
    )
    assert cli.main(["scan", "--root", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "contain no tool calls" in said and "could not be read" not in said


def test_no_calls_names_the_lines_that_could_not_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file that is not JSON at all is one bad line and no call: the error says which files
    and why, since the report that lists unreadable lines on stderr is never printed."""
    saved = tmp_path / "saved.json"
    saved.write_text('[{"role": "model", "parts": [{"functionCall": {"args": {"n": NaN}}}]}]')
    assert cli.main(["scan", "--no-cache", "--root", str(saved)]) == 2
    assert capsys.readouterr().err.strip() == (
        "toll: error: 1 transcript file(s) read, but they contain no tool calls; 1 line(s) "
        f"could not be read: {saved} (line 1: not JSON)"
    )
    for number in range(5):
        (tmp_path / f"{number}.jsonl").write_text("not json\n{also not\n")
    saved.unlink()
    assert cli.main(["scan", "--no-cache", "--root", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert "5 transcript file(s) read" in said and "10 line(s) could not be read: " in said
    assert said.count("(line 1: not JSON)") == 3 and said.rstrip().endswith("and 2 more file(s)")


def test_a_file_name_with_a_line_break_stays_on_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A transcript file's name is the author's text: a line break, ESC or bidi override in it
    is escaped wherever a scan names the file (the no-calls error and the unreadable lines on
    stderr), so it can neither start a line of its own nor recolour the terminal."""
    hostile = "bad\nname\x1b[31m\u202e.jsonl"
    (tmp_path / hostile).write_text("not json\n")
    assert cli.main(["scan", "--no-cache", "--root", str(tmp_path)]) == 2
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and "\x1b" not in said and "\u202e" not in said
    assert "bad\\nname\\u001b[31m\\u202e.jsonl (line 1: not JSON)" in said
    (tmp_path / "calls.jsonl").write_text(MAIN.read_text())
    assert cli.main(["scan", "--no-cache", "--root", str(tmp_path)]) == 0
    said = capsys.readouterr().err
    unreadable = [line for line in said.splitlines() if "unreadable line(s)" in line]
    assert unreadable == [
        f"toll: {tmp_path}/bad\\nname\\u001b[31m\\u202e.jsonl: 1 unreadable line(s): "
        "line 1: not JSON"
    ]


def test_a_document_that_cannot_be_read_is_one_bad_line_saying_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A saved conversation written as one JSON document that cannot be read (past the
    input-file cap here, lowered to keep the file small) is one bad line with the reason, once
    however many segments its size makes: not each of its lines read as JSON lines."""
    from pytest_toll.transcripts import formats
    from pytest_toll.transcripts.formats import base

    monkeypatch.setattr(base, "MAX_INPUT_FILE_BYTES", 64 * 1024)
    monkeypatch.setattr(tolls, "SEGMENT_BYTES", 16 * 1024)
    call = {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {"p": 1}}}]}
    saved = tmp_path / "checkpoint.json"
    saved.write_text(json.dumps([call] * 1000, indent=2))
    assert saved.stat().st_size > 64 * 1024
    assert cli.main(["scan", "--no-cache", "--workers", "1", "--root", str(saved)]) == 2
    assert capsys.readouterr().err.strip() == (
        "toll: error: 1 transcript file(s) read, but they contain no tool calls; 1 line(s) "
        f"could not be read: {saved} (line 1: larger than the 64 KiB read limit (a transcript "
        "document); not read (nothing measured))"
    )
    # Under the cap, the same document is read: the call is there.
    monkeypatch.setattr(base, "MAX_INPUT_FILE_BYTES", 1024 * 1024)
    formats._detect.cache_clear()  # (a file's format is cached by its size and mtime)
    assert cli.main(["scan", "--no-cache", "--json", "--root", str(saved)]) == 0
    assert json.loads(capsys.readouterr().out)["calls"] == 1000


def test_repeats_cli(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["repeats", "--root", str(FIXTURES), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["repeats"] == [
        {
            "session": "sess-main",
            "shape": "Read",
            "target": "/repo/a.py",
            "times": 2,
            "tokens_each": count(A_PY),
            "wasted": count(A_PY),
        }
    ]
    assert data["repeats_total"] == 1
    assert cli.main(["repeats", "--root", str(FIXTURES / "codex")]) == 0
    assert capsys.readouterr().out.startswith("no repeats")


def test_repeats_cli_says_how_many_it_left_out(
    history: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["repeats", "--root", str(history), "--json"]) == 0
    every = json.loads(capsys.readouterr().out)
    total = every["repeats_total"]
    assert total > 20 and len(every["repeats"]) == 20  # the default --top
    assert cli.main(["repeats", "--root", str(history), "--top", "3"]) == 0
    text = capsys.readouterr().out
    assert f"(the 3 costliest of {total:,} repeats)" in text
    assert len(text.splitlines()) == 1 + 3 + 1 + 2  # heading, rows, the note, blank, total


def _scan_on_a_terminal(
    tmp_path: Path, *arguments: str, after: str | None, stderr_terminal: bool = True
) -> tuple[subprocess.CompletedProcess[bytes], bytes]:
    """Run ``toll scan`` with stderr on a pseudo-terminal (or a pipe); what stderr showed."""
    main, secondary = pty.openpty()
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    environment.pop(tolls.PROGRESS_ENVIRONMENT, None)
    if after is not None:
        environment[tolls.PROGRESS_ENVIRONMENT] = after
    command = [sys.executable, "-m", "pytest_toll", "scan", "--root", str(FIXTURES), *arguments]
    finished = subprocess.run(
        command,
        stdout=subprocess.PIPE,
        stderr=secondary if stderr_terminal else subprocess.PIPE,
        env=environment,
        check=False,
        timeout=60,
    )
    os.close(secondary)
    shown = b""
    try:
        while stderr_terminal and (chunk := os.read(main, 4096)):
            shown += chunk
    except OSError:  # the terminal closes once the child is gone
        pass
    os.close(main)
    assert finished.returncode == 0, finished
    return finished, shown if stderr_terminal else finished.stderr


def test_progress_shows_on_a_terminal_once_a_scan_takes_a_while(tmp_path: Path) -> None:
    # A scan that has run for 0 s already "takes a while": the fixtures' scan shows its line.
    finished, shown = _scan_on_a_terminal(tmp_path, "--no-cache", after="0")
    assert finished.stdout.startswith(b"22 tool calls")
    assert b"\rtoll: read 5/5 files, 0/0 MB" in shown and shown.count(b"\rtoll: read") >= 1
    # A scan quicker than the delay shows none; neither does --json, nor stderr on a pipe.
    assert b"\rtoll: read" not in _scan_on_a_terminal(tmp_path, "--no-cache", after="3600")[1]
    _, shown = _scan_on_a_terminal(tmp_path, "--no-cache", "--json", after="0")
    assert b"\rtoll: read" not in shown
    _, shown = _scan_on_a_terminal(tmp_path, "--no-cache", after="0", stderr_terminal=False)
    assert b"\rtoll: read" not in shown and b"unreadable line(s)" in shown


def test_progress_line_says_files_megabytes_and_time_left(tmp_path: Path) -> None:
    stream = tmp_path / "progress.txt"
    with stream.open("w") as out:
        meter = tolls.Progress(files=4, total_bytes=40_000_000, after=0.0, stream=out)
        meter.update(1, 10_000_000)
        meter.close()
    shown = stream.read_bytes().decode()
    assert shown.startswith("\rtoll: read 1/4 files, 10/40 MB, about ") and " s left" in shown
    assert shown.endswith("\n")


def test_scan_json_lists_every_shape_unless_told(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scan", "--root", str(FIXTURES), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["shapes"]) == 11


def _scan_with(root: Path, cache: Path) -> ScanReport:
    return tolls.scan([root], tolls.ReadOptions(workers=1, cache=cache))


def test_a_rescan_of_the_same_files_is_served_its_report_and_any_change_makes_a_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "history"
    root.mkdir()
    (root / "a.jsonl").write_bytes(MAIN.read_bytes())
    (root / "b.jsonl").write_bytes(CODEX.read_bytes())
    cache = tmp_path / "c"
    cold = _scan_with(root, cache)

    def no_reading(*args: object, **kwargs: object) -> None:
        raise AssertionError("a scan of unchanged files read them")

    with monkeypatch.context() as patched:
        patched.setattr(tolls, "iter_summaries", no_reading)
        warm = _scan_with(root, cache)
    assert warm == cold  # every field, not only the JSON contract's
    # another file, a changed file, a removed file: each is read, never the stale report
    (root / "c.jsonl").write_bytes(MAIN.read_bytes().replace(b"toolu_", b"toolu_c"))
    added = _scan_with(root, cache)
    assert added.files == 3 and added.calls > cold.calls
    with (root / "a.jsonl").open("a") as out:
        out.write("{broken\n")
    changed = _scan_with(root, cache)
    assert changed.unreadable_lines == added.unreadable_lines + 1
    (root / "c.jsonl").unlink()
    removed = _scan_with(root, cache)
    assert (removed.files, removed.calls) == (2, cold.calls)


def test_the_cache_keeps_only_the_latest_reports(tmp_path: Path) -> None:
    root = tmp_path / "history"
    root.mkdir()
    cache = tmp_path / "c"
    for number in range(REPORTS_KEPT + 3):
        (root / f"{number}.jsonl").write_bytes(MAIN.read_bytes())
        _scan_with(root, cache)
    store = SummaryCache(cache)
    assert store._db is not None
    (kept,) = store._db.execute("SELECT COUNT(*) FROM reports").fetchone()
    store.close()
    assert kept == REPORTS_KEPT
    # the newest is among them
    files = [(str(path), *tolls._stat_key(status)) for path, status in select_files([root])]
    assert SummaryCache(cache).report(report_key("tolls", files)) is not None


def test_a_cache_of_another_layout_is_rebuilt_never_misread(tmp_path: Path) -> None:
    root = tmp_path / "history"
    root.mkdir()
    path = root / "a.jsonl"
    path.write_bytes(MAIN.read_bytes())
    status = path.stat()
    cache = tmp_path / "c"
    cache.mkdir(mode=0o700)
    database = cache / DATABASE_NAME
    # The first layout (no user_version, a summary's scope in a column named "kind"), holding
    # a summary of this very file that says it made no call at all.
    with contextlib.closing(sqlite3.connect(database)) as db, db:
        db.execute(
            "CREATE TABLE summaries (path TEXT, kind TEXT, size INTEGER, mtime INTEGER,"
            " tokenizer TEXT, version INTEGER, data BLOB, PRIMARY KEY (path, kind))"
        )
        db.execute(
            "CREATE TABLE segments (path TEXT, kind TEXT, segment TEXT, tokenizer TEXT,"
            " version INTEGER, data BLOB, PRIMARY KEY (path, kind, segment))"
        )
        db.execute("CREATE TABLE reports (key TEXT PRIMARY KEY, used INTEGER, data BLOB)")
        planted = FileSummary(str(path), "claude").to_json()
        db.execute(
            "INSERT INTO summaries VALUES (?,?,?,?,?,?,?)",
            (str(path), "tolls", status.st_size, status.st_mtime_ns, TOKENIZER_NAME,
             SUMMARY_VERSION, json.dumps(planted)),
        )  # fmt: skip
    database.chmod(0o600)
    fresh, _ = summarize_files(select_files([root]), workers=1)
    assert fresh[0].calls > 0
    first, cold = summarize_files(select_files([root]), cache=cache, workers=1)
    assert (cold.cached, first) == (0, fresh)
    # Rebuilt in this layout, the cache serves what it was given since.
    second, warm = summarize_files(select_files([root]), cache=cache, workers=1)
    assert (warm.cached, second) == (1, fresh)
    with contextlib.closing(sqlite3.connect(database)) as db:
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        columns = {row[1] for row in db.execute("PRAGMA table_info(summaries)")}
    assert "scope" in columns and "kind" not in columns


def test_scan_report_round_trips_through_its_json() -> None:
    report = build_report(summarize_files(select_files([FIXTURES]), workers=1)[0])
    assert report.repeats and report.problems  # the fields a bare as_dict() would lose
    assert ScanReport.from_json(json.loads(json.dumps(report.to_json()))) == report


def _json_values(leaves: st.SearchStrategy[object]) -> st.SearchStrategy[object]:
    return st.recursive(
        leaves,
        lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
        max_leaves=20,
    )


_PLAIN = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text()


@settings(max_examples=300, deadline=None)
@given(_json_values(_PLAIN))
def test_the_json_writer_writes_what_the_standard_module_does(value: object) -> None:
    assert json_text(value) == json.dumps(value, indent=2, ensure_ascii=False)


@settings(max_examples=300, deadline=None)
@given(_json_values(_PLAIN | st.floats(allow_nan=False, allow_infinity=False)))
def test_the_json_writer_spells_some_floats_otherwise_but_means_the_same(value: object) -> None:
    written, standard = json_text(value), json.dumps(value, indent=2, ensure_ascii=False)
    assert json.loads(written) == json.loads(standard)
    assert written.count("\n") == standard.count("\n")


def test_the_json_writer_falls_back_where_orjson_refuses() -> None:
    for refused in ({"text": "\ud800 alone"}, {"big": 2**70}):
        assert json_text(refused) == json.dumps(refused, indent=2, ensure_ascii=False)
