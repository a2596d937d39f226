"""Every entry kind through ``pytest --toll``: skills levels, transcripts decisions, and the
fixture's tools/skills/call/transcripts measurements, on the demo's real files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

# Imported here so it stays loaded across in-process runs: pytester drops modules first
# imported by an inner run, and a re-imported PyYAML breaks its C loader's constructors.
import yaml  # noqa: F401

from pytest_toll.calls.measuring import measure
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo"


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*QUIET, *args)


def rows(result: pytest.RunResult) -> list[list[str]]:
    lines = result.outlines
    start = next(i for i, line in enumerate(lines) if "toll summary" in line)
    out = []
    for line in lines[start + 1 :]:
        if line.startswith("="):
            break
        if line:
            out.append(line.split())
    return out


@pytest.fixture
def skills_project(pytester: pytest.Pytester) -> pytest.Pytester:
    shutil.copytree(DEMO / "skills", pytester.path / "skills")
    (pytester.path / "toll.yaml").write_text(
        "# skills we ship\n"
        "skills:\n"
        "  release-notes:\n"
        "    path: skills/release-notes\n"
        "    budget: 600\n"
    )
    return pytester


def test_skill_levels_are_pinned_and_gated_each(skills_project: pytest.Pytester) -> None:
    ledger = skills_project.path / "toll.yaml"
    run(skills_project, "--toll", "--toll-update").assert_outcomes(passed=1)
    assert ledger.read_text().endswith(
        "    budget: 600\n    pin: {metadata: 40, body: 146, references: 111}\n"
        "    files:\n      references:\n        references/style.md: 111\n"
    )
    # The always-loaded metadata grows while the total stays under budget: a regression.
    skill = skills_project.path / "skills" / "release-notes" / "SKILL.md"
    text = skill.read_text()
    skill.write_text(text.replace("Turn merged", "Carefully and thoroughly turn every merged", 1))
    result = run(skills_project, "--toll")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "regressed: metadata +* over its pin 40",
            "  biggest changes:",
            "    metadata        4*   40     +*",
        ]
    )


def test_a_missing_skill_is_an_error(skills_project: pytest.Pytester) -> None:
    (skills_project.path / "toll.yaml").write_text("skills:\n  gone: {path: skills/gone}\n")
    result = run(skills_project, "--toll")
    result.assert_outcomes(failed=1)
    assert rows(result)[1][:3] == ["ERROR", "skills::gone", "-"]


def test_transcripts_section_is_one_item_with_its_rules(pytester: pytest.Pytester) -> None:
    shutil.copytree(DEMO / "transcripts", pytester.path / "transcripts")
    ledger = pytester.path / "toll.yaml"
    ledger.write_text(
        "transcripts:\n"
        "  roots: [transcripts]\n"
        "  decide_above_tokens: 500\n"
        "  decisions:\n"
        "    Read: {status: keep, reason: reading files is the job}\n"
    )
    seeded = run(pytester, "--toll", "--toll-update")
    seeded.assert_outcomes(passed=1)
    assert rows(seeded)[1] == ["new", "transcripts", "1,215", "-", "-", "-", "o200k"]
    assert ledger.read_text().endswith("  waste_ratio_pin: 0.0922\n")
    seeded.stdout.fnmatch_lines(["transcripts: waste_ratio_pin -, measured 0.0922"])
    run(pytester, "--toll").stdout.fnmatch_lines(
        ["transcripts: waste_ratio_pin 0.0922, measured 0.0922"]
    )
    # A repeated decision is rule TL004's to report, on the transcripts item.
    ledger.write_text(ledger.read_text() + "")
    text = ledger.read_text().replace(
        "  waste_ratio_pin", "    Read: {status: watch, reason: twice}\n  waste_ratio_pin"
    )
    ledger.write_text(text)
    duplicated = run(pytester, "--toll")
    duplicated.stdout.fnmatch_lines(["*TL004*Read*"])
    duplicated.assert_outcomes(failed=1)
    duplicated.stdout.fnmatch_lines(["1 entry: 1 failed (1 ok)"])


def test_no_transcripts_is_an_error_not_a_pass(pytester: pytest.Pytester) -> None:
    (pytester.path / "empty").mkdir()
    (pytester.path / "toll.yaml").write_text("transcripts:\n  roots: [empty]\n")
    result = run(pytester, "--toll")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*_ transcripts _*", "*no transcripts found*"])


def test_fixture_measures_every_kind(pytester: pytest.Pytester) -> None:
    shutil.copytree(DEMO / "skills", pytester.path / "skills")
    shutil.copytree(DEMO / "transcripts", pytester.path / "transcripts")
    tools = [{"name": "ping", "description": "Ping.", "inputSchema": {"type": "object"}}]
    (pytester.path / "tools.json").write_text(json.dumps(tools))
    pytester.makepyfile(
        test_kinds=f"""
        from pathlib import Path

        def test_kinds(toll, tmp_path):
            assert toll.text("hello", "hello world") == 2
            assert toll.tools({tools!r}).claude == toll.tools("tools.json").claude
            toll.skills(Path("skills"))
            toll.call("gpt-6.2-sol", system="Be brief.", messages=[{{"role": "user", "content": "hi"}}])
            toll.transcripts("transcripts", cache=tmp_path / "cache")
            assert [record.source for record in toll.records] == [
                "text", "tools", "tools", "skills", "call", "transcripts"
            ]
            assert toll.total == sum(record.tokens for record in toll.records)
        """
    )
    result = run(pytester, "--toll", "--toll-update", "--toll-json", "toll.json")
    result.assert_outcomes(passed=1)
    entry = json.loads((pytester.path / "toll.json").read_text())["entries"][0]
    assert entry["name"] == "test_kinds.py::test_kinds"
    assert [part["name"] for part in entry["parts"]] == [
        "hello",
        "tools",
        "tools.json",
        "skills",
        "call gpt-6.2-sol",
        "transcripts",
    ]
    assert entry["parts"][0]["measured"] == 2
    assert entry["parts"][-1]["measured"] == 1215
    assert entry["measured"] == sum(part["measured"] for part in entry["parts"])


def test_per_test_totals_reach_junit_xml(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_junit="""
        def test_a(toll):
            toll.text("a", "one two three")
        """
    )
    run(pytester, "--junitxml", "junit.xml").assert_outcomes(passed=1)
    assert '<property name="toll_tokens" value="3" />' in (pytester.path / "junit.xml").read_text()


def test_toll_call_uses_the_models_the_ledger_adds(pytester: pytest.Pytester) -> None:
    (pytester.path / "toll.yaml").write_text(
        "models:\n  house-model: {provider: openai, window: 64000, prices: {input: 2.0}}\n"
    )
    pytester.makepyfile(
        test_call="""
        def test_call(toll):
            report = toll.call("house-model", messages=[{"role": "user", "content": "hi"}])
            assert report.window == 64000
            assert report.total.cost_usd == report.total.tokens * 2.0 / 1e6
        """
    )
    run(pytester, "--toll").assert_outcomes(passed=1)
    (pytester.path / "toll.yaml").write_text("models:\n  house-model: {window: 64000}\n")
    broken = run(pytester, "--toll")
    assert broken.ret == pytest.ExitCode.USAGE_ERROR
    broken.stderr.fnmatch_lines([f"*{pytester.path / 'toll.yaml'}:1: models.house-model*"])


def test_toll_call_measures_a_model_nobody_catalogued(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_call="""
        def test_call(toll):
            report = toll.call("my-local-llm", messages=[{"role": "user", "content": "hi"}])
            assert (report.provider, report.window, report.total.cost_usd) == ("unknown", None, None)
            assert not report.scale.measured and report.scale.factor == 1.0
            assert "cost_usd" not in report.as_dict()["total"]
            assert report.notes[0].startswith("my-local-llm is not in the catalogue")
            assert toll.total == report.total.tokens
        """
    )
    (pytester.path / "toll.yaml").write_text("version: 1\n")  # --toll needs a ledger
    run(pytester, "--toll").assert_outcomes(passed=1)


def test_a_call_is_pinned_part_by_part_and_gated_on_its_total(pytester: pytest.Pytester) -> None:
    system = "You answer questions about the user's notes. Be brief."
    messages = [{"role": "user", "content": "What did I write about the release?"}]
    tools = [
        {"name": "search_notes", "description": "Search notes.", "inputSchema": {"type": "object"}}
    ]
    (pytester.path / "system.md").write_text(system)
    (pytester.path / "messages.json").write_text(json.dumps(messages))
    (pytester.path / "tools.json").write_text(json.dumps(tools))
    ledger = pytester.path / "toll.yaml"
    ledger.write_text(
        "model: gpt-6.2-sol\n"
        "calls:\n"
        "  support:  # the first turn of a support chat\n"
        "    system: system.md\n"
        "    messages: messages.json\n"
        "    tools: tools.json\n"
        "    budget: 500\n"
    )
    expected = measure("gpt-6.2-sol", system, messages, tools)
    parts = {
        name: expected.parts[name].tokens for name in ("messages", "system", "skills", "tools")
    }
    run(pytester, "--toll", "--toll-update").assert_outcomes(passed=1)
    assert ledger.read_text() == (
        "model: gpt-6.2-sol\n"
        "calls:\n"
        "  support:  # the first turn of a support chat\n"
        "    system: system.md\n"
        "    messages: messages.json\n"
        "    tools: tools.json\n"
        "    budget: 500\n"
        f"    pin: {expected.total.tokens}\n"
        "    parts:\n" + "".join(f"      {name}: {tokens}\n" for name, tokens in parts.items())
    )
    (pytester.path / "system.md").write_text(system + " Cite the note you used.")
    regressed = run(pytester, "--toll")
    regressed.assert_outcomes(failed=1)
    regressed.stdout.fnmatch_lines(
        ["*_ calls::support _*", "regressed by * tok against the pin*", "*system*"]
    )
