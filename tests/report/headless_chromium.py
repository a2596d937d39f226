"""Headless chromium for the HTML page tests: load a page, read its DOM, console and requests.

Chromium runs hermetically: a fresh profile, its background services off, and every host
name resolving to nothing, so even a request that slipped through could not leave the
machine. What the page itself requested is read from chromium's own network log (events
with an initiator — the page's origin — as opposed to the browser's "not an origin").
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path

import pytest

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-domain-reliability",
    "--no-pings",
    "--disable-features=Translate,OptimizationHints,MediaRouter,SpellCheck",
    "--host-resolver-rules=MAP * ~NOTFOUND",
)


def chromium() -> str:
    """The chromium executable; skip visibly when absent, except in CI where it must run."""
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None and Path("/usr/bin/chromium").exists():
        found = "/usr/bin/chromium"
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but chromium is not installed (apt-get install chromium)")
        pytest.skip("chromium is not installed: the HTML page is not tested in a browser")
    return found


@dataclass
class Loaded:
    dom: str
    console: list[str]
    page_requests: list[str]


def _net_events(path: Path) -> list[dict[str, object]]:
    text = path.read_text(encoding="utf-8").rstrip()
    if not text.endswith("}"):
        # A log cut short at exit ends inside the events array.
        text = text.rstrip(",") + "]}"
    events: list[dict[str, object]] = json.loads(text).get("events", [])
    return events


def load(page: Path, profile: Path) -> Loaded:
    """Load ``page`` and return its DOM after scripts ran, its console lines, its requests."""
    net_log = profile / "net.json"
    done = subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile / 'profile'}",
            "--enable-logging=stderr",
            "--v=0",
            f"--log-net-log={net_log}",
            "--dump-dom",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    console = [line for line in done.stderr.splitlines() if ":CONSOLE" in line]
    requests = []
    for event in _net_events(net_log):
        params = event.get("params")
        if isinstance(params, dict) and "url" in params:
            initiator = params.get("initiator")
            if initiator is not None and initiator != "not an origin":
                requests.append(str(params["url"]))
    return Loaded(done.stdout, console, requests)


def screenshot(page: Path, out: Path, width: int, height: int, profile: Path) -> tuple[int, int]:
    """A PNG of ``page`` at ``width``×``height``; returns the PNG's own size."""
    done = subprocess.run(
        [
            chromium(),
            *CHROMIUM_FLAGS,
            f"--user-data-dir={profile / 'profile'}",
            "--hide-scrollbars",
            f"--window-size={width},{height}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    header = out.read_bytes()[:24]
    assert header[:8] == b"\x89PNG\r\n\x1a\n"
    png_width, png_height = struct.unpack(">II", header[16:24])
    return png_width, png_height


class SvgText(HTMLParser):
    """Every piece of text inside an ``<svg>`` (labels and ``<title>`` tooltips)."""

    def __init__(self) -> None:
        super().__init__()
        self.depth = 0
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "svg":
            self.depth += 1

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg":
            self.depth -= 1

    def handle_data(self, data: str) -> None:
        if self.depth > 0 and data.strip():
            self.texts.append(data.strip())


def svg_texts(dom: str) -> list[str]:
    parser = SvgText()
    parser.feed(dom)
    return parser.texts
