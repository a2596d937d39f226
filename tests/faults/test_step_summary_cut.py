"""The step summary is never cut in the middle of markup (issue #24, item 7): wherever a
size limit falls — a step summary nearly full, a pull-request comment, a ratchet body — the
text is cut at a block boundary, a code fence it cuts inside is closed, and what follows the
cut (the note, the next step's summary) renders as its own block in cmark-gfm."""

from __future__ import annotations

import io
import re
from pathlib import Path

import cmarkgfm
import pytest

from pytest_toll.github import loop
from pytest_toll.report import outputs
from pytest_toll.report.markdown_fit import close_open_fence, fit_markdown
from tests.faults.test_markdown_links import hostile_report

#: Markdown of every block kind a report or a user's file may hold.
DOCUMENT = "\n".join(
    [
        "## A heading",
        "",
        "A paragraph that runs",
        "over two lines with **bold text**.",
        "",
        "| name | tokens |",
        "|---|--:|",
        *(f"| row {number} with `code` | {number:,} |" for number in range(40)),
        "",
        "```python",
        *(f"print({number})  # a line of code" for number in range(30)),
        "```",
        "",
        "- an item",
        "- another item",
        "  continued",
        "",
        "~~~~",
        "fenced with tildes",
        "~~~~",
        "",
        "The end.",
        "",
    ]
)
NOTE = "<p><em>Cut to stay within"
_BLOCK = re.compile(r"^<(h2|p|table|pre|ul|ol)\b", re.MULTILINE)


def html_of(text: str) -> str:
    return str(cmarkgfm.github_flavored_markdown_to_html(text))


def blocks(html: str) -> list[str]:
    return _BLOCK.findall(html)


def test_every_cut_is_at_a_block_boundary_with_fences_closed() -> None:
    whole = blocks(html_of(DOCUMENT))
    size = len(DOCUMENT.encode())
    for limit in range(60, size + 1, 7):
        cut = fit_markdown(DOCUMENT, limit)
        assert len(cut.encode()) <= limit, limit
        html = html_of(cut)
        if cut == DOCUMENT:
            continue
        # The note is a paragraph of its own: nothing (a fence, a table) swallowed it.
        assert NOTE in html, (limit, cut)
        assert not close_open_fence(cut), (limit, cut)
        kept = blocks(html)[:-1]  # the note's paragraph last
        assert kept == whole[: len(kept)], (limit, cut)
        # A table is cut between rows: every body row keeps both cells.
        for row in re.findall(r"<tr>(.*?)</tr>", html, re.DOTALL):
            assert row.count("<td") in (0, 2) and row.count("<th") in (0, 2), (limit, row)
        # No line was cut through (every kept line is a line of the document).
        lines = DOCUMENT.split("\n")
        for line in cut.split("\n"):
            assert line in lines or line.startswith(("_Cut", "```", "~~~~")), (limit, line)


def test_the_step_summary_starts_after_what_another_step_left_open(tmp_path: Path) -> None:
    """Another step's summary ends inside a code fence and leaves little room: ours still
    renders as a heading of its own, and the file stays under GitHub's 1 MiB."""
    summary = tmp_path / "summary.md"
    earlier = "## Another step\n\n```text\n" + "log line\n" * 10 + "x" * (1024 * 1024 - 3000)
    summary.write_text(earlier, encoding="utf-8")
    outputs.write_outputs(
        hostile_report(), {}, github=True,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, stream=io.StringIO(),
        environ={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    written = summary.read_text(encoding="utf-8")
    assert len(written.encode()) <= 1024 * 1024
    html = html_of(written)
    assert "<h2>pytest-toll: context cost</h2>" in html, written[len(earlier) - 50 :]
    assert not close_open_fence(written)


def test_a_full_step_summary_gets_nothing_not_one_byte_too_many(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_bytes(b"x\n" * (512 * 1024))
    warnings: list[str] = []
    outputs.write_outputs(
        hostile_report(), {}, github=True,
        ledger_path=tmp_path / "toll.yaml", warn=warnings.append, stream=io.StringIO(),
        environ={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert summary.stat().st_size == 1024 * 1024
    assert warnings and "is full" in warnings[0]


def test_a_long_comment_is_cut_between_blocks() -> None:
    body = loop.comment_body(DOCUMENT * 400, "toll.yaml")
    assert len(body) <= loop.COMMENT_LIMIT
    html = html_of(body)
    assert NOTE in html
    assert not close_open_fence(body)
