"""Markdown, annotations, SARIF and badge files rendered from a session report dict."""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_toll.report import github, github_run, markdown, outputs, sarif
from pytest_toll.report.data import (
    SCHEMA_PATH,
    EntryResult,
    PartResult,
    ReportDict,
    SessionReport,
)


def fixture_report() -> ReportDict:
    """A run with one of each interesting outcome, built by the plugin's own report classes."""
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    report.add(
        [
            EntryResult(
                "servers", "notes", "toll.yaml::servers::notes", 7, 1024, "o200k", 1000, 4000,
                "regressed", failed=True, message="regressed by 24 tok above the pin",
                parts=[
                    PartResult("search_notes", 324, 300),
                    PartResult("read_note", 200, 200),
                    PartResult("framing", 12, 12),
                ],
            ),
            EntryResult(
                "skills", "release-notes", "toll.yaml::skills::release-notes", 12, 290, "o200k",
                300, None, "improved",
                parts=[PartResult("metadata", 50, 60), PartResult("body", 240, 240)],
                findings=[
                    {
                        "rule": "S102",
                        "severity": "warn",
                        "subject": "release-notes",
                        "message": "description never says when to use",
                    }
                ],
            ),
            EntryResult(
                "tests", "tests/test_prompts.py::test_support",
                "tests/test_prompts.py::test_support", 20, 5200, "o200k", 5000, 5100,
                "over_budget", failed=True, message="5,200 tok is over the budget of 5,100",
            ),
            EntryResult(
                "servers", "down", "toll.yaml::servers::down", 10, None, None, 800, None, "error",
                failed=True, message="server exited before answering initialize",
            ),
        ]
    )  # fmt: skip
    data = report.as_dict()
    jsonschema.validate(data, json.loads(SCHEMA_PATH.read_text(encoding="utf-8")))
    return data


EXPECTED_MARKDOWN = """\
## pytest-toll: context cost

❌ **Gate failed** · 4 entries: 3 failed, 1 passed (1 improved, 1 regressed, 1 over budget, 1 error)

Fixed cost per request (server definitions + skill metadata): **≥ 1,074 tok (o200k)**, ~0.11% of a 1,000,000-token window (servers::down could not be measured).

| | entry | measured | pin | budget | change | method |
|---|---|--:|--:|--:|--:|---|
| ❌ error | servers::down | - | 800 | - | - | - |
| ❌ over budget | tests::tests/test\\_prompts.py::test\\_support | 5,200 | 5,000 | 5,100 | +200 | o200k |
| ❌ regressed | servers::notes | 1,024 | 1,000 | 4,000 | +24 | o200k |
| ⬇️ improved | skills::release-notes | 290 | 300 | - | -10 | o200k |

### Changes against the pins

- **tests::tests/test\\_prompts.py::test\\_support**: 5,000 → 5,200 (+200)
- **servers::notes**: 1,000 → 1,024 (+24) · search\\_notes 300 → 324 (+24)
- **skills::release-notes**: 300 → 290 (-10) · metadata 60 → 50 (-10) · ratchet with `pytest --toll --toll-update`

### Findings

| severity | rule | entry | subject | message |
|---|---|---|---|---|
| ⚠️ warn | S102 | skills::release-notes | release-notes | description never says when to use |

Improved by 10 tok: ratchet with `pytest --toll --toll-update`.
"""


def test_markdown_is_exact_and_worst_first() -> None:
    assert markdown.render(fixture_report()) == EXPECTED_MARKDOWN


def test_markdown_for_a_passing_run() -> None:
    report = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0)
    report.add(
        [
            EntryResult(
                "servers",
                "notes",
                "toll.yaml::servers::notes",
                3,
                812,
                "o200k",
                812,
                2000,
                "passed",
            )
        ]
    )
    assert markdown.render(report.as_dict()) == (
        "## pytest-toll: context cost\n\n✅ **Gate passed** · 1 entry: 1 passed (1 ok)\n\n"
        "Fixed cost per request (server definitions + skill metadata): **812 tok (o200k)**, "
        "~0.41% of a 200,000-token window.\n\n"
        "| | entry | measured | pin | budget | change | method |\n"
        "|---|---|--:|--:|--:|--:|---|\n"
        "| ✅ ok | servers::notes | 812 | 812 | 2,000 | 0 | o200k |\n"
    )


def test_hostile_names_cannot_become_markup() -> None:
    report = SessionReport(ledger="toll.yaml", window=1000, tolerance=0)
    report.add(
        [
            EntryResult(
                "servers", "x|y [link](http://e) <img src=x> @team\n# h", "n", 1, 5, "o200k", 5,
                None, "passed",
            )
        ]
    )  # fmt: skip
    row = markdown.render(report.as_dict()).splitlines()[-1]
    assert row == (
        "| ✅ ok | servers::x\\|y \\[link\\](http\\://e) \\<img src=x\\> @\u2060team \\# h "
        "| 5 | 5 | - | 0 | o200k |"
    )


@pytest.mark.parametrize("limit", [0, 40, 300, 700, 1100, 1500, 4000])
def test_markdown_stays_within_a_byte_limit(limit: int) -> None:
    text = markdown.render(fixture_report(), limit)
    assert len(text.encode("utf-8")) <= limit


def test_cut_markdown_keeps_the_worst_rows_and_says_what_was_left_out() -> None:
    text = markdown.render(fixture_report(), 1142)
    assert "| ❌ regressed | servers::notes |" in text
    assert "improved | skills" not in text
    assert (
        "_1 more entry row left out to stay within 1,142 bytes; the terminal summary and "
        "`--toll-json` have them all._"
    ) in text
    assert "_1 finding left out to stay within 1,142 bytes" in text


def test_many_long_entries_fit_under_the_step_summary_limit() -> None:
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    report.add(
        EntryResult("tests", f"tests/test_many.py::test_{index}" + "x" * 1000, "n", None,
                    index, "o200k", index, None, "passed")
        for index in range(1200)
    )  # fmt: skip
    text = markdown.render(report.as_dict(), 1024 * 1024)
    assert len(text.encode("utf-8")) <= 1024 * 1024
    assert "more entry rows left out to stay within 1,048,576 bytes" in text


EXPECTED_ANNOTATIONS = [
    "::error file=toll.yaml,line=10,title=toll%3A servers%3A%3Adown could not measure"
    "::server exited before answering initialize",
    "::error file=toll.yaml,line=20,title=toll%3A tests%3A%3Atests/test_prompts.py%3A%3Atest_support"
    " over budget::5,200 tok is over the budget of 5,100%0A"
    "measured 5,200 tok (o200k), pin 5,000, budget 5,100, change +200",
    "::error file=toll.yaml,line=7,title=toll%3A servers%3A%3Anotes regressed"
    "::regressed by 24 tok above the pin%0Ameasured 1,024 tok (o200k), pin 1,000, budget 4,000, "
    "change +24%0Asearch_notes: 300 → 324 (+24)",
    "::warning file=toll.yaml,line=12,title=toll%3A skills%3A%3Arelease-notes S102"
    "::release-notes: description never says when to use",
    "::notice file=toll.yaml,line=12,title=toll%3A skills%3A%3Arelease-notes improved"
    "::improved by 10 tok — ratchet with pytest --toll --toll-update",
]


def test_annotations_point_at_the_ledger_line_worst_first() -> None:
    lines = github.render_annotations(github_run.entry_annotations(fixture_report(), "toll.yaml"))
    assert lines == EXPECTED_ANNOTATIONS


def test_sarif_results_carry_rule_level_and_ledger_line() -> None:
    log = sarif.render(fixture_report(), "examples/demo/toll.yaml")
    assert log["version"] == "2.1.0"
    run = log["runs"][0]
    assert [rule["id"] for rule in run["tool"]["driver"]["rules"]] == [
        "S102",
        "toll/error",
        "toll/over-budget",
        "toll/regressed",
    ]
    summary = [
        (result["ruleId"], result["level"],
         result["locations"][0]["physicalLocation"]["region"]["startLine"])
        for result in run["results"]
    ]  # fmt: skip
    assert summary == [
        ("toll/regressed", "error", 7),
        ("toll/error", "error", 10),
        ("S102", "warning", 12),
        ("toll/over-budget", "error", 20),
    ]
    first = run["results"][0]
    assert first["message"]["text"] == "servers::notes: regressed by 24 tok above the pin"
    assert first["locations"][0]["physicalLocation"]["artifactLocation"] == {
        "uri": "examples/demo/toll.yaml",
        "uriBaseId": "%SRCROOT%",
    }


def test_write_outputs_writes_every_file_and_github_output(tmp_path: Path) -> None:
    report = fixture_report()
    ledger = tmp_path / "repo" / "toll.yaml"
    ledger.parent.mkdir()
    ledger.write_text("version: 1\n")
    summary = tmp_path / "step-summary.md"
    summary.write_text("## earlier step output\n")
    stream = io.StringIO()
    warnings: list[str] = []
    outputs.write_outputs(
        report,
        {
            "markdown": tmp_path / "out" / "toll.md",
            "badge": tmp_path / "out" / "badge.svg",
            "sarif": tmp_path / "out" / "toll.sarif",
        },
        github=True,
        ledger_path=ledger,
        warn=warnings.append,
        stream=stream,
        environ={"GITHUB_WORKSPACE": str(tmp_path / "repo"), "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert warnings == []
    assert (tmp_path / "out" / "toll.md").read_text(encoding="utf-8") == EXPECTED_MARKDOWN
    # A blank line between: ours starts a block of its own, whatever the earlier step left.
    assert summary.read_text(encoding="utf-8") == "## earlier step output\n\n" + EXPECTED_MARKDOWN
    assert stream.getvalue() == "\n" + "\n".join(EXPECTED_ANNOTATIONS) + "\n"
    svg = (tmp_path / "out" / "badge.svg").read_text(encoding="utf-8")
    # A server could not be measured: the badge says so instead of a number that leaves it
    # out; red, the gate failed.
    assert ">error</text>" in svg and 'fill="#e05d44"' in svg
    assert json.loads((tmp_path / "out" / "badge.json").read_text(encoding="utf-8")) == {
        "schemaVersion": 1,
        "label": "context cost",
        "message": "error",
        "color": "red",
    }
    log = json.loads((tmp_path / "out" / "toll.sarif").read_text(encoding="utf-8"))
    assert len(log["runs"][0]["results"]) == 4


def test_without_github_nothing_is_printed(tmp_path: Path) -> None:
    stream = io.StringIO()
    outputs.write_outputs(
        fixture_report(), {}, github=False,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, stream=stream, environ={},
    )  # fmt: skip
    assert stream.getvalue() == ""


def test_an_unwritable_path_is_a_warning_not_an_exception(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    warnings: list[str] = []
    outputs.write_outputs(
        fixture_report(), {"markdown": blocker / "toll.md"}, github=False,
        ledger_path=tmp_path / "toll.yaml", warn=warnings.append, environ={},
    )  # fmt: skip
    assert len(warnings) == 1
    assert warnings[0].startswith(f"pytest-toll: could not write the Markdown report {blocker}")


def test_the_step_summary_respects_what_other_steps_left(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"x" * (1024 * 1024 - 900))
    outputs.write_outputs(
        fixture_report(), {}, github=True,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, stream=io.StringIO(),
        environ={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert summary.stat().st_size <= 1024 * 1024
    # 900 bytes free, less the two newlines that end the other step's last line and leave a
    # blank line before ours.
    assert "left out to stay within 898 bytes" in summary.read_text(encoding="utf-8")


def test_badge_path_given_as_json_puts_the_svg_beside_it(tmp_path: Path) -> None:
    outputs.write_outputs(
        fixture_report(), {"badge": tmp_path / "cost.json"}, github=False,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, environ={},
    )  # fmt: skip
    assert sorted(path.name for path in tmp_path.iterdir()) == ["cost.json", "cost.svg"]


@given(st.text())
def test_escaped_text_is_one_line_with_no_live_markup(value: str) -> None:
    escaped = markdown.text(value)
    assert "\n" not in escaped and "\r" not in escaped
    unescaped_markup = re.findall(r"(?<!\\)(?:\\\\)*[|<>\[\]`*_]", escaped)
    assert unescaped_markup == []
    assert re.search(r"@(?!\u2060)", escaped) is None


def test_hostile_finding_stays_one_annotation() -> None:
    report = SessionReport(ledger="toll.yaml", window=1000, tolerance=0)
    report.add(
        [
            EntryResult(
                "servers", "evil,name:x", "n", 4, 5, "o200k", 5, None, "passed", failed=True,
                findings=[
                    {
                        "rule": "E121",
                        "severity": "error",
                        "subject": "tool::one",
                        "message": "100% empty\n::error::forged",
                        "hint": "write one, sentence",
                    }
                ],
            )
        ]
    )  # fmt: skip
    lines = github.render_annotations(
        github_run.entry_annotations(report.as_dict(), "a,b:toll.yaml")
    )
    assert lines == [
        "::error file=a%2Cb%3Atoll.yaml,line=4,title=toll%3A servers%3A%3Aevil%2Cname%3Ax failed"
        "::measured 5 tok (o200k), pin 5, budget -, change 0",
        "::error file=a%2Cb%3Atoll.yaml,line=4,title=toll%3A servers%3A%3Aevil%2Cname%3Ax E121"
        # A line break in a message is no line of the annotation (issue #34).
        "::tool::one: 100%25 empty\\n::error::forged%0Ahint: write one, sentence",
    ]


def test_a_clean_run_prints_no_workflow_commands(tmp_path: Path) -> None:
    report = SessionReport(ledger="toll.yaml", window=1000, tolerance=0)
    report.add([EntryResult("servers", "a", "n", 3, 5, "o200k", 5, None, "passed")])
    stream = io.StringIO()
    outputs.write_outputs(
        report.as_dict(), {}, github=True,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, stream=stream, environ={},
    )  # fmt: skip
    assert stream.getvalue() == ""


def test_markdown_for_an_empty_run() -> None:
    report = SessionReport(ledger="toll.yaml", window=1000, tolerance=0)
    assert markdown.render(report.as_dict()) == (
        "## pytest-toll: context cost\n\n✅ **Gate passed**\n\n"
        "Fixed cost per request (server definitions + skill metadata): **0 tok (o200k)**, "
        "~0.00% of a 1,000-token window.\n\nNo ledger entries or measured tests.\n"
    )


def test_a_test_missing_from_the_ledger_is_annotated_at_its_file(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_agent.py").write_text("")
    report = SessionReport(ledger="toll.yaml", window=1000, tolerance=0)
    nodeid = "tests/test_agent.py::test_prompt"
    report.add(
        [
            EntryResult("tests", nodeid, nodeid, None, 700, "o200k", None, 600, "over_budget",
                        failed=True, message="700 tok is over the budget of 600"),
            EntryResult("transcripts", "transcripts", "toll.yaml::transcripts", 12, 90, "o200k",
                        None, None, "error", failed=True, message="no transcripts found"),
        ]
    )  # fmt: skip
    stream = io.StringIO()
    outputs.write_outputs(
        report.as_dict(), {}, github=True,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, stream=stream,
        environ={"GITHUB_WORKSPACE": str(tmp_path)},
    )  # fmt: skip
    assert stream.getvalue().splitlines()[1:] == [
        "::error file=toll.yaml,line=12,title=toll%3A transcripts could not measure"
        "::no transcripts found",
        "::error file=tests/test_agent.py,title=toll%3A tests%3A%3Atests/test_agent.py%3A%3A"
        "test_prompt over budget::700 tok is over the budget of 600%0A"
        "measured 700 tok (o200k), pin -, budget 600, change -",
    ]


_names = st.text(min_size=1, max_size=40)
_counts = st.none() | st.integers(min_value=0, max_value=10**7)


@st.composite
def reports(draw: st.DrawFn) -> ReportDict:
    report = SessionReport(ledger="toll.yaml", window=draw(st.integers(1, 10**7)), tolerance=0)
    outcomes = ("passed", "improved", "regressed", "over_budget", "error", "new", "stale")
    for index in range(draw(st.integers(0, 12))):
        report.add(
            [
                EntryResult(
                    draw(st.sampled_from(("servers", "skills", "tests", "transcripts"))),
                    draw(_names), f"n{index}", draw(st.none() | st.integers(1, 999)),
                    draw(_counts), "o200k", draw(_counts), draw(_counts),
                    draw(st.sampled_from(outcomes)), failed=draw(st.booleans()),
                    message=draw(st.text(max_size=40)),
                    findings=[
                        {"rule": "E121", "severity": draw(st.sampled_from(("error", "warn", "info"))),
                         "subject": draw(st.none() | _names), "message": draw(st.text(max_size=40))}
                        for _ in range(draw(st.integers(0, 2)))
                    ],
                    parts=[PartResult(draw(_names), draw(_counts), draw(_counts))
                           for _ in range(draw(st.integers(0, 3)))],
                )
            ]
        )  # fmt: skip
    return report.as_dict()


def _cells(row: str) -> int:
    return len(re.findall(r"(?<!\\)(?:\\\\)*\|", row))


@given(reports(), st.none() | st.integers(min_value=0, max_value=6000))
def test_any_report_renders_within_its_limit_with_whole_table_rows(
    report: ReportDict, limit: int | None
) -> None:
    text = markdown.render(report, limit)
    if limit is not None:
        assert len(text.encode("utf-8")) <= limit
    for line in text.splitlines():
        if line.startswith("|"):  # entry rows have 7 cells, finding rows 5: no stray pipes
            assert _cells(line) in (8, 6), line
    lines = github_lines(report)
    assert all(line.startswith("::") and "\n" not in line for line in lines)
    assert sum(line.startswith("::error") for line in lines) <= 10
    assert sum(line.startswith("::warning") for line in lines) <= 10
    assert sum(line.startswith("::notice") for line in lines) <= 10


def github_lines(report: ReportDict) -> list[str]:
    return github.render_annotations(github_run.entry_annotations(report, "toll.yaml"))


def test_one_tally_in_the_terminal_markdown_and_html() -> None:
    # Issue #25: one run read "14 passed" / "2 failing · 14 passed" / "2 failed, 12 passed".
    from pytest_toll.report.data import tally_of
    from pytest_toll.report.html import render_page
    from pytest_toll.report.terminal import tally_line

    data = fixture_report()
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    report.add(
        [
            EntryResult(
                str(entry["kind"]), str(entry["name"]), str(entry["nodeid"]), 1,
                entry.get("measured"), entry.get("method"), entry.get("pin"),
                entry.get("budget"), entry["outcome"], failed=bool(entry.get("failed")),
            )
            for entry in data["entries"]
        ]
    )  # fmt: skip
    expected = "4 entries: 3 failed, 1 passed (1 improved, 1 regressed, 1 over budget, 1 error)"
    assert tally_line(report) == tally_of(data) == tally_of(report.as_dict()) == expected
    assert f"❌ **Gate failed** · {expected}" in markdown.render(data)
    page = render_page("toll", session=data)
    assert f"FAILED</span> — {expected}</p>" in page
