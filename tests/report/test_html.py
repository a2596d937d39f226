"""The HTML renderer as a pure function: escaping, self-containment, order, treemap areas."""

from __future__ import annotations

import re
from typing import Any, cast

import pytest

from pytest_toll.report.data import EntryResult, PartResult, ReportDict, SessionReport
from pytest_toll.report.html import CSP, render_page
from pytest_toll.report.svg import esc, squarify

HOSTILE = '<script>alert("x")</script>&'


def session() -> ReportDict:
    report = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0)
    report.add(
        [
            EntryResult(
                "servers", HOSTILE, "toll.yaml::servers::x", 3, 510, "o200k", 500, 800,
                "regressed", failed=True, message="regressed by 10 tok",
                parts=[PartResult(HOSTILE, 300, 290), PartResult("read", 188, 188)],
            ),
            EntryResult(
                "skills", "pdf", "toll.yaml::skills::pdf", 9, 300, "o200k", 310, None,
                "improved",
                parts=[PartResult("metadata", 40, 40), PartResult("body", 150, 160),
                       PartResult("references", 110, 110)],
            ),
            EntryResult("tests", "t.py::test_a", "t.py::test_a", None, 90, "o200k", 90, 100,
                        "passed"),
        ]
    )  # fmt: skip
    return report.as_dict()


def test_every_text_is_escaped_and_nothing_is_loaded_from_outside() -> None:
    page = render_page(f"report {HOSTILE}", session=session())
    assert "<script>alert" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&amp;" in page
    assert page.count("<script>") == 1  # the sorting script, inline
    assert f'content="{CSP.replace(chr(39), "&#x27;")}"' in page
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:|//)""", page)
    assert "@import" not in page and "url(http" not in page


def test_what_changed_comes_first_worst_first() -> None:
    page = render_page("r", session=session())
    changed = page.index("What changed in this run")
    assert changed < page.index("Fixed cost per request") < page.index("Servers:")
    regressed = page.index("REGRESSED")
    improved = page.index(">improved<")
    assert changed < regressed < improved
    assert "550 tok of a 200,000-token window (~0.27%)" in page


@pytest.mark.parametrize(
    "values", [[164, 142, 85, 79], [1], [500, 1, 1, 1, 1, 1, 300, 2], [7, 7, 7, 7, 7, 7, 7]]
)
def test_treemap_areas_are_proportional_and_tile_the_box(values: list[int]) -> None:
    rects = squarify(values, 640, 300)
    total = sum(values)
    for value, (x, y, w, h) in zip(values, rects):
        assert w * h == pytest.approx(640 * 300 * value / total, rel=1e-6)
        assert x >= -1e-6 and x + w <= 640 + 1e-6 and y >= -1e-6 and y + h <= 300 + 1e-6
    assert sum(w * h for _, _, w, h in rects) == pytest.approx(640 * 300)


def test_a_tools_page_shows_the_description_schema_split_and_findings() -> None:
    tools = {
        "target": "tools.json",
        "method": "o200k",
        "tools": [
            {"name": "look_up", "tokens": 60, "description_tokens": 20, "schema_tokens": 30,
             "output_schema_tokens": 0},
        ],
        "framing": 22,
        "instructions": None,
        "totals": {"raw": 70, "claude": 82, "openai": 75},
        "window": {"size": 1_000_000, "share": 0.000082},
        "findings": [{"rule": "E121", "severity": "warn", "subject": "look_up",
                      "message": "short description"}],
    }  # fmt: skip
    page = render_page("weigh", tools=[tools])
    assert "look_up: 60 tok — description 20, schema 30, output schema 0" in page
    assert page.index("Findings") < page.index("Servers:")
    assert "E121" in page and "short description" in page


def detailed_session() -> ReportDict:
    report = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0)
    report.add(
        [
            EntryResult(
                "servers", "notes", "toll.yaml::servers::notes", 3, 140, "o200k", 140, None,
                "passed", parts=[PartResult("search", 90, 90), PartResult("read", 50, 50)],
                detail={"tools": {
                    "search": {"description": 31, "schema": 44, "output_schema": 0},
                    "read": {"description": 12, "schema": 20, "output_schema": 7},
                }},
            ),
            EntryResult(
                "transcripts", "transcripts", "toll.yaml::transcripts", 9, 1215, "o200k", None,
                None, "passed",
                other_pins=[{"key": "waste_ratio_pin", "measured": 0.0922, "pin": 0.0922}],
                detail={"sessions": 2, "calls": 9, "shapes": [
                    {"shape": "Read *.py", "ok_tokens": 900, "calls": 5, "ok": 4,
                     "by_outcome": {"ok": 4, "error": 1}},
                    {"shape": f"Bash {HOSTILE}", "ok_tokens": 315, "calls": 4,
                     "by_outcome": {"ok": 4}},
                ]},
            ),
        ]
    )  # fmt: skip
    # Results travel between xdist workers and the controller as plain dicts.
    entries = [EntryResult.from_dict(dict(entry)) for entry in report.as_dict()["entries"]]
    again = SessionReport(ledger="toll.yaml", window=200_000, tolerance=0)
    again.add(entries)
    return again.as_dict()


def test_a_session_page_shows_each_tools_split_and_the_transcript_shapes() -> None:
    page = render_page("r", session=detailed_session())
    # The split, in the tile's tooltip and in the table under the treemap.
    assert "search: 90 tok (pin 90, change 0) — description 31, schema 44, output schema 0" in page
    assert '<th>tool</th><th class="n">tokens</th>' in page
    assert '<th class="n">description</th><th class="n">schema</th>' in page
    assert '<td>read</td><td class="n">50</td><td class="n">50</td><td class="n">0</td>' in page
    assert '<td class="n">12</td><td class="n">20</td><td class="n">7</td>' in page
    # The shapes, drawn and tabled by the same code as `toll scan --html`.
    shapes = page.index("<h2>Transcript shapes</h2>")
    assert page.index("<h2>Transcripts</h2>") < shapes
    assert ">Read *.py</text>" in page[shapes:]
    assert "error=1 ok=4" in page or "ok=4 error=1" in page
    assert "9 tool calls in 2 sessions" in page
    assert "<script>alert" not in page and "toll scan --html PAGE" not in page


def test_a_session_report_without_detail_still_renders() -> None:
    page = render_page("r", session=session())
    assert f"{esc(HOSTILE)}: 300 tok (pin 290, change +10)</title>" in page
    assert '<th class="n">description</th>' not in page
    assert "Transcript shapes" not in page


# --- a failing run's page (issue #25, item 11) -------------------------------------------


def failing_session() -> ReportDict:
    """A failing run with the figures that came out as 2.198e+04 before, and findings."""
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    report.add(
        [
            EntryResult(
                "skills", "claude-api", "toll.yaml::skills::claude-api", 4, 21980, "o200k",
                21000, None, "regressed", failed=True,
                message="regressed: references +980 over its pin 20,000",
                parts=[PartResult("metadata", 294, 294), PartResult("body", 1686, 1000),
                       PartResult("references", 20000, 19706)],
                findings=[
                    {"rule": "S106", "severity": "error", "subject": "claude-api",
                     "message": "reference 'scripts/gone.sh' does not exist in the skill folder"},
                    {"rule": "S104", "severity": "warn", "subject": "claude-api",
                     "message": "body is 5,519 tokens, over 5,000",
                     "hint": "move detail into references/ files"},
                    {"rule": "S105", "severity": "info", "subject": "claude-api",
                     "message": "mentions the system prompt"},
                ],
            ),
            EntryResult(
                "skills", "pdf", "toll.yaml::skills::pdf", 9, 300, "o200k", 300, None, "passed",
                parts=[PartResult("metadata", 40, 40)],
                findings=[{"rule": "S102", "severity": "warn", "subject": "pdf",
                           "message": "description never says when to use the skill"}],
            ),
            EntryResult("tests", "t.py::test_a", "t.py::test_a", None, 21980, "o200k",
                        12345, 20000, "over_budget", failed=True,
                        message="21,980 tok is over the budget of 20,000 by 1,980"),
            EntryResult(
                "transcripts", "transcripts", "toll.yaml::transcripts", 30, 0, "o200k", None,
                None, "improved",
                other_pins=[{"key": "waste_ratio_pin", "measured": 0.0000031, "pin": 0.0001}],
            ),
        ]
    )  # fmt: skip
    data = report.as_dict()
    # Figures that reach the page as floats (a report merged from JSON shards, a ratio).
    test: dict[str, Any] = next(
        cast(dict[str, Any], entry) for entry in data["entries"] if entry["kind"] == "tests"
    )
    test.update(measured=21980.0, pin=12345.5, delta=9634.5)
    return data


def test_a_failing_runs_page_has_no_scientific_notation() -> None:
    page = render_page("toll", session=failing_session())
    visible = re.sub(r"<style>.*?</style>|<script>.*?</script>", "", page, flags=re.S)
    assert not re.search(r"\d(?:\.\d+)?e[+-]?\d", visible), re.findall(r"\S*\de[+-]\d\S*", visible)
    assert "21,980" in page and "12,346" in page


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (21980.0, "21,980"),
        (21980.25, "21,980"),
        (1234.5678, "1,235"),
        (0.5, "0.5"),
        (0.0000031, "0.0000031"),
        (1e16, "10,000,000,000,000,000"),
        (-0.25, "-0.25"),
        (float("nan"), "-"),
        (7, "7"),
    ],
)
def test_numbers_are_written_out(value: float, shown: str) -> None:
    from pytest_toll.report.svg import number, signed

    assert number(value) == shown
    assert "e" not in signed(value)


def test_the_findings_section_says_why_each_entry_failed_or_warned() -> None:
    page = render_page("toll", session=failing_session())
    section = page[page.index("Why entries failed or warned") : page.index("Fixed cost")]
    claude = section[section.index("skills::claude-api") : section.index("skills::pdf")]
    assert "FAILED" in section[: section.index("skills::claude-api")]
    assert "above its pin: regressed: references +980 over its pin 20,000" in claude
    assert "does not exist in the skill folder" in claude and "(fails the gate)" in claude
    assert "body is 5,519 tokens" in claude and "(shown, does not fail)" in claude
    assert "S105" not in claude  # info findings are not a reason
    pdf = section[section.index("skills::pdf") :]
    assert (
        "warned" in section[section.index("skills::claude-api") : section.index("skills::pdf") + 50]
    )
    assert "description never says when to use the skill" in pdf
    assert "over its budget: 21,980 tok is over the budget of 20,000 by 1,980" in section
    # Failed entries come first, then the warned one; a clean entry is not listed.
    assert section.index("test_a") < section.index("skills::pdf")
    assert "transcripts" not in section


def test_treemap_labels_are_sized_by_the_tile_and_cut_to_its_width() -> None:
    from pytest_toll.report.svg import Tile, fit_text, label_size, text_width, treemap

    long_name = "get_customer_invoice_history_with_line_items_and_taxes"
    svg = treemap([Tile(long_name, 100, "a"), Tile("ok", 100, "b")], "t", "k", 640, 300)
    sizes = re.findall(r'font-size="([\d.]+)"', svg)
    assert len(sizes) == 2 and sizes[0] == sizes[1]  # equal tiles, equal labels
    assert long_name not in re.sub(r"<title>.*?</title>", "", svg)  # cut to fit...
    assert f"<title>{long_name}</title>" not in svg and "<title>a</title>" in svg
    assert "…" in svg  # ...with an ellipsis
    assert label_size(600, 300) == 16 and label_size(20, 12) == 9
    fitted = fit_text(long_name, 120, 12, bold=True)
    assert fitted.endswith("…") and text_width(fitted, 12, bold=True) <= 120
    assert fit_text("short", 200, 12) == "short"
    assert fit_text(long_name, 10, 12) == ""


def test_a_skill_that_runs_scripts_shows_its_executed_part_apart() -> None:
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    report.add(
        [
            EntryResult(
                "skills", "docx", "toll.yaml::skills::docx", 2, 5687, "o200k", 5687, None,
                "passed",
                parts=[PartResult("metadata", 168, 168), PartResult("body", 5519, 5519),
                       PartResult("references", 0, 0), PartResult("executed", 8195, 8195)],
            )
        ]
    )  # fmt: skip
    page = render_page("toll", session=report.as_dict())
    assert "their source is not loaded: docx 8,195 tok of source" in page
