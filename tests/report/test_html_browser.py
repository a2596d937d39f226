"""The HTML page in a real headless chromium: the demo's page, and the pages of three verbs."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_toll.gate.ledger import load_ledger
from tests.cli import run_toll as toll
from tests.report.headless_chromium import load, screenshot, svg_texts

pytestmark = pytest.mark.slow

DEMO = Path(__file__).parents[2] / "examples" / "demo"


@pytest.fixture(scope="module")
def demo_page(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``pytest --toll --toll-html`` run on a copy of the demo."""
    root = tmp_path_factory.mktemp("demo")
    demo = root / "demo"
    shutil.copytree(DEMO, demo)
    page = root / "page.html"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--toll",
            f"--toll-html={page}",
            "-p",
            "no:cacheprovider",
            "-q",
        ],
        cwd=demo,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return page


def test_the_demo_page_names_every_tool_and_skill_in_svg_with_no_error_and_no_request(
    demo_page: Path, tmp_path: Path
) -> None:
    loaded = load(demo_page, tmp_path)
    assert loaded.console == []
    assert loaded.page_requests == []
    ledger = load_ledger(DEMO / "toll.yaml").data
    tools = list(ledger["servers"]["notes"]["tools"])
    skills = list(ledger["skills"])
    assert len(tools) == 4 and len(skills) == 2
    texts = svg_texts(loaded.dom)
    for name in [*tools, *skills]:
        assert name in texts, f"{name} is not named inside an SVG"
    # The sorting script ran: it is the only script, and the console stayed silent.
    assert 'class="sortable"' in loaded.dom
    assert "What changed in this run" in loaded.dom


@pytest.mark.parametrize(("width", "height"), [(1280, 2400), (390, 844)])
def test_screenshots_at_desktop_and_phone_width(
    demo_page: Path, tmp_path: Path, width: int, height: int
) -> None:
    out = tmp_path / f"demo-{width}.png"
    assert screenshot(demo_page, out, width, height, tmp_path) == (width, height)
    # A blank page compresses to almost nothing; a drawn one does not.
    assert out.stat().st_size > 20_000


def test_the_verbs_pages_load_clean(tmp_path: Path) -> None:
    pages = {
        "weigh": ["weigh", "--tools", str(tmp_path / "tools.json")],
        "skills": ["skills", "skills"],
        "scan": ["scan", "--root", "transcripts"],
    }
    (tmp_path / "tools.json").write_text(
        '[{"name": "look_up", "description": "Find a <b>record</b> & return it.", '
        '"inputSchema": {"type": "object", "properties": {"id": {"type": "string"}}}}]',
        encoding="utf-8",
    )
    expected = {"weigh": ["look_up"], "skills": ["release-notes", "incident-review"], "scan": []}
    for verb, args in pages.items():
        page = tmp_path / f"{verb}.html"
        done = toll(*args, "--html", str(page), cwd=DEMO)
        assert done.returncode == 0, done.stderr
        loaded = load(page, tmp_path / verb)
        assert loaded.console == [], verb
        assert loaded.page_requests == [], verb
        texts = svg_texts(loaded.dom)
        for name in expected[verb]:
            assert name in texts, (verb, name)
        if verb == "scan":
            assert "Read" in texts and "$ git log" in texts


def test_the_checks_catch_a_console_error_and_an_outside_request(tmp_path: Path) -> None:
    """A control: the same loader on a page that logs and fetches sees both."""
    page = tmp_path / "bad.html"
    page.write_text(
        '<!DOCTYPE html><html><body><img src="http://127.0.0.1:9/x.png">'
        '<script>console.error("boom")</script></body></html>',
        encoding="utf-8",
    )
    loaded = load(page, tmp_path)
    assert any('"boom"' in line for line in loaded.console)
    assert "http://127.0.0.1:9/x.png" in loaded.page_requests


# Written into the page by the test page's own script: every treemap label's rendered width
# against the width its tile leaves it, as chromium lays the text out.
_MEASURE = """
var rows = [];
document.querySelectorAll("svg.treemap g.tile").forEach(function (tile) {
  var box = tile.querySelector("rect:not(clipPath rect)");
  var width = parseFloat(box.getAttribute("width"));
  tile.querySelectorAll("tspan").forEach(function (span) {
    rows.push([span.textContent, span.getComputedTextLength(), width - 5]);
  });
});
var out = document.createElement("pre");
out.id = "measured";
out.textContent = JSON.stringify(rows);
document.body.appendChild(out);
"""


def test_treemap_labels_fit_their_tiles_in_a_real_browser(tmp_path: Path) -> None:
    import html
    import json
    import re

    from pytest_toll.report.html import render_page

    names = [
        "get_customer_invoice_history_with_line_items_and_taxes",
        "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
        "search",
        "list_all_the_things_in_the_workspace_recursively",
        "x",
        "mmmmmmmmmmmmmmmmmmmmmmmmm",
    ]
    tools = [
        {"name": name, "tokens": tokens, "description_tokens": 1, "schema_tokens": 1}
        for name, tokens in zip(names, [900, 420, 300, 120, 40, 15])
    ]
    report = {"target": "wide", "tools": tools, "totals": {"claude": 1795}, "framing": 10}
    page = render_page("labels", tools=[report]).replace(
        "</body>", f"<script>{_MEASURE}</script></body>"
    )
    path = tmp_path / "labels.html"
    path.write_text(page, encoding="utf-8")
    loaded = load(path, tmp_path / "profile")
    assert loaded.console == []
    found = re.search(r'<pre id="measured">(.*?)</pre>', loaded.dom, re.S)
    assert found is not None, "the measuring script did not run"
    rows = json.loads(html.unescape(found.group(1)))
    assert len(rows) >= 6  # the large tiles show a name and a value
    for text, rendered, room in rows:
        assert rendered <= room, (text, rendered, room)
    shown = [text for text, _, _ in rows]
    assert "search" in shown  # a short name fits whole
    assert any(text.endswith("…") for text in shown)  # a long one is cut to its tile


# Written into the page by the test: for every bar chart, where its label ends, where its bar
# starts and where its value starts, as chromium lays them out (issue #36 item 9).
_MEASURE_BARS = """
var rows = [];
document.querySelectorAll("svg.chart.bar").forEach(function (svg) {
  var texts = svg.querySelectorAll("text");
  var label = texts[0].getBBox();
  var bar = parseFloat(svg.querySelector("rect").getAttribute("x"));
  var value = texts[texts.length - 1].getBBox();
  rows.push([texts[0].textContent, label.x + label.width, bar, value.x]);
});
var out = document.createElement("pre");
out.id = "measured";
out.textContent = JSON.stringify(rows);
document.body.appendChild(out);
"""


def test_skill_chart_names_end_before_their_bars_and_values_in_a_real_browser(
    tmp_path: Path,
) -> None:
    import html
    import json
    import re

    from pytest_toll.report.html import render_page, skills_section

    names = [
        "building-production-ready-data-pipelines-with-incremental-backfills",
        "WWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWWW",
        "pdf",
        "mmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmmm",
    ]
    levels = {"metadata": 40.0, "body": 900.0, "references": 300.0}
    chart = skills_section([(name, levels) for name in names])
    page = render_page("skills").replace(
        "</body>", f"{chart}<script>{_MEASURE_BARS}</script></body>"
    )
    path = tmp_path / "skills.html"
    path.write_text(page, encoding="utf-8")
    loaded = load(path, tmp_path / "profile")
    assert loaded.console == []
    found = re.search(r'<pre id="measured">(.*?)</pre>', loaded.dom, re.S)
    assert found is not None, "the measuring script did not run"
    rows = json.loads(html.unescape(found.group(1)))
    assert len(rows) == len(names)
    for text, label_end, bar_start, value_start in rows:
        assert label_end < bar_start, (text, label_end, bar_start)
        assert label_end < value_start, (text, label_end, value_start)
    shown = [row[0] for row in rows]
    assert "pdf" in shown and sum(text.endswith("…") for text in shown) == 3
