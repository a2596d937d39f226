"""The HTML renderer as a pure function: escaping, self-containment, order, treemap areas."""

from __future__ import annotations

import re

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
