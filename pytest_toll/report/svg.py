"""Inline SVG charts for the HTML page: a treemap, labelled bars, a line chart.

Pure string building, no dependencies. Every text passes through :func:`esc`; every chart
is a ``viewBox`` drawing at 100% width, so it scales from a phone to a wide screen, and
every shape names itself in a ``<title>`` (the tooltip, and what a screen reader reads).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_toll.core.secrets import cut

# Colours with enough contrast for white or dark text; stable per index.
PALETTE = ("#3b6ea8", "#4f9a6b", "#b5762d", "#8a5aa8", "#a84b4b", "#3f8f96", "#7a7a2e", "#6b6b8a")
LEVEL_COLOURS = {"metadata": "#3b6ea8", "body": "#4f9a6b", "references": "#b5762d"}
GOOD, BAD, NEUTRAL = "#2e7d32", "#c62828", "#546e7a"


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def number(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:,.4g}"


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


def treemap(
    tiles: Sequence[Tile], title: str, key: str, width: int = 640, height: int = 300
) -> str:
    """A treemap of ``tiles`` by value; each tile labelled with its name and value.

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
        size = max(9.0, min(16.0, w / max(len(tile.label), 4) * 1.7, h / 2.6))
        parts.append(
            f'<g class="tile"><title>{esc(tile.tooltip)}</title>'
            f'<clipPath id="{clip}"><rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" '
            f'height="{h:.1f}"/></clipPath>'
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" '
            f'fill="{PALETTE[index % len(PALETTE)]}" stroke="#fff" stroke-width="2"/>'
            f'<text clip-path="url(#{clip})" x="{x + 5:.1f}" y="{y + size + 3:.1f}" '
            f'font-size="{size:.1f}" fill="#fff">'
            f'<tspan font-weight="bold">{esc(tile.label)}</tspan>'
            f'<tspan x="{x + 5:.1f}" dy="{size * 1.2:.1f}">{esc(number(tile.value))} tok</tspan>'
            "</text></g>"
        )
    parts.append("</svg>")
    return "".join(parts)


def stacked_bar(
    label: str, segments: Sequence[tuple[str, float, str]], scale_max: float, width: int = 640
) -> str:
    """One labelled horizontal bar of coloured segments (name, value, colour)."""
    label_width, bar_width = 180, width - 190
    total = sum(value for _, value, _ in segments)
    parts = [
        f'<svg class="chart bar" viewBox="0 0 {width} 34" role="img" aria-label="{esc(label)}">',
        f'<text x="0" y="21" font-size="13">{esc(label)}</text>',
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
