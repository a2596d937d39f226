"""Issue #36 item 9: in the HTML skills chart a long skill name never runs into the bar or
its value: the label is cut to its column, measured with the page's own font metrics
(``svg.text_width``, which tests/report/test_html_browser.py holds against chromium), and the
full name stays in a tooltip."""

from __future__ import annotations

import re
from html import unescape

from pytest_toll.report.svg import stacked_bar, text_width

LONG = "building-production-ready-data-pipelines-with-incremental-backfills"
SEGMENTS = [("metadata", 40.0, "#111"), ("body", 900.0, "#222"), ("references", 0.0, "#333")]


def label_and_bar(svg: str) -> tuple[str, float, float, str]:
    """The label's text, its font size, where the bar starts, and the label's tooltip."""
    label = re.search(
        r'<text x="0" y="21" font-size="([\d.]+)">(?:<title>(.*?)</title>)?(.*?)</text>', svg
    )
    assert label, svg
    first_rect = re.search(r'<rect x="([\d.]+)"', svg)
    assert first_rect
    return (
        unescape(label.group(3)),
        float(label.group(1)),
        float(first_rect.group(1)),
        unescape(label.group(2) or ""),
    )


def test_a_long_name_is_cut_before_the_bar_and_named_in_full_in_its_tooltip() -> None:
    shown, size, bar_x, tooltip = label_and_bar(stacked_bar(LONG, SEGMENTS, 1000.0))
    assert shown != LONG and shown.endswith("…")
    assert LONG.startswith(shown[:-1])
    assert text_width(shown, size) < bar_x - 4  # a gap before the bar
    assert tooltip == LONG


def test_a_short_name_is_shown_whole() -> None:
    shown, size, bar_x, _ = label_and_bar(stacked_bar("pdf", SEGMENTS, 1000.0))
    assert shown == "pdf" and text_width(shown, size) < bar_x
