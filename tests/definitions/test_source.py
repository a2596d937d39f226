"""weigh_source and `toll weigh`, end to end (and a weigh report read back by `toll diff`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.findings import RuleOverrides
from pytest_toll.core.tokens import count
from pytest_toll.definitions.source import expand_headers, weigh_source
from tests.cli import run_main as toll

SERVERS = Path(__file__).parents[1] / "servers"
GOOD = (
    "Read a UTF-8 text file. Use this when you need the current text of a file before "
    "editing it. Returns the file's contents."
)


def sdk(*args: str) -> list[str]:
    return [sys.executable, str(SERVERS / "sdk_server.py"), *args]


def write_tools(path: Path, tools: list[dict[str, Any]]) -> Path:
    path.write_text(json.dumps(tools))
    return path


def read_file_tool(description: str | None = GOOD, **extra: Any) -> dict[str, Any]:
    element: dict[str, Any] = {
        "name": "read_file",
        "inputSchema": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "relative path"}},
        },
        "annotations": {"readOnlyHint": True},
        **extra,
    }
    if description is not None:
        element["description"] = description
    return element


# --- weigh_source -----------------------------------------------------------------------


def test_a_file_is_weighed_and_judged(tmp_path: Path) -> None:
    file = write_tools(tmp_path / "tools.json", [read_file_tool(), {"name": "drop_table"}])
    report = weigh_source(tools_file=file)
    assert report.target == str(file)
    assert report.source_shape == "mcp"
    assert report.server is None
    assert [row.name for row in report.tools] == ["read_file", "drop_table"]
    assert [(f.rule, f.severity, f.subject) for f in report.findings] == [
        ("E121", "error", "drop_table"),
        ("E123", "warn", "drop_table"),
    ]
    quiet = weigh_source(
        tools_file=file, settings=RuleOverrides({"E121": "off", "E123": "info"}), window=1000
    )
    assert [(f.rule, f.severity) for f in quiet.findings] == [("E123", "info")]
    assert quiet.as_dict()["window"] == {"size": 1000, "share": quiet.claude / 1000}


def test_a_server_with_changing_order_and_noise(tmp_path: Path) -> None:
    report = weigh_source(
        command=sdk("--order-state", str(tmp_path / "starts"), "--noise"),
        check_order=True,
        timeout=20,
    )
    rules = {(f.rule, f.severity): f for f in report.findings}
    assert rules[("E112", "warn")].message == (
        "two fresh connections listed the order differs from position 1: 'read_file' then 'search'"
    )
    # Both connections printed the banner.
    assert rules[("E116", "error")].message.startswith("wrote 2 non-JSON-RPC lines to stdout")
    assert report.server == {
        "transport": "stdio",
        "protocol_version": "2025-11-25",
        "name": "toll-test-server",
        "pages": 1,
    }
    assert report.instructions == 15
    assert report.source_shape == "mcp tools/list result"


@pytest.fixture(scope="module")
def guarded_http() -> Iterator[str]:
    process = subprocess.Popen(
        sdk("--http", "--expect-header", "Authorization=Bearer s3cret"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    yield f"http://127.0.0.1:{port}/mcp"
    process.terminate()
    process.communicate(timeout=10)


def test_http_headers_come_from_the_environment(
    guarded_http: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TOLL_TEST_TOKEN", "s3cret")
    report = weigh_source(
        url=guarded_http, headers={"Authorization": "Bearer ${TOLL_TEST_TOKEN}"}, timeout=20
    )
    assert [row.name for row in report.tools] == ["read_file", "write_file", "search"]
    assert report.server is not None and report.server["transport"] == "http"
    monkeypatch.delenv("TOLL_TEST_TOKEN")
    with pytest.raises(
        UsageError, match=r"^header Authorization: environment variable TOLL_TEST_TOKEN is not set "
    ):
        weigh_source(url=guarded_http, headers={"Authorization": "Bearer ${TOLL_TEST_TOKEN}"})


def test_expand_headers() -> None:
    assert expand_headers({"A": "x ${B} ${C}", "D": "$E"}, {"B": "1", "C": "2"}) == {
        "A": "x 1 2",
        "D": "$E",
    }


def test_usage_errors(tmp_path: Path) -> None:
    file = write_tools(tmp_path / "t.json", [])
    with pytest.raises(UsageError, match=r"give exactly one source of tools: .*$"):
        weigh_source()
    with pytest.raises(UsageError, match=r"\(got command and tools\)"):
        weigh_source(command=["x"], tools_file=file)
    with pytest.raises(UsageError, match="--check-order needs a server"):
        weigh_source(tools_file=file, check_order=True)
    with pytest.raises(UsageError, match="window must be a positive"):
        weigh_source(tools_file=file, window=0)


# --- toll weigh -------------------------------------------------------------------------


def test_toll_weigh_json_is_the_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = write_tools(tmp_path / "tools.json", [read_file_tool()])
    code, out, _ = toll(capsys, "weigh", "--tools", str(file), "--json")
    assert code == 0
    data = json.loads(out)
    assert data == weigh_source(tools_file=file).as_dict()
    assert list(data)[:12] == [
        "kind",
        "target",
        "source_shape",
        "tokenizer",
        "method",
        "tools",
        "framing",
        "instructions",
        "totals",
        "window",
        "findings",
        "breakdown",
    ]
    assert data["tools"] == [
        {
            "name": "read_file",
            "tokens": 69,
            "description_tokens": 29,
            "schema_tokens": 26,
            "output_schema_tokens": 0,
        }
    ]
    assert data["totals"] == {"raw": 68, "claude": 80, "openai": 65}
    assert data["framing"] == 11


def test_toll_weigh_human_table(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = write_tools(
        tmp_path / "tools.json", [read_file_tool(), read_file_tool(None, name="list_dir")]
    )
    code, out, _ = toll(capsys, "weigh", "--tools", str(file))
    assert code == 1  # E121 is an error
    lines = out.splitlines()
    assert lines[0] == f"toll weigh: {file}"
    assert lines[1] == "  2 tools · shape: mcp"
    assert lines[3] == "tokens   descr  schema  output  tool  (o200k tokens)"
    assert lines[4].split() == ["69", "29", "26", "-", "read_file"]
    assert lines[5].split() == ["36", "0", "26", "-", "list_dir"]
    assert lines[6].split()[0] == "16"
    assert lines[8] == "   121  total, claude serialization (o200k)"
    assert "totals (o200k): claude 121 · openai 97 · raw 103" in lines
    assert (
        "window: ~0.012% of a 1,000,000-token window (claude total + instructions, o200k; "
        "shown, never graded)"
    ) in lines
    assert lines[-1] == (
        "  E121 error list_dir: has no description — say what the tool does, when to use it "
        "and what it returns"
    )
    code, out, _ = toll(capsys, "weigh", "--tools", str(file), "--rule", "E121=warn")
    assert code == 0


def test_toll_weigh_a_stdio_server_after_double_dash(capsys: pytest.CaptureFixture[str]) -> None:
    raw = [sys.executable, str(SERVERS / "raw_server.py"), "noise"]
    code, out, _ = toll(capsys, "weigh", "--timeout", "20", "--", *raw)
    assert code == 1  # E116: the server prints debug lines on stdout
    assert "  stdio, protocol 2025-06-18, 1 page · 1 tool · shape: mcp tools/list result" in out
    assert (
        "  E116 error wrote 4 non-JSON-RPC lines to stdout, first: 'DEBUG: handling initialize'"
        in out
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env", "NOVALUE"], "toll: error: --env takes KEY=VALUE; got an argument without"),
        (["--header", "=secret"], "toll: error: --header takes KEY=VALUE; got an argument"),
        (["--rule", "E121=loud"], "--rule/--limit.E121: severity must be one of"),
        (["--limit", "tool_tokens=lots"], "--limit tool_tokens: must be a number, not 'lots'"),
        (["--limit", "tool_tokenz=5"], "--rule/--limit.tool_tokenz: unknown threshold"),
        (["--rule", "E999=off"], "--rule/--limit.E999: unknown rule (expected one of: E112,"),
        (["--env", "A=1", "--tools", "x.json"], "--env applies to a stdio server"),
        (["--header", "A=1", "--tools", "x.json"], "--header applies to --url"),
        ([], "give exactly one source of tools"),
        (["--tools", "missing.json"], "toll: error: missing.json: no such file"),
    ],
)
def test_toll_weigh_cannot_judge(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = toll(capsys, "weigh", *argv)
    assert code == 2
    assert message in err
    assert "secret" not in err
    assert out == ""


def test_toll_weigh_a_dead_server_is_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    raw = [sys.executable, str(SERVERS / "raw_server.py"), "die"]
    code, _, err = toll(capsys, "weigh", "--", *raw)
    assert code == 2
    assert "exited with code 3 before answering (initialize)" in err
    assert "  | fatal: DATABASE_URL is not set" in err


# --- toll weigh --json, then toll diff ------------------------------------------------


def test_weigh_json_round_trips_through_diff(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = write_tools(tmp_path / "small.json", [read_file_tool()])
    big = write_tools(
        tmp_path / "big.json", [read_file_tool(GOOD * 3), read_file_tool(name="read_dir")]
    )
    outputs = []
    for file in (small, big):
        _, out, _ = toll(capsys, "weigh", "--tools", str(file), "--json")
        path = tmp_path / f"{file.stem}.report.json"
        path.write_text(out)
        outputs.append(str(path))
    code, out, _ = toll(capsys, "diff", *outputs, "--json")
    assert code == 0
    changes = json.loads(out)["changes"]
    assert [(c["name"], c["change"]) for c in changes] == [
        ("read_dir", "added"),
        ("read_file", "grown"),
    ]


def test_ledger_style_values_are_checked_and_coerced(tmp_path: Path) -> None:
    raw = [sys.executable, str(SERVERS / "raw_server.py"), "env"]
    report = weigh_source(command=raw, env={"TOLL_TEST_VALUE": 8080}, cwd=tmp_path, timeout=10)  # type: ignore[dict-item]
    # The number reached the server as the string "8080" (its description reports it).
    assert report.tools[0].description_tokens == count(f"8080 in {tmp_path}")
    with pytest.raises(UsageError, match=r"^env\.A: must be a string, not list$"):
        weigh_source(command=raw, env={"A": ["x"]})  # type: ignore[dict-item]
    with pytest.raises(UsageError, match=r"^command: must be a list of strings"):
        weigh_source(command="python server.py")  # type: ignore[arg-type]
    with pytest.raises(CouldNotJudge, match=r"working directory .*nowhere does not exist$"):
        weigh_source(command=raw, cwd=tmp_path / "nowhere")
