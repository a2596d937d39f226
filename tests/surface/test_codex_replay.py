"""Codex's own project-doc tests, replayed: each case of the test module of
``codex-rs/core/src/project_doc.rs`` (openai/codex @ 0bd53e457bf7dc40ff77fe2780e9c3070505b3b7)
built as a fixture, and ``measure_memory(root, "codex")`` compared with the string Codex's
test expects ``read_project_docs`` to give: the same files, in order, and the same tokens
within one per file (the blank-line joins are Codex's framing, left out)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_toll.core import tokens
from pytest_toll.surface.memory import measure_memory
from pytest_toll.surface.records import ALWAYS_ON

HUGE = "A" * 2048

#: (case, files to write, working folder, project_doc_max_bytes, the files read, the text).
CASES: tuple[tuple[str, dict[str, str], str, int, list[str], str], ...] = (
    ("doc_smaller_than_limit_is_returned", {"AGENTS.md": "hello world"}, ".", 4096,
     ["AGENTS.md"], "hello world"),
    ("doc_larger_than_limit_is_truncated", {"AGENTS.md": HUGE}, ".", 1024,
     ["AGENTS.md"], HUGE[:1024]),
    ("finds_doc_in_repo_root", {"AGENTS.md": "root level doc"}, "workspace/crate_a", 4096,
     ["AGENTS.md"], "root level doc"),
    ("zero_byte_limit_disables_docs", {"AGENTS.md": "something"}, ".", 0, [], ""),
    ("concatenates_root_and_cwd_docs",
     {"AGENTS.md": "root doc", "workspace/crate_a/AGENTS.md": "crate doc"},
     "workspace/crate_a", 4096, ["AGENTS.md", "workspace/crate_a/AGENTS.md"],
     "root doc\n\ncrate doc"),
    ("agents_local_md_preferred", {"AGENTS.md": "versioned", "AGENTS.override.md": "local"},
     ".", 4096, ["AGENTS.override.md"], "local"),
)  # fmt: skip


@pytest.mark.parametrize(
    ("case", "files", "cwd", "limit", "read", "expected"), CASES, ids=[c[0] for c in CASES]
)
def test_codex_reads_what_its_own_tests_expect(
    tmp_path: Path,
    case: str,
    files: dict[str, str],
    cwd: str,
    limit: int,
    read: list[str],
    expected: str,
) -> None:
    (tmp_path / ".git").write_text("gitdir: /path/to/actual/git/dir\n", encoding="utf-8")
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text, encoding="utf-8")
    (tmp_path / cwd).mkdir(parents=True, exist_ok=True)
    report = measure_memory(tmp_path, "codex", cwd=tmp_path / cwd, max_bytes=limit)
    loaded = [file for file in report.files if file.loaded == ALWAYS_ON]
    assert [file.path for file in loaded] == read, case
    counted = tokens.O200kCounter().count(expected) if expected else 0
    assert abs(report.total - counted) <= max(1, len(read)), (case, report.total, counted)
