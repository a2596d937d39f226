"""``--html PATH`` for the verbs that can draw their report as one self-contained page."""

from __future__ import annotations

import argparse
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.secrets import scrub


def add_html_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="also write the report as one self-contained HTML page (no network, inline SVG)",
    )


def write_page(path: Path, page: str) -> None:
    """Write the page, scrubbed of known secrets as everything the CLI prints is; a path that
    cannot be written is a could-not-judge error."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(scrub(page), encoding="utf-8", newline="\n")
    except OSError as error:
        raise CouldNotJudge(
            f"{path}: cannot write the HTML page: {error.strerror or error}"
        ) from None
