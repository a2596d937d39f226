"""A README badge for the context cost: a self-contained SVG and a shields.io endpoint JSON.

Both are written locally — no badge service is called. The SVG can be committed or published
as a build artifact; the JSON is the "endpoint" shape shields.io reads from any URL
(``{"schemaVersion": 1, "label", "message", "color"}``) for teams that prefer its renderer.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from pytest_toll.core import project
from pytest_toll.core.tokens import O200K
from pytest_toll.report.data import ReportDict

LABEL = "context cost"

#: shields.io's colour names and the hex values the SVG uses for them.
COLORS = {
    "brightgreen": "#4c1",
    "green": "#97ca00",
    "yellow": "#dfb317",
    "orange": "#fe7d37",
    "red": "#e05d44",
    "lightgrey": "#9f9f9f",
}

#: (at most this many tokens, colour), checked in order. 10,000 and 25,000 are where the
#: definitions rules (E128) start to warn and to fail on a server's total.
DEFAULT_THRESHOLDS: tuple[tuple[int, str], ...] = (
    (2_000, "brightgreen"),
    (10_000, "green"),
    (25_000, "yellow"),
)
ABOVE_THRESHOLDS = "orange"
FAILED = "red"
UNKNOWN = "lightgrey"

# Approximate advance widths of Verdana at 11px (the face badges are drawn in), so the two
# halves fit their text without a font at hand. Unknown characters count as a wide letter.
_NARROW = {"i": 3.0, "l": 3.0, "j": 3.8, "f": 3.9, "t": 4.3, "r": 4.7, " ": 3.5}
_PUNCTUATION = {",": 3.6, ".": 3.6, "(": 4.5, ")": 4.5, "-": 4.6, ":": 4.0, "|": 4.6}
_WIDE = {"m": 10.7, "w": 9.0, "M": 9.5, "W": 10.9, "×": 9.2, "~": 9.2, "%": 12.0}
_DEFAULT_LOWER = 6.6
_DEFAULT_OTHER = 7.5
_DIGIT = 7.0


def text_width(text: str) -> float:
    width = 0.0
    for char in text:
        if char in _NARROW:
            width += _NARROW[char]
        elif char in _PUNCTUATION:
            width += _PUNCTUATION[char]
        elif char in _WIDE:
            width += _WIDE[char]
        elif char.isdigit():
            width += _DIGIT
        elif char.islower():
            width += _DEFAULT_LOWER
        else:
            width += _DEFAULT_OTHER
    return width


def badge_color(
    tokens: int | None,
    *,
    failed: bool = False,
    thresholds: Sequence[tuple[int, str]] = DEFAULT_THRESHOLDS,
) -> str:
    """Red when the gate failed, grey when nothing was measured, else by ``thresholds``."""
    if failed:
        return FAILED
    if tokens is None:
        return UNKNOWN
    for ceiling, color in thresholds:
        if tokens <= ceiling:
            return color
    return ABOVE_THRESHOLDS


#: What the badge says instead of a number that would be wrong: a server or skill could not
#: be measured, or the run measured only some of them.
ERROR_MESSAGE = "error"
PARTIAL_MESSAGE = "partial"


def badge_message(tokens: int | None, method: str = O200K, *, gap: str = "") -> str:
    """``gap`` (:data:`ERROR_MESSAGE`, :data:`PARTIAL_MESSAGE`) replaces the number."""
    if gap:
        return gap
    return "unknown" if tokens is None else f"{tokens:,} tok ({method})"


@dataclass(frozen=True)
class Badge:
    label: str
    message: str
    color: str
    #: Where a click on the SVG leads (pytest-toll's page, from the package metadata); empty:
    #: no link. shields.io's endpoint JSON has no field for one, so only the SVG carries it.
    link: str = ""

    def endpoint(self) -> dict[str, Any]:
        """The shields.io endpoint JSON: ``https://img.shields.io/endpoint?url=<where it lives>``."""
        return {
            "schemaVersion": 1,
            "label": self.label,
            "message": self.message,
            "color": self.color,
        }

    def svg(self) -> str:
        """A flat badge, two halves, text centred; deterministic for the same inputs."""
        fill = COLORS.get(self.color, COLORS[UNKNOWN])
        left = math.ceil(text_width(self.label)) + 10
        right = math.ceil(text_width(self.message)) + 10
        total = left + right
        label = escape(self.label)
        message = escape(self.message)
        title = escape(f"{self.label}: {self.message}", {'"': "&quot;"})
        # An <a> around the drawing makes the badge a link where the SVG is opened itself.
        opening, closing = "", ""
        if self.link:
            href = escape(self.link, {'"': "&quot;"})
            opening = f'<a href="{href}" target="_blank">'
            closing = "</a>"
        return (
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{total}" height="20" '
            f'role="img" aria-label="{title}">'
            f"<title>{title}</title>{opening}"
            '<linearGradient id="s" x2="0" y2="100%">'
            '<stop offset="0" stop-color="#bbb" stop-opacity=".1"/>'
            '<stop offset="1" stop-opacity=".1"/></linearGradient>'
            f'<clipPath id="r"><rect width="{total}" height="20" rx="3" fill="#fff"/></clipPath>'
            '<g clip-path="url(#r)">'
            f'<rect width="{left}" height="20" fill="#555"/>'
            f'<rect x="{left}" width="{right}" height="20" fill="{fill}"/>'
            f'<rect width="{total}" height="20" fill="url(#s)"/></g>'
            '<g fill="#fff" text-anchor="middle" '
            'font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="11">'
            f'<text x="{left / 2:g}" y="15" fill="#010101" fill-opacity=".3">{label}</text>'
            f'<text x="{left / 2:g}" y="14">{label}</text>'
            f'<text x="{left + right / 2:g}" y="15" fill="#010101" fill-opacity=".3">{message}</text>'
            f'<text x="{left + right / 2:g}" y="14">{message}</text>'
            f"</g>{closing}</svg>\n"
        )


def make_badge(
    tokens: int | None,
    *,
    failed: bool = False,
    method: str = O200K,
    thresholds: Sequence[tuple[int, str]] = DEFAULT_THRESHOLDS,
    gap: str = "",
    link: str = "",
) -> Badge:
    """The badge of a fixed cost; with ``gap`` ("error", "partial") it shows that instead
    of a number that leaves something out (red when the gate failed, else grey)."""
    return Badge(
        LABEL,
        badge_message(tokens, method, gap=gap),
        badge_color(None if gap else tokens, failed=failed, thresholds=thresholds),
        link,
    )


def headline_tokens(report: ReportDict) -> int | None:
    """The badge's number: the fixed cost per request, or None when nothing was measured."""
    measured = any(entry.get("measured") is not None for entry in report.get("entries", []))
    if not measured:
        return None
    fixed: Mapping[str, Any] = report.get("fixed_cost") or {}
    return int(fixed.get("tokens", 0))


def badge_for(report: ReportDict) -> Badge:
    """The badge of a session report: its fixed cost, or why that figure is missing."""
    fixed: Mapping[str, Any] = report.get("fixed_cost") or {}
    gap = ""
    if fixed.get("errors"):
        gap = ERROR_MESSAGE
    elif fixed.get("unmeasured"):
        gap = PARTIAL_MESSAGE
    badge = make_badge(
        headline_tokens(report),
        failed=bool(report.get("failed")),
        gap=gap,
        link=project.home_url() or "",
    )
    host = fixed.get("host")
    # The figure is one host's: the badge says whose.
    return dataclasses.replace(badge, label=f"{LABEL} ({host})") if host else badge
