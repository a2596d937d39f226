"""Untrusted SKILL.md input: whatever the file holds, the measure never crashes."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pytest_toll.core import tokens
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.parse import parse_skill_file
from pytest_toll.skills.references import find_reference_targets

# Text biased towards what SKILL.md parsing cares about: fences, YAML syntax, links, paths.
_PIECES = st.sampled_from(
    [
        "---",
        "\n",
        "\r\n",
        "\r",
        "\ufeff",
        "name: ",
        "description: ",
        "metadata:\n  a: ",
        ": ",
        "- ",
        "[",
        "]",
        "{",
        "}",
        "(",
        ")",
        "![x](",
        "[r]: ",
        "references/",
        "scripts/",
        "assets/",
        "../",
        "./",
        "/",
        "#",
        "?",
        "%20",
        "%00",
        "\0",
        "&a ",
        "*a",
        "!!python/object ",
        "!!binary ",
        "2024-01-01",
        "1e999",
        "'",
        '"',
        "\t",
        " ",
        "x.md",
        "SKILL.md",
        "a" * 300,
    ]
)
SKILL_TEXT = st.one_of(st.text(), st.lists(st.one_of(_PIECES, st.text(max_size=5))).map("".join))


@pytest.fixture(scope="module")
def skill_folder() -> Iterator[Path]:
    with tempfile.TemporaryDirectory() as directory:
        folder = Path(directory) / "fuzzed"
        (folder / "references").mkdir(parents=True)
        (folder / "references" / "x.md").write_text("reference text", encoding="utf-8")
        (folder / "assets").mkdir()
        (folder / "assets" / "x.md").write_bytes(b"\0binary")
        yield folder


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(text=SKILL_TEXT)
def test_any_text_as_skill_md_measures_without_crashing(skill_folder: Path, text: str) -> None:
    (skill_folder / "SKILL.md").write_bytes(text.encode("utf-8", "surrogatepass"))
    report = measure_skills(skill_folder)
    [skill] = report.skills
    assert skill.metadata == tokens.count(f"{skill.name}: {skill.description}")
    assert report.totals["references"] == sum(r.tokens or 0 for r in skill.references)
    assert all(not reference.path.startswith("..") for reference in skill.references)
    report.as_dict()


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.binary())
def test_any_bytes_as_skill_md_measure_without_crashing(skill_folder: Path, data: bytes) -> None:
    (skill_folder / "SKILL.md").write_bytes(data)
    assert len(measure_skills(skill_folder).skills) == 1


@given(text=SKILL_TEXT)
def test_parsing_never_raises_and_the_body_is_a_suffix(text: str) -> None:
    parsed = parse_skill_file(text)
    normalized = text.replace("\r\n", "\n").replace("\r", "\n")
    assert normalized.endswith(parsed.body)
    assert (parsed.frontmatter is None) == (parsed.problem is not None)
    assert all(find_reference_targets(parsed.body))


@given(
    before=st.text(max_size=40),
    after=st.text(max_size=40),
    path=st.from_regex(
        r"(?:\./)?(?:references|scripts|assets)/[a-z0-9_-]{1,12}\.(?:md|py)", fullmatch=True
    ),
)
def test_a_bare_path_set_apart_by_spaces_is_always_found(
    before: str, after: str, path: str
) -> None:
    assert path in find_reference_targets(f"{before} {path} {after}") or (
        # Unless the surrounding text makes it part of a Markdown link (then the link counts).
        "](" in before or "]:" in before
    )


@given(text=st.text(max_size=200))
def test_every_bare_path_found_is_in_the_text_and_stays_a_path(text: str) -> None:
    for target in find_reference_targets(text):
        if "](" not in text and "]:" not in text and "%" not in text:
            assert target in text
            assert "/" in target


def test_zero_thresholds_never_divide_by_zero(tmp_path: Path) -> None:
    from pytest_toll.core.findings import RuleOverrides
    from pytest_toll.skills.rules import DEFAULT_THRESHOLDS

    for name in ("one", "two"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: '!!'\n---\n", encoding="utf-8"
        )
    zero = RuleOverrides(thresholds=dict.fromkeys(DEFAULT_THRESHOLDS, 0))
    report = measure_skills(tmp_path, settings=zero)
    assert [skill.name for skill in report.skills] == ["one", "two"]
    assert {finding.rule for finding in report.findings} == {"S101", "S102", "S104"}


@given(
    descriptions=st.lists(
        st.lists(st.sampled_from("abcdefghijkl"), max_size=14).map(" ".join), max_size=12
    ),
    similarity=st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0]),
)
@example(descriptions=["a b c", "a b c d e f g h i j"], similarity=0.3)
def test_collision_pruning_finds_exactly_the_brute_force_pairs(
    descriptions: list[str], similarity: float
) -> None:
    from pytest_toll.skills.records import Skill
    from pytest_toll.skills.rules import _colliding_pairs, _words

    skills = [
        Skill(f"s{i}", f"p{i}", 0, 0, 0, (), 0, description=text)
        for i, text in enumerate(descriptions)
    ]
    expected = []
    for i, first in enumerate(skills):
        for second in skills[i + 1 :]:
            if not (first.description and second.description):
                continue
            a, b = _words(first.description), _words(second.description)
            if a | b and len(a & b) / len(a | b) >= similarity:
                expected.append((first.name, second.name, len(a & b) / len(a | b)))
    found = [
        (skills[a].name, skills[b].name, shared)
        for a, b, shared in _colliding_pairs(skills, similarity)
    ]
    assert found == expected
