"""``@path`` imports found as Claude Code documents them: not in code, mentions left alone."""

from __future__ import annotations

from pathlib import Path

from pytest_toll.surface.imports import find_imports, looks_like_path, resolve


def targets(text: str) -> list[tuple[str, int]]:
    return [(found.target, found.line) for found in find_imports(text)]


def test_imports_at_line_start_and_after_spaces_with_their_lines() -> None:
    text = "@docs/a.md\nSee @README.md, and @b.md.\nmail me at me@example.com\n"
    assert targets(text) == [("docs/a.md", 1), ("README.md", 2), ("b.md", 2)]


def test_no_import_inside_fenced_blocks_of_either_fence() -> None:
    text = "\n".join(
        [
            "```bash",
            "@inside/backticks.md",
            "```",
            "~~~~",
            "@inside/tildes.md",
            "```",  # a shorter, other fence does not close a ~~~~ block
            "~~~~",
            "@after.md",
        ]
    )
    assert targets(text) == [("after.md", 8)]


def test_no_import_inside_code_spans_of_any_length() -> None:
    text = "a `@span.md` b ``x @double.md y`` c @real.md and an unclosed ` @open.md"
    assert targets(text) == [("real.md", 1), ("open.md", 1)]


def test_a_mention_is_not_a_path_but_a_dotted_or_slashed_word_is() -> None:
    assert not looks_like_path("octocat")
    assert looks_like_path("README.md") and looks_like_path("docs/x") and looks_like_path("~/x")


def test_targets_resolve_from_the_importing_files_folder(tmp_path: Path) -> None:
    importer = tmp_path / "docs" / "guide.md"
    assert resolve("../CLAUDE.md", importer) == tmp_path / "docs" / ".." / "CLAUDE.md"
    assert resolve("/etc/hosts", importer) == Path("/etc/hosts")
    assert resolve("~/notes.md", importer) == Path.home() / "notes.md"
