"""Third-party text is inert in a terminal and a CI log (issue #24, item 5): tool, server,
skill and shape names and descriptions carrying a newline and a workflow command, a terminal
escape, a carriage return and a bidi override are printed by ``pytest --toll`` (on GitHub
Actions, with annotations) and by every ``toll`` verb that shows them, and no line of the
output reads as a workflow command but toll's own annotations, and no escape or bidi
character reaches the output."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core.inert import inert, inert_lines
from tests.plugin.inner import QUIET

#: What the hostile texts carry: a line of their own that is a workflow command, the
#: runner's older command form, a screen clear, a carriage return, a right-to-left override.
HOSTILE = "\n::error::forged\x1b[2J\r##[warning]old \u202etxt.exe \u2066\x9b1m"

SERVER = f"""
from mcp.server.mcpserver import MCPServer

HOSTILE = {HOSTILE!r}
server = MCPServer("evil" + HOSTILE, instructions="Use me." + HOSTILE)


def fetch(url: str) -> str:
    return url


def plain(path: str) -> str:
    return path


server.add_tool(fetch, name="fetch" + HOSTILE, description="Fetch a page." + HOSTILE)
server.add_tool(plain, name="plain", description="::stop-commands::pwned" + HOSTILE)
server.run()
"""

SKILL = f"""---
name: {json.dumps("evil" + HOSTILE)}
description: {json.dumps("Use when forging." + HOSTILE)}
---
# Evil

Body.
"""


def _transcript(folder: Path) -> None:
    """A Claude Code session with a hostile MCP tool name and a hostile shell command, each
    called twice (so ``toll repeats`` lists them)."""
    session = folder / "project" / "sess-evil.jsonl"
    session.parent.mkdir(parents=True)
    lines = []
    calls = [
        ("mcp__evil" + HOSTILE + "__get", {"n": 1}),
        ("Bash", {"command": "echo" + HOSTILE}),
    ] * 2
    for number, (name, arguments) in enumerate(calls):
        lines.append(
            {
                "type": "assistant", "sessionId": "sess" + HOSTILE, "cwd": "/repo",
                "message": {
                    "id": f"m{number}", "role": "assistant", "model": "claude-sonnet-4-5",
                    "content": [
                        {"type": "tool_use", "id": f"t{number}", "name": name, "input": arguments}
                    ],
                    "usage": {"input_tokens": 1, "cache_read_input_tokens": 0,
                              "cache_creation_input_tokens": 10, "output_tokens": 1},
                },
            }
        )  # fmt: skip
        lines.append(
            {
                "type": "user", "sessionId": "sess" + HOSTILE, "cwd": "/repo",
                "message": {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": f"t{number}",
                     "content": "a result of some length " * 20 + HOSTILE}
                ]},
            }
        )  # fmt: skip
    session.write_text("".join(json.dumps(line) + "\n" for line in lines))


@pytest.fixture
def hostile_project(tmp_path: Path) -> Path:
    (tmp_path / "server.py").write_text(textwrap.dedent(SERVER))
    skill = tmp_path / "skills" / "evil"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(SKILL)
    _transcript(tmp_path / "transcripts")
    tool = {"name": "ping", "description": "Check the server.", "inputSchema": {"type": "object"}}
    (tmp_path / "tools.json").write_text(json.dumps([tool]))
    (tmp_path / "toll.yaml").write_text(
        textwrap.dedent(
            f"""\
            servers:
              evil:
                command: [{sys.executable}, server.py]
                timeout: 30
              "key\\n::error::ledger\\e[2J\\u202e":
                tools_file: tools.json
            skills:
              evil: {{path: skills/evil}}
            """
        )
    )
    return tmp_path


#: Toll's own annotations: a level, properties toll escaped (no ``::`` in them), a title
#: that names toll.
_OWN_ANNOTATION = re.compile(
    r"::(?:error|warning|notice) (?:file=[^:,]*,)?(?:line=\d+,)?title=(?:toll|pytest-toll)[^:]*::"
)
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def assert_inert(output: str, where: str) -> None:
    unsafe = sorted({f"U+{ord(char):04X}" for char in _UNSAFE.findall(output)})
    assert not unsafe, f"{where}: {unsafe} in\n{output}"
    for line in output.split("\n"):
        if line.lstrip().startswith("::"):
            assert _OWN_ANNOTATION.match(line), f"{where}: a forged command line: {line!r}"
        assert "##[" not in line, f"{where}: the runner's older command form: {line!r}"


def test_the_one_function_escapes_every_such_character() -> None:
    assert inert("a\nb\rc\x1b[2J\u202ed\u2066\x9b\x00\t") == (
        "a\\nb\\rc\\u001b[2J\\u202ed\\u2066\\u009b\\u0000\\t"
    )
    assert inert("::error::x") == "\\u003a:error::x"
    assert inert("  ::stop-commands::t") == "  \\u003a:stop-commands::t"
    assert inert("tests/test_a.py::test_b") == "tests/test_a.py::test_b"
    assert inert("C:\\path ##[group]x") == "C:\\path #\\u0023[group]x"
    assert inert_lines("ours\n::error::theirs\r\n\tok\x1b[31m") == (
        "ours\n\\u003a:error::theirs\n\tok\\u001b[31m"
    )
    # A JSON report through the guard: the same data, still valid JSON.
    report = json.dumps({"name": "##[x \u202e \x9b \\ \x9b" + HOSTILE}, ensure_ascii=False)
    assert json.loads(inert_lines(report)) == json.loads(report)


#: Text drawn mostly from the characters that matter: line breaks, colons, hashes, brackets,
#: spaces, escapes, C1 controls and bidi controls, with letters between.
hostile_text = st.text(
    st.sampled_from(list(":#[ \t\n\r\x1b\x9b\x85\u202e\u2066\u2028\u00a0ab")), max_size=40
)


@settings(max_examples=500, deadline=None)
@given(text=hostile_text, lead=st.text(" \t", max_size=3))
def test_inert_text_is_inert_wherever_it_lands(text: str, lead: str) -> None:
    piece = inert(text)
    assert "\n" not in piece and "\r" not in piece
    assert_inert(lead + piece, "inert")
    assert_inert(inert_lines(text), "inert_lines")


def test_pytest_toll_on_github_prints_no_forged_line(
    pytester: pytest.Pytester, hostile_project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for path in hostile_project.iterdir():
        target = pytester.path / path.name
        if path.is_dir():
            shutil.copytree(path, target)
        else:
            target.write_bytes(path.read_bytes())
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(pytester.path))
    result = pytester.runpytest_subprocess(*QUIET, "-rA", "--toll")
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, output  # the hostile names break rules E126 and S101
    assert "Traceback" not in output and "INTERNALERROR" not in output
    # The names are still there to read, their escapes visible.
    assert "fetch\\n::error::forged\\u001b[2J\\r#\\u0023[warning]old \\u202etxt.exe" in output
    assert "servers::key\\n::error::ledger\\u001b[2J\\u202e" in output  # a ledger key
    assert_inert(output, "pytest --toll")
    assert any(_OWN_ANNOTATION.match(line) for line in output.split("\n")), output
    assert_inert(summary.read_text(encoding="utf-8"), "the step summary")


def _toll(*args: str, cwd: Path) -> str:
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest_toll", *args],
        capture_output=True, text=True, cwd=cwd, env=environment, timeout=120, check=False,
    )  # fmt: skip
    output = completed.stdout + completed.stderr
    assert completed.returncode in (0, 1), (args, output)
    assert "Traceback" not in output, output
    return output


@pytest.mark.slow
def test_every_toll_verb_prints_no_forged_line(hostile_project: Path) -> None:
    server = ["--", sys.executable, "server.py"]
    transcripts = ["--root", "transcripts", "--no-cache", "--workers", "1"]
    before = hostile_project / "before.json"
    before.write_text(_toll("weigh", "--json", *server, cwd=hostile_project))
    runs = {
        "weigh": ["weigh", *server],
        "weigh --json": ["weigh", "--json", *server],
        "fix": ["fix", *server],
        "diff": ["diff", str(before), str(before)],
        "skills": ["skills", "skills"],
        "scan": ["scan", *transcripts],
        "repeats": ["repeats", *transcripts],
    }
    for name, args in runs.items():
        output = _toll(*args, cwd=hostile_project)
        assert_inert(output, f"toll {name}")
        if name in ("weigh", "fix", "skills"):
            assert "\\u001b[2J" in output, (name, output)
