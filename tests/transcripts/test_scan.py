"""Tolls: shapes, outcomes, pairing, repeats, the scan report, cache and pool, scan/repeats CLI."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll import cli
from pytest_toll.core.tokens import count
from pytest_toll.transcripts import scan as tolls
from pytest_toll.transcripts.readers import Image, ResultRecord
from pytest_toll.transcripts.scan import (
    build_report,
    select_files,
    shape_of,
    shape_of_command,
    summarize_file,
    summarize_files,
)

FIXTURES = Path(__file__).parents[1] / "fixtures" / "transcripts"
MAIN = FIXTURES / "claude" / "repo" / "sess-main.jsonl"
A_PY = "def answer():\n    return 42\n"
LOG = "abc123 first commit\ndef456 second commit\n"


@pytest.mark.parametrize(
    ("command", "shape"),
    [
        ("git log --oneline", "$ git log"),
        ("cd /repo && git log -p", "$ git log"),
        ("cd /repo; cd src && git -C x --no-pager diff HEAD", "$ git diff"),
        ("sudo -u root timeout 30 env X=1 Y=2 git status", "$ git status"),
        ("timeout -s KILL 5m npm test", "$ npm test"),
        ("X=1 FOO=bar pytest -q", "$ pytest"),
        ("uv run pytest tests", "$ pytest"),
        ("python3 -c 'print(1)'", "$ python -c"),
        ('python -c "import sys; print(sys.path)"', "$ python -c"),
        ("python3.12 - <<'EOF'\nprint(1)\nEOF", "$ python -c"),
        ("node -e 'console.log(1)'", "$ node -e"),
        ("python -m pytest -x", "$ python -m pytest"),
        ("bash -c 'cd /x && make test'", "$ make"),
        ("/usr/bin/grep -rn TODO .", "$ grep"),
        ("cat a.py | head -5", "$ cat"),
        ("ls", "$ ls"),
        ("cd /repo", "$ cd"),
        ("echo 'unbalanced", "$ echo"),
        ("", "$ (empty)"),
    ],
)
def test_bash_shapes(command: str, shape: str) -> None:
    assert shape_of_command(command) == shape


def test_tool_shapes() -> None:
    assert shape_of("Bash", {"command": "git log"}) == "$ git log"
    assert shape_of("shell", {"command": ["bash", "-lc", "sudo git status"]}) == "$ git status"
    assert shape_of("shell", {"command": ["rg", "-n", "x"]}) == "$ rg"
    assert shape_of("exec_command", {"cmd": "cargo build --release"}) == "$ cargo build"
    assert shape_of("Read", {"file_path": "/x"}) == "Read"
    assert shape_of("mcp__github__get_issue", {"n": 1}) == "mcp__github__get_issue"


@pytest.mark.parametrize(
    ("result", "outcome"),
    [
        (ResultRecord("s", "c", "hello", False), "ok"),
        (ResultRecord("s", "c", "hello", True), "error"),
        (
            ResultRecord("s", "c", "<tool_use_error>File does not exist.</tool_use_error>", False),
            "error",
        ),
        (ResultRecord("s", "c", "  \n", False), "empty"),
        (ResultRecord("s", "c", "", False, opaque_blocks=2), "opaque"),
        (ResultRecord("s", "c", "", False, images=(Image("image/png", 10, 10),)), "ok"),
        (ResultRecord("s", "c", "line\n... [120 lines truncated] ...", False), "truncated"),
        (
            ResultRecord("s", "c", "Output too large (41KB). Full output saved to /tmp/x", False),
            "truncated",
        ),
        (ResultRecord("s", "c", "x" * 5000 + "truncated in the middle" + "y" * 5000, False), "ok"),
    ],
)
def test_outcomes(result: ResultRecord, outcome: str) -> None:
    assert tolls.outcome_of(result) == outcome


def test_image_tokens() -> None:
    assert tolls.image_tokens(Image("image/png", 100, 50)) == 7
    assert tolls.image_tokens(Image("image/png", 1000, 1000)) == 1334
    # 4000×3000 fits to 1238×929 (1.15 MP): about 1,533 tokens, never the raw 16,000
    assert tolls.image_tokens(Image("image/png", 4000, 3000)) == 1534
    assert tolls.image_tokens(Image("image/png", None, None)) == 1600


def test_main_session_summary() -> None:
    summary = summarize_file(MAIN)
    assert summary.sessions == ["sess-main"]
    assert summary.orphan_results == 1
    assert summary.turns == 3 and summary.prompt_tokens == 1100 + 1410 + 1605
    shapes = {name: (t.calls, t.by_outcome, t.ok_tokens) for name, t in summary.shapes.items()}
    a_py = count(A_PY)
    assert shapes == {
        "$ git log": (3, {"ok": 2, "error": 1}, [count(LOG), count(LOG)]),
        "Read": (4, {"ok": 4}, [a_py, a_py, 7, a_py]),
        "$ python -c": (1, {"empty": 1}, []),
        "Grep": (1, {"truncated": 1}, []),
        "mcp__files__list": (1, {"opaque": 1}, []),
        "WebFetch": (1, {"unpaired": 1}, []),
        "Edit": (1, {"ok": 1}, [count("The file /repo/a.py has been updated.")]),
    }
    # a.py read twice before the edit is a repeat; the read after the edit is not, and
    # the git log re-run after the edit is not either
    assert [r.as_dict() for r in summary.repeats] == [
        {
            "session": "sess-main",
            "shape": "Read",
            "target": "/repo/a.py",
            "times": 2,
            "tokens_each": a_py,
            "wasted": a_py,
        }
    ]


def test_scan_report_over_all_fixtures() -> None:
    summaries, stats = summarize_files(select_files([FIXTURES]), workers=1)
    report = build_report(summaries)
    data = report.as_dict()
    assert list(data) == [
        "kind", "tokenizer", "sessions", "calls", "unreadable_lines", "shapes", "repeats",
        "wasted_tokens", "waste_ratio", "amplification",
    ]  # fmt: skip
    assert (data["kind"], data["tokenizer"]) == ("tolls", "o200k_base")
    assert (data["sessions"], data["calls"], data["unreadable_lines"]) == (5, 22, 4)
    rows = {row["shape"]: row for row in data["shapes"]}
    assert rows["mcp__flaky__get"] == {
        "shape": "mcp__flaky__get", "calls": 4, "ok": 1, "ok_tokens": count("fine"), "median": count("fine"),
        "p90": count("fine"), "by_outcome": {"ok": 1, "error": 3}, "suspicious": True,
    }  # fmt: skip
    assert rows["Read"]["calls"] == 5 and rows["Read"]["suspicious"] is False
    assert rows["$ git status"]["by_outcome"] == {"ok": 2}
    assert rows["$ ls"]["by_outcome"] == {"ok": 1, "error": 1}
    assert data["shapes"][0]["shape"] == "Read"  # ranked by ok tokens
    a_py = count(A_PY)
    assert data["wasted_tokens"] == a_py
    assert data["waste_ratio"] == round(a_py / report.ok_tokens, 6)
    assert data["amplification"] == round(report.prompt_tokens / report.admitted_tokens, 2)
    assert report.unreadable_by_file == {str(FIXTURES / "corrupt" / "sess-bad.jsonl"): 4}
    assert stats.files == 5 and stats.cached == 0


def test_median_and_p90_are_nearest_rank() -> None:
    values = list(range(1, 11))
    assert (tolls.nearest_rank(values, 0.5), tolls.nearest_rank(values, 0.9)) == (5, 9)
    assert tolls.nearest_rank([], 0.5) == 0


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


# --- CLI -----------------------------------------------------------------------------------


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
    assert "contain no tool calls" in capsys.readouterr().err


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
    assert cli.main(["repeats", "--root", str(FIXTURES / "codex")]) == 0
    assert capsys.readouterr().out.startswith("no repeats")


def test_result_before_its_call_and_a_duplicated_result(tmp_path: Path) -> None:
    def line(kind: str, content: list[dict[str, object]]) -> str:
        message = {"id": "m", "role": kind, "content": content}
        return json.dumps({"type": kind, "sessionId": "s", "message": message})

    result = {"type": "tool_result", "tool_use_id": "t1", "content": LOG}
    path = tmp_path / "s.jsonl"
    path.write_text(
        "\n".join(
            [
                line("user", [result]),
                line(
                    "assistant",
                    [
                        {
                            "type": "tool_use",
                            "id": "t1",
                            "name": "Bash",
                            "input": {"command": "git log"},
                        }
                    ],
                ),
                line("user", [result]),
            ]
        )
        + "\n"
    )
    summary = summarize_file(path)
    assert summary.shapes["$ git log"].by_outcome == {"ok": 1}
    assert (summary.admitted_tokens, summary.orphan_results) == (count(LOG), 0)


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    import pty
    import subprocess
    import sys

    main, secondary = pty.openpty()
    environment = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    finished = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "scan", "--root", str(FIXTURES), "--json"],
        stdout=subprocess.PIPE,
        stderr=secondary,
        env=environment,
        check=False,
        timeout=60,
    )
    os.close(secondary)
    shown = b""
    try:
        while chunk := os.read(main, 4096):
            shown += chunk
    except OSError:  # the terminal closes once the child is gone
        pass
    os.close(main)
    assert finished.returncode == 0 and json.loads(finished.stdout)["calls"] == 22
    assert b"\rtoll: read 5/5 transcript files" in shown


@settings(max_examples=300, deadline=None)
@given(command=st.text(max_size=200))
def test_any_command_has_a_shape(command: str) -> None:
    shape = shape_of_command(command)
    assert shape.startswith("$ ") and len(shape) > 2


def test_scan_json_lists_every_shape_unless_told(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["scan", "--root", str(FIXTURES), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)["shapes"]) == 11


def test_a_resumed_session_copy_is_counted_once(tmp_path: Path) -> None:
    # Claude Code copies earlier messages into a resumed session's new file.
    (tmp_path / "first.jsonl").write_bytes(MAIN.read_bytes())
    resumed = MAIN.read_text().replace('"sessionId":"sess-main"', '"sessionId":"sess-resumed"')
    extra = {
        "type": "assistant",
        "sessionId": "sess-resumed",
        "message": {
            "id": "msg_9",
            "role": "assistant",
            "content": [
                {
                    "type": "tool_use",
                    "id": "toolu_new",
                    "name": "Glob",
                    "input": {"pattern": "*.py"},
                }
            ],
            "usage": {"input_tokens": 7, "cache_read_input_tokens": 1600},
        },
    }
    (tmp_path / "resumed.jsonl").write_text(resumed + json.dumps(extra) + "\n")
    single = build_report([summarize_file(MAIN)])
    both = build_report(
        summaries for summaries in summarize_files(select_files([tmp_path]), workers=1)[0]
    )
    assert both.calls == single.calls + 1
    assert both.ok_tokens == single.ok_tokens and both.admitted_tokens == single.admitted_tokens
    assert both.prompt_tokens == single.prompt_tokens + 1607
    assert [(r.shape, r.target, r.times) for r in both.repeats] == [
        ("Read", "/repo/a.py", 2)
    ]  # the copied repeat is the same event (same first call id)
    assert both.sessions == 2
