"""The bundled demo, end to end, in a copy: a longer description fails with its diff and
annotations; a shorter one passes as improved and ratchets the pins down (that the demo passes
as committed is checked by tests/test_action.py, through the composite action). Real processes
only: the demo's stdio MCP server and pytest itself run as subprocesses."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"
SEARCH_SENTENCE = 'Returns up to "\n            "`limit` matches'
LONGER_SEARCH = (
    'Searches are case-insensitive and "\n            "every word must appear somewhere in '
    'the note. Returns up to "\n            "`limit` matches'
)
READ_SENTENCE = "Returns the note's Markdown body, its tags and when it was last edited."
SHORTER_READ = "Returns the note's Markdown body and tags."


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment minus anything that would make the inner pytest think it is an xdist
    worker or on GitHub (its summary must not land in a real step summary). ``PYTEST_ADDOPTS``
    stays: it leaves out plugins the demo does not use (tests/conftest.py)."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key == "PYTEST_ADDOPTS"
        or (not key.startswith(("PYTEST_", "GITHUB_")) and key != "COV_CORE_SOURCE")
    }
    env.update(extra or {})
    return env


def run_pytest(
    demo: Path, *args: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--toll", *args],
        cwd=demo,
        env=clean_env({"XDG_CACHE_HOME": str(demo.parent / "cache"), **(env or {})}),
        capture_output=True,
        text=True,
        timeout=180,
    )


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    copy = tmp_path / "demo"
    shutil.copytree(DEMO, copy, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    return copy


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} no longer contains {old!r}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_a_longer_description_fails_with_its_diff_and_annotations(demo: Path) -> None:
    """One run, two failures: a tool description grew, and a heavy tool shape in the
    transcripts lost its decision."""
    edit(demo / "notes_server.py", SEARCH_SENTENCE, LONGER_SEARCH)
    ledger = demo / "toll.yaml"
    edit(ledger, "    Read:\n      status: keep\n", "    Grep:\n      status: keep\n")
    transcripts_line = ledger.read_text(encoding="utf-8").splitlines().index("transcripts:") + 1
    summary = demo.parent / "step-summary.md"
    result = run_pytest(demo, env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.returncode == 1, result.stdout + result.stderr
    out = result.stdout
    assert re.search(r"search_notes\s+176\s+161\s+\+15", out), out  # the per-tool diff
    assert "FAILED toll.yaml::servers::notes" in out
    # Annotations start on their own line and point at what grew: search_notes' description
    # in the server's source, naming the entry's line in toll.yaml.
    source = (demo / "notes_server.py").read_text(encoding="utf-8").splitlines()
    described = next(
        number for number, line in enumerate(source, 1) if "Search the team's notes by" in line
    )
    annotation = re.search(
        r"^::error file=notes_server.py,line=\d+,title=toll%3A servers%3A%3Anotes .*$", out, re.M
    )
    assert annotation, out
    assert annotation.group(0).startswith(
        f"::error file=notes_server.py,line={described},title=toll%3A servers%3A%3Anotes regressed::"
    )
    assert annotation.group(0).endswith(
        "%0Ameasured 503 tok (o200k), pin 488, budget 800, change +15%0A"
        "search_notes: 161 → 176 (+15)%0Aledger entry: toll.yaml:9"
    )
    # The budgeted test includes the tools; its parts are pinned, so it names the one that grew.
    assert "::error file=toll.yaml,line=40," in out
    assert "regressed: notes +15 over its pin 488" in out
    assert "FAILED toll.yaml::transcripts" in out
    assert (
        f"\n::error file=toll.yaml,line={transcripts_line},title=toll%3A transcripts TL003::Read: "
    ) in out
    markdown = summary.read_text(encoding="utf-8")
    # The Markdown says the run's tally exactly as the terminal does (one tally everywhere).
    tally = re.search(r"^\d+ entries: \d+ failed, .*$", out, re.MULTILINE)
    assert tally is not None and "2 regressed" in tally.group(0)
    assert markdown.startswith(
        f"## pytest-toll: context cost\n\n❌ **Gate failed** · {tally.group(0)}"
    )
    assert "- **servers::notes**: 488 → 503 (+15) · search\\_notes 161 → 176 (+15)" in markdown


@pytest.mark.slow
def test_a_shorter_description_improves_and_ratchets(demo: Path) -> None:
    edit(demo / "notes_server.py", READ_SENTENCE, SHORTER_READ)
    before = (demo / "toll.yaml").read_text(encoding="utf-8")
    improved = run_pytest(demo)
    assert improved.returncode == 0, improved.stdout + improved.stderr
    # The server's 7 tok once: the test that weighs the same tools improved too, and is
    # counted as a test, not added again.
    assert "improved by 7 tok, 1 test improved — ratchet with --toll-update" in improved.stdout
    assert (demo / "toll.yaml").read_text(encoding="utf-8") == before  # no write without asking
    # Cost per use: the transcripts never call delete_note, which the eager hosts pay for
    # on every request; a warning, so the run still passes.
    assert (
        "transcripts: E131 warn mcp__notes__delete_note: costs 78 tok on every request "
        "(codex, gemini-cli, copilot, cursor; deferred by claude-code); 0 calls in 2 sessions; "
        "leaving the tool out saves 78,000 tok per 1,000 requests"
    ) in improved.stdout

    ratchet = run_pytest(demo, "--toll-update")
    assert ratchet.returncode == 0, ratchet.stdout + ratchet.stderr
    after = (demo / "toll.yaml").read_text(encoding="utf-8")
    expected = (
        before.replace("    pin: 488\n", "    pin: 481\n")
        .replace("      read_note: 84\n", "      read_note: 77\n")
        .replace(
            "fits_its_budget: {pin: 1162, parts: {system prompt: 58, notes: 488,",
            "fits_its_budget: {pin: 1155, parts: {system prompt: 58, notes: 481,",
        )
    )
    assert after == expected  # comments, order and budgets survive; only pins moved

    again = run_pytest(demo)
    assert again.returncode == 0
    assert re.search(r"^\d+ entries: \d+ passed \(\d+ ok\)$", again.stdout, re.MULTILINE)


def test_the_demo_server_speaks_mcp_to_the_official_client() -> None:
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    async def session_calls() -> tuple[list[str], bool, str]:
        params = StdioServerParameters(
            command=sys.executable, args=[str(DEMO / "notes_server.py")], cwd=str(DEMO)
        )
        with open(os.devnull, "w") as quiet:
            async with (
                stdio_client(params, errlog=quiet) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                listed = await session.list_tools()
                missing = await session.call_tool("read_note", {"note_id": "n9"})
                found = await session.call_tool("search_notes", {"query": "canary"})
        text = found.content[0].text  # type: ignore[union-attr]
        return [tool.name for tool in listed.tools], bool(missing.is_error), text

    names, missing_is_error, found = anyio.run(session_calls)
    assert names == ["search_notes", "read_note", "create_note", "delete_note"]
    assert missing_is_error
    assert (
        found
        == "n1: Deploying the API — Merge to main, wait for the canary, then run `make promote`."
    )


@pytest.mark.slow
def test_the_demo_s_procedure_moves_to_a_skill_and_the_written_result_measures_as_reported(
    demo: Path,
) -> None:
    """``toll fix --surface --write`` on the demo: its CLAUDE.md's procedure becomes a skill,
    and ``toll surface`` on the written demo says what the fix reported."""

    def toll(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "pytest_toll", *args], cwd=demo, env=clean_env(),
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip

    fixed = toll("fix", "--surface", "--host", "claude-code", "--write", "--json")
    assert fixed.returncode == 0, fixed.stderr
    report = json.loads(fixed.stdout)
    assert report["written"] is True
    [move] = report["moves"]
    assert move["heading"] == "Adding a tool to the notes server"
    total = report["hosts"][0]
    assert total["host"] == "claude-code" and total["saved"] > 0
    measured = toll("surface", "--host", "claude-code", "--json")
    assert measured.returncode == 0, measured.stderr
    bills = json.loads(measured.stdout)["fixed_cost"]
    assert bills["claude-code"]["total"] == total["after"]
    assert "1. Add the tool" not in (demo / "CLAUDE.md").read_text(encoding="utf-8")
