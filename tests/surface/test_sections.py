"""The two tests ``toll fix --surface`` asks of a Markdown section (is it a procedure, is it
about one folder), and the splitter under them, on real text and on any text."""

from __future__ import annotations

import re
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.surface.sections import (
    children,
    folder_of,
    keeps_in_body,
    procedure_test,
    shift_headings,
    slug,
    split_sections,
)

RELEASE = """## Releasing

1. Pull main.
2. Bump the version in `pyproject.toml`.
   Breaking changes bump the major.
3. Tag and push the tag.
"""


def lines(text: str) -> list[str]:
    return text.rstrip("\n").split("\n")


def test_an_ordered_list_of_three_steps_is_a_procedure() -> None:
    assert procedure_test(lines(RELEASE)) == "3 ordered steps"


def test_two_steps_or_mostly_prose_is_not_a_procedure() -> None:
    assert procedure_test(lines("## Two\n\n1. one\n2. two\n")) is None
    prose = "## Mixed\n\n1. a\n2. b\n3. c\n" + "Prose that explains a lot.\n" * 5
    assert procedure_test(lines(prose)) is None
    assert procedure_test(lines("## Conventions\n\n- a\n- b\n- c\n- d\n")) is None


def test_a_how_to_heading_over_a_code_block_is_a_procedure_and_a_bare_code_block_is_not() -> None:
    block = "\n```sh\nmake build\nmake deploy\n```\n"
    assert procedure_test(lines("## How to deploy" + block)) == "a how-to block"
    assert procedure_test(lines("## To run the tests" + block)) == "a how-to block"
    assert procedure_test(lines("## Commands" + block)) is None


def test_a_section_with_an_import_is_never_a_procedure() -> None:
    assert procedure_test(lines(RELEASE + "4. Read @docs/release.md.\n")) is None
    # A mention is no import: @octocat names no file.
    assert procedure_test(lines(RELEASE + "4. Ping @octocat on the issue.\n")) == "4 ordered steps"


def test_steps_in_a_code_block_do_not_count_as_steps_but_as_code() -> None:
    text = "## Not steps\n\nSome prose.\nMore prose.\n\n```\n1. a\n```\n"
    assert procedure_test(lines(text)) is None


def test_sections_nest_and_end_at_the_next_heading_of_their_level() -> None:
    text = "# Title\n\nintro\n\n## A\n\na\n### A1\n\nx\n## B\n\n```\n# not a heading\n```\n"
    found = split_sections(text)
    assert [(s.level, s.title, s.start, s.end) for s in found] == [
        (1, "Title", 0, 16),
        (2, "A", 4, 10),
        (3, "A1", 7, 10),
        (2, "B", 10, 16),
    ]
    assert [s.title for s in children(found[0], found)] == ["A", "B"]


def folders(tmp_path: Path, *names: str) -> Path:
    for name in names:
        (tmp_path / name).mkdir(parents=True)
    return tmp_path


def test_a_heading_that_names_a_folder_is_about_it(tmp_path: Path) -> None:
    root = folders(tmp_path, "frontend", "backend")
    assert folder_of(["## Frontend", "Use pnpm."], root) == "frontend"
    assert folder_of(["## `backend/` service", "Run it."], root) == "backend"
    assert folder_of(["## frontend and backend", "x"], root) is None


def test_paths_in_one_folder_make_a_section_about_the_deepest_common_one(tmp_path: Path) -> None:
    root = folders(tmp_path, "packages/api/src", "packages/web")
    about_api = ["## The API", "Edit `packages/api/src/app.ts` and packages/api/README.md."]
    assert folder_of(about_api, root) == "packages/api"
    both = ["## Both", "packages/api/x.ts and packages/web/y.ts"]
    assert folder_of(both, root) == "packages"
    assert folder_of(["## Links", "See https://example.com/packages/api"], root) is None
    assert folder_of(["## Missing", "see nowhere/file.ts"], root) is None


def test_hidden_and_vendored_folders_are_never_a_section_s_folder(tmp_path: Path) -> None:
    root = folders(tmp_path, ".github/workflows", "node_modules/x")
    assert folder_of(["## CI", "Edit .github/workflows/ci.yml"], root) is None
    assert folder_of(["## Deps", "node_modules/x/index.js"], root) is None


def test_a_slug_is_a_valid_skill_name() -> None:
    assert slug("Releasing a version (v2)!") == "releasing-a-version-v2"
    assert slug("Déploiement") == "deploiement"
    assert slug("★★★") == "procedure"
    long = slug("word " * 40)
    assert len(long) <= 64 and not long.endswith("-")


#: A root with no folders: the folder test must still read any section without raising.
NO_FOLDERS = Path(__file__).parent / "no-such-folder"

MARKDOWN = st.lists(
    st.sampled_from(
        ["# T", "## A", "### B", "####### seven", "```", "~~~", "1. step", "   continued",
         "- item", "", "text @a/b.md", "  ## indented", "    ## code"]
    )
    | st.text(max_size=20),
    max_size=40,
)  # fmt: skip


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(MARKDOWN)
def test_any_text_splits_into_nested_sections_within_it(parts: list[str]) -> None:
    text = "\n".join(parts)
    found = split_sections(text)
    count = len(text.split("\n"))
    for section in found:
        assert 0 <= section.start < section.end <= count
        assert 1 <= section.level <= 6
        for other in found:
            # Two sections are nested or apart, never crossing.
            crossing = section.start < other.start < section.end < other.end
            assert not crossing
    for section in found:
        part = text.split("\n")[section.start : section.end]
        procedure_test(part)  # never raises
        keeps_in_body(part)
        folder_of(part, NO_FOLDERS)
        assert len(shift_headings(part, 2)) == len(part)
        name = slug(section.title)
        assert name == "procedure" or re.fullmatch(r"[a-z0-9]+(?:-[a-z0-9]+)*", name)
        assert len(name) <= 64


def test_a_numbered_outline_of_rules_is_not_a_procedure() -> None:
    """The shape of the MCP Python SDK's CLAUDE.md: numbered labels over lists of rules."""
    outline = (
        "## Code Formatting\n\n1. Ruff\n   - Format: `ruff format .`\n   - Check: `ruff check .`\n"
        "2. Type Checking\n   - Tool: `pyright`\n3. Pre-commit\n   - Runs: on git commit\n"
    )
    assert procedure_test(lines(outline)) is None
    rules = RELEASE.replace("## Releasing", "## Core Development Rules")
    assert procedure_test(lines(rules)) is None


def test_one_path_named_twice_is_a_detail_not_the_section_s_subject(tmp_path: Path) -> None:
    """openai-agents-python's ``$release-candidate-prep`` section names one fixture twice."""
    root = folders(tmp_path, "tests/fixtures")
    text = [
        "#### `$release-candidate-prep`",
        "freezes tests/fixtures/api.json",
        "tests/fixtures/api.json",
    ]
    assert folder_of(text, root) is None
    # A path outside every folder of the repository makes the section about none of them.
    assert (
        folder_of(["## Mixed", "tests/fixtures/a.json tests/fixtures/b.json nowhere/c"], root)
        is None
    )


def test_a_skill_body_keeps_its_workflow_steps_and_usage() -> None:
    assert keeps_in_body(["## Workflow", "Read the diff."])
    assert keeps_in_body(["## 3. Run the readiness gates", "Run them."])
    assert keeps_in_body(["## Quick start", "x"])
    assert keeps_in_body(lines(RELEASE.replace("## Releasing", "## Shipping")))
    assert not keeps_in_body(["## Review dimensions", "| a | b |"])


def test_headings_shift_up_and_code_blocks_stay_as_written() -> None:
    section = ["## Deploy", "", "### Check", "```sh", "## not a heading", "  # a comment", "```"]
    assert shift_headings(section, 1) == [
        "# Deploy", "", "## Check", "```sh", "## not a heading", "  # a comment", "```",
    ]  # fmt: skip
    assert shift_headings(["  ### Deep"], 5) == ["# Deep"]
