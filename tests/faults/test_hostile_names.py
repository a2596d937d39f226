"""Third-party names are inert wherever they are printed, and quoted in the ledger (issue #34,
door 3).

Every kind that names something a third party chose — a server key, tool names, a skill, a
subagent, a command, a plugin and its components, memory file and folder names, a test id —
gets a name carrying every character that starts a line or steers a display: ``\\n``,
``\\r``, NEL (U+0085), the line and paragraph separators (U+2028, U+2029), an ESC sequence and
bidi controls (U+202E, U+2066). After each such character the name says ``FORGED``. The
ledger is written by ``toll init``, measured by ``pytest --toll`` (on GitHub Actions, so with
annotations and a step summary) with every report file, ratcheted with ``--toll-update`` and
failed on growth, so pytest's own failure headlines show the names too. In no output does a
line start with ``FORGED`` (Python's ``splitlines`` breaks on every one of those characters),
no such character is there raw, and the ledger holds the names only double-quoted or in a
comment.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_toll.core.inert import inert
from tests.cli import run_toll
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

#: Each character that may start a line or reorder one, then the word that must never start
#: a line of its own.
BREAKS = ("\n", "\r", "\x85", "\u2028", "\u2029", "\x1b[2K\x1b[1G", "\u202e", "\u2066")
HOSTILE = "".join(f"{char}FORGED" for char in BREAKS)
#: A file or folder name may hold every one of them.
FILE_HOSTILE = HOSTILE
#: The kinds whose entries the test names with hostile names (the house rule in
#: tests/test_house_rules.py checks this against every kind), and the report files it writes.
KINDS_FED = ("servers", "skills", "memory", "agents", "commands", "plugins", "hosts", "tests")
OUTPUTS_FED = ("json", "markdown", "sarif", "html")
#: Raw characters no output may hold (a ``\\n`` inside a JSON string is an escape already).
_RAW = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]"
)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _frontmatter(name: str, description: str) -> str:
    return f"---\nname: {json.dumps(name)}\ndescription: {json.dumps(description)}\n---\n"


def _hostile_repository(root: Path) -> None:
    tools = [
        {"name": "ping" + HOSTILE, "description": "Check the server is up." + HOSTILE,
         "inputSchema": {"type": "object"}},
        {"name": "pong", "description": "Answer a ping with the time of day.",
         "inputSchema": {"type": "object"}},
    ]  # fmt: skip
    write(root / "tools.json", json.dumps(tools))
    write(
        root / ".mcp.json",
        json.dumps({"mcpServers": {"evil" + HOSTILE: {"type": "stdio", "command": "true"}}}),
    )
    write(root / "CLAUDE.md", "# Shop\n\nFour spaces.\n")
    write(root / ".claude" / "rules" / f"r{FILE_HOSTILE}" / "x.md", "Small commits.\n")
    write(root / ".claude" / "rules" / f"x{FILE_HOSTILE}.md", "Honest messages.\n")
    write(
        root / ".claude" / "agents" / "reviewer.md",
        _frontmatter("reviewer" + HOSTILE, "Reviews diffs. Use when ready." + HOSTILE)
        + "You review code.\n",
    )
    write(
        root / ".claude" / "commands" / f"ship{FILE_HOSTILE}.md",
        "---\ndescription: Ship the release\n---\nTag, build and publish.\n",
    )
    write(
        root / ".claude" / "skills" / f"s{FILE_HOSTILE}" / "SKILL.md",
        _frontmatter("evil" + HOSTILE, "Use when forging names." + HOSTILE) + "# Body\n",
    )
    plugin = root / "plugins" / "kit"
    write(
        plugin / ".claude-plugin" / "plugin.json",
        json.dumps({"name": "kit" + HOSTILE, "description": "A kit."}),
    )
    write(
        plugin / "agents" / f"helper{FILE_HOSTILE}.md",
        _frontmatter("helper" + HOSTILE, "Helps." + HOSTILE) + "Help.\n",
    )


def assert_inert(text: str, where: str) -> None:
    raw = sorted({f"U+{ord(char):04X}" for char in _RAW.findall(text)})
    assert not raw, f"{where}: raw {raw} in\n{text}"
    for line in text.splitlines():
        assert not re.match(r"[\s|>*#`'\"<]*FORGED", line), f"{where}: a forged line {line!r}"


def assert_quoted(ledger: str) -> None:
    """Every ledger line that names a hostile name holds it double-quoted or in a comment
    (a test id is pytest's, which writes every such character as a backslash escape)."""
    for line in ledger.split("\n"):
        if "FORGED" in line and "::test_measured[" not in line:
            stripped = line.lstrip()
            assert stripped.startswith("#") or re.search(r'"[^"]*FORGED', line), line
    assert_inert(ledger, "toll.yaml")


@pytest.mark.slow
def test_hostile_names_reach_no_output_as_lines(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = pytester.path
    _hostile_repository(root)
    done = run_toll("init", cwd=root)
    assert done.returncode == 0, done.stdout + done.stderr
    assert_inert(done.stdout + done.stderr, "toll init")
    ledger = root / "toll.yaml"
    text = ledger.read_text(encoding="utf-8")
    # A tools file server whose key and tools are hostile, and a plugin, beside what init found.
    server = f"  {json.dumps('files' + HOSTILE, ensure_ascii=True)}:\n    tools_file: tools.json\n"
    assert "\nservers:\n" in text, text  # the .mcp.json server, commented out
    text = text.replace("\nservers:\n", "\nservers:\n" + server, 1)
    if "\nplugins:" not in text:
        text += "\nplugins:\n  kit:\n    path: plugins/kit\n"
    ledger.write_text(text, encoding="utf-8")
    pytester.makepyfile(
        test_names=f"""
        import pytest

        @pytest.mark.parametrize("name", [{HOSTILE!r}], ids=[{("id" + HOSTILE)!r}])
        def test_measured(toll, name):
            toll.text(name, name * 40)
        """
    )
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(root / "summary.md"))
    monkeypatch.setenv("GITHUB_WORKSPACE", str(root))
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "")
    suffixes = {"json": ".json", "markdown": ".md", "sarif": ".sarif", "html": ".html"}
    outputs = {f"--toll-{name}": root / f"r{suffixes[name]}" for name in OUTPUTS_FED}
    files = [f"{flag}={path}" for flag, path in outputs.items()]
    update = pytester.runpytest_subprocess(*QUIET, "-rA", "--toll", "--toll-update", *files)
    output = update.stdout.str() + update.stderr.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert "nothing was written" not in output, output
    assert_inert(output, "pytest --toll --toll-update")
    ledger_text = ledger.read_text(encoding="utf-8")
    assert "FORGED" in ledger_text.split("tests:")[-1], ledger_text  # the test id is pinned
    assert_quoted(ledger_text)
    entries = json.loads(outputs["--toll-json"].read_text(encoding="utf-8"))["entries"]
    named = {
        entry["kind"]
        for entry in entries
        if "FORGED" in entry["name"] or any("FORGED" in part["name"] for part in entry["parts"])
    }
    assert named == set(KINDS_FED), named
    for flag, path in outputs.items():
        report = path.read_text(encoding="utf-8")
        assert "FORGED" in report, flag
        if path.suffix in (".json", ".sarif"):
            json.loads(report)
        assert_inert(report, flag)
    assert_inert((root / "summary.md").read_text(encoding="utf-8"), "the step summary")
    # Growth fails the gate: pytest's failure headlines name the hostile items.
    write(root / ".claude" / "rules" / f"x{FILE_HOSTILE}.md", "Honest messages. " * 200)
    tools = json.loads((root / "tools.json").read_text(encoding="utf-8"))
    tools[0]["description"] *= 30
    write(root / "tools.json", json.dumps(tools))
    failed = pytester.runpytest_subprocess(*QUIET, "-rA", "--toll", *files)
    output = failed.stdout.str() + failed.stderr.str()
    assert failed.ret == 1, output
    assert "Traceback" not in output and "INTERNALERROR" not in output, output
    assert inert("ping" + HOSTILE) in output, output  # the tool that grew
    assert inert(f".claude/rules/x{FILE_HOSTILE}.md") in output, output  # the rule that grew
    assert_inert(output, "pytest --toll (failing)")
    for flag, path in outputs.items():
        assert_inert(path.read_text(encoding="utf-8"), f"{flag} (failing)")


@pytest.mark.parametrize("char", [*BREAKS, "\x00", "\x9b", "\u061c", "\u200f"])
def test_a_hostile_tool_name_never_blocks_a_ledger_write(tmp_path: Path, char: str) -> None:
    """Written as ruamel chose, NEL or U+2028 sat raw in a single-quoted key, which YAML
    folds into a space: the ledger did not read back as written, and every update refused."""
    from pytest_toll.gate.ledger.read import load_yaml
    from pytest_toll.gate.ledger.write import rewrite_ledger

    ledger = tmp_path / "toll.yaml"
    ledger.write_text("servers:\n  # the files server\n  files:\n    tools_file: t.json\n")
    name = f"ping{char}FORGED"
    tools = {name: 24, "pong": 21}
    written = rewrite_ledger(ledger, {("servers", "files", "tools"): tools, ("tests", name): 3})
    assert written.written
    text = ledger.read_text(encoding="utf-8")
    assert load_yaml(text, ledger).value["servers"]["files"]["tools"] == tools
    assert "  # the files server\n  files:" in text
    assert_quoted(text)
