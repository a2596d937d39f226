"""Inline SVG charts for the HTML page: a treemap, labelled bars, a line chart.

Pure string building, no dependencies. Every text passes through :func:`esc`; every chart
is a ``viewBox`` drawing at 100% width, so it scales from a phone to a wide screen, and
every shape names itself in a ``<title>`` (the tooltip, and what a screen reader reads).
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_toll.core.inert import escaped
from pytest_toll.core.secrets import cut

# Colours with enough contrast for white or dark text; stable per index.
PALETTE = ("#3b6ea8", "#4f9a6b", "#b5762d", "#8a5aa8", "#a84b4b", "#3f8f96", "#7a7a2e", "#6b6b8a")
LEVEL_COLOURS = {"metadata": "#3b6ea8", "body": "#4f9a6b", "references": "#b5762d"}
GOOD, BAD, NEUTRAL = "#2e7d32", "#c62828", "#546e7a"


def esc(value: object) -> str:
    # A float is written as a person reads it, never as str() might (1e+16).
    if isinstance(value, float):
        value = number(value)
    # Third-party text: a bidi control would reorder what the page shows, a line break or
    # ESC is shown as its escape, as in the terminal.
    return html.escape(escaped(str(value)), quote=True)


def number(value: float | None, digits: int = 4) -> str:
    """A number for a reader: whole numbers with thousands separators, other values with
    about ``digits`` significant digits, and never in scientific notation (``2.198e+04`` is
    what ``:g`` wrote for 21,980 on a failing run's page)."""
    if value is None or isinstance(value, bool):
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    if not math.isfinite(value):
        return "-"
    if value.is_integer() and abs(value) >= 1:
        return f"{value:,.0f}"
    magnitude = math.floor(math.log10(abs(value))) if value else 0
    decimals = min(12, max(0, digits - 1 - magnitude))
    text = f"{value:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def signed(value: float | None) -> str:
    """A change with its sign (``+1,204``, ``-0.0031``); ``0`` unchanged, ``-`` unknown."""
    if value is None:
        return "-"
    if not value:
        return "0"
    return ("+" if value > 0 else "") + number(value)


@dataclass(frozen=True)
class Tile:
    """One treemap rectangle: what it is, its size, and its tooltip."""

    label: str
    value: float
    tooltip: str
    x: float = 0.0
    y: float = 0.0
    width: float = 0.0
    height: float = 0.0


def _worst_ratio(row: Sequence[float], side: float) -> float:
    total = sum(row)
    if total <= 0 or side <= 0:
        return float("inf")
    return max(
        max(side * side * value / (total * total), (total * total) / (side * side * value))
        for value in row
        if value > 0
    )


def squarify(values: Sequence[float], width: float, height: float) -> list[tuple[float, ...]]:
    """Rectangles (x, y, w, h) whose areas are proportional to ``values`` (largest first).

    The squarified layout of Bruls, Huizing and van Wijk: rows are laid along the shorter
    side while adding a value keeps their aspect ratios from getting worse.
    """
    total = sum(values)
    if total <= 0:
        return [(0.0, 0.0, 0.0, 0.0) for _ in values]
    scale = width * height / total
    areas = [value * scale for value in values]
    rects: list[tuple[float, ...]] = []
    x, y, w, h = 0.0, 0.0, width, height
    index = 0
    while index < len(areas):
        side = min(w, h)
        row = [areas[index]]
        index += 1
        while index < len(areas) and _worst_ratio([*row, areas[index]], side) <= _worst_ratio(
            row, side
        ):
            row.append(areas[index])
            index += 1
        row_total = sum(row)
        if w >= h:  # a column on the left
            column = row_total / h if h else 0.0
            offset = y
            for area in row:
                tall = area / column if column else 0.0
                rects.append((x, offset, column, tall))
                offset += tall
            x, w = x + column, w - column
        else:  # a row on top
            band = row_total / w if w else 0.0
            offset = x
            for area in row:
                wide = area / band if band else 0.0
                rects.append((offset, y, wide, band))
                offset += wide
            y, h = y + band, h - band
    return rects


#: Space kept between a tile's edge and its label (viewBox units).
TILE_PADDING = 5.0
# How wide characters of the page's sans-serif font are, as a share of the font size: upper
# bounds for the fonts a browser picks for system-ui (DejaVu Sans, the widest common one,
# sets a bold "W" at ~1.1em, lower case at ~0.7em), so a fitted label never runs past its
# tile. tests/report/test_html_browser.py measures them against chromium's own layout.
_CHARACTER_WIDTH = {False: 0.6, True: 0.66}
_WIDE = frozenset("MWmw@%…")
_CAPITAL = 1.3  # capitals and digits against lower case
_WIDEST = 1.75  # M, W, m, w, @, %, … against lower case


def label_size(width: float, height: float) -> float:
    """A tile label's font size, from the tile alone (never from the name it shows): a
    larger tile gets a larger label, up to 16, and a small one no less than 9."""
    return max(9.0, min(16.0, height / 2.6, width / 7))


def text_width(text: str, size: float, *, bold: bool = False) -> float:
    """An upper bound on ``text``'s rendered width at ``size`` (see ``_CHARACTER_WIDTH``)."""
    per = _CHARACTER_WIDTH[bold] * size
    return sum(
        per * (_WIDEST if c in _WIDE else _CAPITAL if c.isupper() or c.isdigit() else 1.0)
        for c in text
    )


def fit_text(text: str, width: float, size: float, *, bold: bool = False) -> str:
    """``text``, or as much of it as fits in ``width`` with an ellipsis; "" when not even
    two characters and the ellipsis fit (the tile's tooltip still names it in full)."""
    if text_width(text, size, bold=bold) <= width:
        return text
    for end in range(len(text) - 1, 1, -1):
        shortened = text[:end].rstrip() + "…"
        if text_width(shortened, size, bold=bold) <= width:
            return shortened
    return ""


def treemap(
    tiles: Sequence[Tile], title: str, key: str, width: int = 640, height: int = 300
) -> str:
    """A treemap of ``tiles`` by value; each tile labelled with its name and value.

    Each label is sized by its tile and cut to the tile's width (``fit_text``); a tile too
    small for a label shows none, and every tile names itself in full in its tooltip.
    ``key`` makes the clip-path ids unique within the page.
    """
    ordered = sorted((tile for tile in tiles if tile.value > 0), key=lambda tile: -tile.value)
    rects = squarify([tile.value for tile in ordered], width, height)
    parts = [
        f'<svg class="chart treemap" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(title)}" preserveAspectRatio="xMidYMid meet">',
        f"<title>{esc(title)}</title>",
    ]
    for index, (tile, (x, y, w, h)) in enumerate(zip(ordered, rects)):
        clip = f"clip-{key}-{index}"
        size = label_size(w, h)
        label = fit_text(tile.label, w - 2 * TILE_PADDING, size, bold=True)
        value = fit_text(f"{number(tile.value)} tok", w - 2 * TILE_PADDING, size)
        text = ""
        if label and h >= size + 2 * TILE_PADDING:
            second = (
                f'<tspan x="{x + TILE_PADDING:.1f}" dy="{size * 1.2:.1f}">{esc(value)}</tspan>'
                if value and h >= size * 2.2 + 2 * TILE_PADDING
                else ""
            )
            text = (
                f'<text clip-path="url(#{clip})" x="{x + TILE_PADDING:.1f}" '
                f'y="{y + size + 3:.1f}" font-size="{size:.1f}" fill="#fff">'
                f'<tspan font-weight="bold">{esc(label)}</tspan>{second}</text>'
            )
        parts.append(
            f'<g class="tile"><title>{esc(tile.tooltip)}</title>'
            f'<clipPath id="{clip}"><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
            f'height="{h:.1f}"/></clipPath>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[index % len(PALETTE)]}" stroke="#fff" stroke-width="2"/>'
            f"{text}</g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def stacked_bar(
    label: str, segments: Sequence[tuple[str, float, str]], scale_max: float, width: int = 640
) -> str:
    """One labelled horizontal bar of coloured segments (name, value, colour)."""
    label_width, bar_width = 180, width - 190
    total = sum(value for _, value, _ in segments)
    # The name is cut to its column (with the page font's widths, upper bounds), so a long
    # one never runs under the bar and its value; the tooltip names it in full.
    shown = fit_text(label, label_width - 8, 13) or label[:1] + "…"
    tooltip = f"<title>{esc(label)}</title>" if shown != label else ""
    parts = [
        f'<svg class="chart bar" viewBox="0 0 {width} 34" role="img" aria-label="{esc(label)}">',
        f'<text x="0" y="21" font-size="13">{tooltip}{esc(shown)}</text>',
    ]
    x = float(label_width)
    for name, value, colour in segments:
        w = bar_width * value / scale_max if scale_max > 0 else 0.0
        parts.append(
            f'<rect x="{x:.1f}" y="6" width="{w:.1f}" height="22" fill="{colour}">'
            f"<title>{esc(label)} · {esc(name)}: {esc(number(value))} tok</title></rect>"
        )
        x += w
    parts.append(
        f'<text x="{min(x + 4, width - 4):.1f}" y="21" font-size="12" '
        f'text-anchor="{"start" if x + 60 < width else "end"}">{esc(number(total))}</text>'
    )
    parts.append("</svg>")
    return "".join(parts)


def measured_bar(
    label: str,
    measured: float | None,
    pin: float | None,
    budget: float | None,
    colour: str,
    width: int = 640,
) -> str:
    """A bar for ``measured`` with a dashed mark at the pin and a solid one at the budget."""
    label_width, bar_width = 220, width - 230
    top = max(value for value in (measured, pin, budget, 1) if value is not None)
    scale = bar_width / top
    summary = f"{label}: measured {number(measured)}, pin {number(pin)}, budget {number(budget)}"
    parts = [
        f'<svg class="chart bar" viewBox="0 0 {width} 40" role="img" aria-label="{esc(summary)}">',
        f"<title>{esc(summary)}</title>",
        f'<text x="0" y="24" font-size="12">{esc(_shorten(label, 34))}</text>',
        f'<rect x="{label_width}" y="8" width="{bar_width}" height="24" fill="#eceff1"/>',
    ]
    if measured is not None:
        parts.append(
            f'<rect x="{label_width}" y="8" width="{measured * scale:.1f}" height="24" '
            f'fill="{colour}"/><text x="{label_width + 4}" y="25" font-size="12" fill="#fff">'
            f"{esc(number(measured))}</text>"
        )
    if pin is not None:
        x = label_width + pin * scale
        parts.append(
            f'<line x1="{x:.1f}" y1="3" x2="{x:.1f}" y2="37" stroke="#263238" '
            f'stroke-width="2" stroke-dasharray="4 3"><title>pin {esc(number(pin))}</title></line>'
        )
    if budget is not None:
        x = label_width + budget * scale - 1
        parts.append(
            f'<line x1="{x:.1f}" y1="3" x2="{x:.1f}" y2="37" stroke="{BAD}" stroke-width="3">'
            f"<title>budget {esc(number(budget))}</title></line>"
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart(label: str, points: Sequence[tuple[str, float]], width: int = 300) -> str:
    """A small line chart of (date, value) points, oldest first, with its label inside."""
    height, pad = 90, 8
    values = [value for _, value in points]
    low, high = min(values), max(values)
    span = (high - low) or 1.0
    step = (width - 2 * pad) / max(len(points) - 1, 1)

    def y_of(value: float) -> float:
        return height - 20 - (value - low) / span * (height - 44)

    coordinates = [(pad + index * step, y_of(value)) for index, value in enumerate(values)]
    if len(coordinates) == 1:
        coordinates.append((width - pad, coordinates[0][1]))
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in coordinates)
    first, last = values[0], values[-1]
    colour = GOOD if last < first else (BAD if last > first else NEUTRAL)
    parts = [
        f'<svg class="chart spark" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="{esc(label)}">',
        f'<text x="{pad}" y="14" font-size="12" font-weight="bold">{esc(_shorten(label, 40))}'
        f"<title>{esc(label)}</title></text>",
        f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>',
    ]
    for (x, y), (date, value) in zip(coordinates, points):
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}">'
            f"<title>{esc(date)}: {esc(number(value))}</title></circle>"
        )
    parts.append(
        f'<text x="{pad}" y="{height - 4}" font-size="11">{esc(number(first))} → '
        f"{esc(number(last))}</text></svg>"
    )
    return "".join(parts)


def _shorten(text: str, limit: int) -> str:
    return cut(text, limit, keep="tail")
