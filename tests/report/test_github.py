"""Workflow commands for GitHub Actions: escaping, ordering and the per-step caps."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_toll.report import github
from pytest_toll.report.github import (
    ANNOTATION_ERROR,
    ANNOTATION_NOTICE,
    ANNOTATION_WARNING,
    Annotation,
    AnnotationLevel,
)


def parse_command(line: str) -> tuple[str, dict[str, str], str]:
    """Read a workflow command back the way the runner does: split at the first ``::`` after
    the command name, properties at ``,`` and the first ``=``, then unescape."""
    assert line.startswith("::")
    end = line.index("::", 2)
    head, data = line[2:end], line[end + 2 :]
    name, _, raw_properties = head.partition(" ")
    properties = {}
    for pair in filter(None, raw_properties.split(",")):
        key, _, value = pair.partition("=")
        properties[key] = unescape(value, prop=True)
    return name, properties, unescape(data, prop=False)


def unescape(text: str, *, prop: bool) -> str:
    pairs = [("%0D", "\r"), ("%0A", "\n")]
    if prop:
        pairs += [("%3A", ":"), ("%2C", ",")]
    for escaped, char in pairs:
        text = text.replace(escaped, char)
    return text.replace("%25", "%")


def test_data_escaping_covers_percent_and_line_breaks() -> None:
    assert github.escape_data("50%\r\nnext::line, a:b") == "50%25%0D%0Anext::line, a:b"


def test_property_escaping_also_covers_colon_and_comma() -> None:
    assert github.escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_hostile_message_and_title_stay_one_command() -> None:
    annotation = Annotation(
        ANNOTATION_ERROR,
        "100% over\n::warning file=x.py::injected, twice\r",
        title="servers::files, 50%",
        file="dir, with:colon/toll.yaml",
        line=7,
    )
    assert annotation.render() == (
        "::error file=dir%2C with%3Acolon/toll.yaml,line=7,title=servers%3A%3Afiles%2C 50%25"
        "::100%25 over%0A::warning file=x.py::injected, twice%0D"
    )


def test_annotation_without_properties() -> None:
    assert Annotation(ANNOTATION_NOTICE, "hello").render() == "::notice::hello"
    assert (
        Annotation(ANNOTATION_WARNING, "w", line=3).render() == "::warning::w"
    )  # a line needs a file


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="annotation level"):
        Annotation("fatal", "x")  # type: ignore[arg-type]  # a bad level, on purpose


@given(
    message=st.text(),
    title=st.text(min_size=1),
    file=st.text(min_size=1),
    line=st.integers(min_value=1, max_value=10**6),
)
def test_any_text_round_trips_through_the_runner_parser(
    message: str, title: str, file: str, line: int
) -> None:
    rendered = Annotation(ANNOTATION_ERROR, message, title=title, file=file, line=line).render()
    assert "\n" not in rendered and "\r" not in rendered
    name, properties, data = parse_command(rendered)
    assert name == "error"
    assert properties == {"file": file, "line": str(line), "title": title}
    assert data == message


def _many(level: AnnotationLevel, count: int) -> list[Annotation]:
    return [Annotation(level, f"{level} {index}") for index in range(count)]


def test_caps_each_level_and_counts_what_was_left_out() -> None:
    # Given out of order on purpose: errors must still come first.
    given_order = (
        _many(ANNOTATION_NOTICE, 11) + _many(ANNOTATION_WARNING, 3) + _many(ANNOTATION_ERROR, 12)
    )
    lines = github.render_annotations(given_order)
    assert lines[:10] == [f"::error::error {index}" for index in range(10)]
    assert lines[10:13] == [f"::warning::warning {index}" for index in range(3)]
    assert lines[13:22] == [f"::notice::notice {index}" for index in range(9)]
    assert lines[22:] == [
        "::notice title=pytest-toll::4 more annotations left out (2 errors, 2 notices): GitHub "
        "shows 10 of each level per step. The step summary and the log list every entry."
    ]


def test_exactly_at_the_cap_nothing_is_left_out() -> None:
    lines = github.render_annotations(
        _many(ANNOTATION_ERROR, 10) + _many(ANNOTATION_WARNING, 10) + _many(ANNOTATION_NOTICE, 10)
    )
    assert len(lines) == 30
    assert "left out" not in "".join(lines)


def test_one_error_too_many_makes_room_for_the_notice() -> None:
    lines = github.render_annotations(_many(ANNOTATION_ERROR, 11) + _many(ANNOTATION_NOTICE, 10))
    assert sum(line.startswith("::notice") for line in lines) == 10
    assert lines[-1].startswith(
        "::notice title=pytest-toll::2 more annotations left out (1 error, 1 notice)"
    )


def test_running_on_github_reads_the_runner_variable() -> None:
    assert github.running_on_github({"GITHUB_ACTIONS": "true"})
    assert not github.running_on_github({"GITHUB_ACTIONS": "false"})
    assert not github.running_on_github({})


def test_workspace_path_is_relative_to_the_checkout(tmp_path: Path) -> None:
    ledger = tmp_path / "sub" / "toll.yaml"
    ledger.parent.mkdir()
    ledger.write_text("version: 1\n")
    assert github.workspace_path(ledger, {"GITHUB_WORKSPACE": str(tmp_path)}) == "sub/toll.yaml"


def test_step_summary_room_counts_what_is_already_there(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    assert github.step_summary_room(summary) == 1024 * 1024
    summary.write_text("x" * 1000)
    assert github.step_summary_room(summary) == 1024 * 1024 - 1000
    github.append_step_summary("## more", summary)
    assert summary.read_text().endswith("x## more\n")
