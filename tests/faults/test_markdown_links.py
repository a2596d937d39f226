"""Markdown that cannot become a link (issue #24, item 6): URLs, ``www.`` names and mail
addresses in third-party text (entry, tool and part names, rule messages, subjects, captured
requests) render as plain text in GitHub's renderer — cmark-gfm with its autolink extension,
as ``cmarkgfm.github_flavored_markdown_to_html`` runs it — in the Markdown report, the step
summary and the pull-request comment. The report itself links nothing, so any ``<a`` in the
HTML came from third-party text."""

from __future__ import annotations

import io
import re
from pathlib import Path

import cmarkgfm
import pytest

from pytest_toll.github import loop
from pytest_toll.report import markdown, outputs
from pytest_toll.report.data import EntryResult, PartResult, ReportDict, SessionReport

#: The forms cmark-gfm's autolink extension (and CommonMark's own links) turn into links.
LINKS = [
    "https://evil.example/x?a=1",
    "http://evil.example",
    "HTTPS://EVIL.EXAMPLE/UP",
    "hTtP://mixed.example",
    "ftp://files.evil.example/f",
    "www.evil.example",
    "WWW.EVIL.EXAMPLE/page",
    "(www.paren.example)",
    "someone@mail.evil.example",
    "mailto:someone@evil.example",
    "xmpp:someone@evil.example",
    "<https://angle.example>",
    "[click](https://inline.example)",
    "![img](https://image.example/i.png)",
    "[ref]: https://reference.example",
    "*https://emphasis.example*",
    "~www.tilde.example~",
    "_www.underscore.example_",
]


def hostile_report() -> ReportDict:
    report = SessionReport(ledger="toll.yaml", window=1_000_000, tolerance=0)
    text = " ".join(LINKS)
    entries = []
    for number, link in enumerate(LINKS):
        entries.append(
            EntryResult(
                "servers", f"srv {link}", f"toll.yaml::servers::{number}", number + 1, 120,
                "o200k", 100, None, "regressed", failed=True, message=f"server said {link}",
                parts=[PartResult(f"tool {link}", 120, 100)],
                findings=[
                    {"rule": "E121", "severity": "error", "subject": f"tool {link}",
                     "message": f"description is {text}", "hint": f"see {link}"},
                ],
            )
        )  # fmt: skip
    report.add(entries)
    return report.as_dict()


def html_of(text: str) -> str:
    return str(cmarkgfm.github_flavored_markdown_to_html(text))


def assert_no_link(text: str, where: str) -> None:
    rendered = html_of(text)
    links = re.findall(r"<(?:a|img)\b[^>]*>", rendered)
    assert not links, f"{where}: {links}"
    # Still there to read, as text.
    assert "evil.example" in rendered


def test_the_renderer_links_these_forms_when_not_escaped() -> None:
    """The oracle: each form is a link in plain Markdown, so the test below means something."""
    # (cmark-gfm links "www." in lower case only; upper case stays escaped all the same.)
    for link in [link for link in LINKS[:12] if not link.startswith("WWW")]:
        assert "<a " in html_of(f"said {link}"), link


@pytest.mark.parametrize("link", LINKS)
def test_one_escaped_form_renders_as_text(link: str) -> None:
    rendered = html_of(f"| a |\n|---|\n| {markdown.text(link)} |\n\n{markdown.text(link)}\n")
    assert "<a " not in rendered and "<img" not in rendered, rendered


def test_the_markdown_report_comment_and_step_summary_link_nothing(tmp_path: Path) -> None:
    report = hostile_report()
    report_markdown = markdown.render(report)
    assert_no_link(report_markdown, "the Markdown report")
    assert_no_link(loop.comment_body(report_markdown, "toll.yaml"), "the pull-request comment")
    summary = tmp_path / "summary.md"
    outputs.write_outputs(
        report, {"markdown": tmp_path / "toll.md"}, github=True,
        ledger_path=tmp_path / "toll.yaml", warn=pytest.fail, stream=io.StringIO(),
        environ={"GITHUB_STEP_SUMMARY": str(summary)},
    )  # fmt: skip
    assert_no_link(summary.read_text(encoding="utf-8"), "the step summary")
    assert_no_link((tmp_path / "toll.md").read_text(encoding="utf-8"), "--toll-markdown")
