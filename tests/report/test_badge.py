"""The context-cost badge: exact SVG, colours by threshold, the shields.io endpoint JSON."""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import pytest

from pytest_toll.report import badge

EXPECTED_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" width="190" height="20" role="img" '
    'aria-label="context cost: 3,712 tok (o200k)"><title>context cost: 3,712 tok (o200k)</title>'
    '<linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" '
    'stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient>'
    '<clipPath id="r"><rect width="190" height="20" rx="3" fill="#fff"/></clipPath>'
    '<g clip-path="url(#r)"><rect width="80" height="20" fill="#555"/>'
    '<rect x="80" width="110" height="20" fill="#97ca00"/>'
    '<rect width="190" height="20" fill="url(#s)"/></g>'
    '<g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" '
    'font-size="11"><text x="40" y="15" fill="#010101" fill-opacity=".3">context cost</text>'
    '<text x="40" y="14">context cost</text>'
    '<text x="135" y="15" fill="#010101" fill-opacity=".3">3,712 tok (o200k)</text>'
    '<text x="135" y="14">3,712 tok (o200k)</text></g></svg>\n'
)


def test_svg_is_exact_and_well_formed() -> None:
    svg = badge.make_badge(3712).svg()
    assert svg == EXPECTED_SVG
    root = ElementTree.fromstring(svg)
    assert root.tag == "{http://www.w3.org/2000/svg}svg"


def test_endpoint_json_is_the_shields_shape() -> None:
    assert badge.make_badge(3712).endpoint() == {
        "schemaVersion": 1,
        "label": "context cost",
        "message": "3,712 tok (o200k)",
        "color": "green",
    }


@pytest.mark.parametrize(
    ("tokens", "failed", "color"),
    [
        (0, False, "brightgreen"),
        (2_000, False, "brightgreen"),
        (2_001, False, "green"),
        (10_000, False, "green"),
        (10_001, False, "yellow"),
        (25_000, False, "yellow"),
        (25_001, False, "orange"),
        (100, True, "red"),
        (None, False, "lightgrey"),
    ],
)
def test_colour_by_threshold(tokens: int | None, failed: bool, color: str) -> None:
    assert badge.badge_color(tokens, failed=failed) == color


def test_custom_thresholds() -> None:
    assert badge.badge_color(600, thresholds=((500, "green"),)) == "orange"
    assert badge.badge_color(500, thresholds=((500, "green"),)) == "green"


def test_unknown_when_nothing_was_measured() -> None:
    made = badge.make_badge(None)
    assert made.message == "unknown"
    assert 'fill="#9f9f9f"' in made.svg()


def test_text_is_escaped_and_width_follows_the_text() -> None:
    hostile = badge.Badge('a<b & "c"', "1 tok", "green").svg()
    root = ElementTree.fromstring(hostile)  # still well-formed XML
    assert root.attrib["aria-label"] == 'a<b & "c": 1 tok'
    narrow = badge.Badge("context cost", "1 tok (o200k)", "green").svg()
    wide = badge.Badge("context cost", "1,000,000 tok (o200k)", "green").svg()
    width = ElementTree.fromstring(wide).attrib["width"]
    assert int(width) > int(ElementTree.fromstring(narrow).attrib["width"])
