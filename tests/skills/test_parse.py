"""SKILL.md split into frontmatter and body; lines counted as an editor numbers them."""

from __future__ import annotations

from pytest_toll.skills.parse import line_count, parse_skill_file


def test_body_is_the_text_after_the_closing_fence() -> None:
    parsed = parse_skill_file("---  \nname: a\n---\t\n\nBody\n---\nmore\n")
    assert parsed.frontmatter == {"name": "a"}
    assert parsed.body == "\nBody\n---\nmore\n"
    assert parsed.body_start_line == 4
    assert parsed.problem is None


def test_line_count_is_an_editors() -> None:
    assert [line_count(t) for t in ["", "a", "a\n", "a\nb", "a\n\n", "a\fb\u2028c\n"]] == [
        0,
        1,
        1,
        2,
        2,
        1,
    ]
