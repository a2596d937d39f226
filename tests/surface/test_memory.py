"""Memory files per host: the chains, imports and cuts each host's documentation describes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_toll.core import tokens
from pytest_toll.core.errors import UsageError
from pytest_toll.surface.memory import CODEX_MAX_BYTES, LOST, measure_memory
from pytest_toll.surface.records import ALWAYS_ON, ON_DEMAND

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "surface"


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def files(report: object) -> dict[str, tuple[int, str]]:
    return {f.path: (f.tokens, f.loaded) for f in report.files}  # type: ignore[attr-defined]


def count(text: str) -> int:
    return tokens.O200kCounter().count(text)


def test_a_real_claude_md_imports_its_readme_and_architecture() -> None:
    root = FIXTURES / "jeltz"
    report = measure_memory(root, "claude")
    measured = files(report)
    assert list(measured) == ["CLAUDE.md", "README.md", "ARCHITECTURE.md"]
    for name, (counted, loaded) in measured.items():
        assert loaded == ALWAYS_ON
        assert counted == count((root / name).read_text(encoding="utf-8")), name
    assert report.total == sum(counted for counted, _ in measured.values())
    assert report.findings == ()


def test_claude_chain_root_to_working_folder_rules_and_nested(tmp_path: Path) -> None:
    write(tmp_path / "CLAUDE.md", "root rules\n")
    write(tmp_path / ".claude" / "CLAUDE.md", "dot-claude rules\n")
    write(tmp_path / "svc" / "CLAUDE.md", "service rules\n")
    write(tmp_path / "svc" / "deep" / "CLAUDE.md", "below the working folder\n")
    write(tmp_path / "other" / "CLAUDE.md", "a sibling folder: never loaded\n")
    write(tmp_path / ".claude" / "rules" / "style.md", "---\n---\nalways\n")
    write(tmp_path / ".claude" / "rules" / "api" / "api.md", "---\npaths: ['src/api/**']\n---\nx\n")
    report = measure_memory(tmp_path, "claude", cwd=tmp_path / "svc")
    loaded = {path: how for path, (_, how) in files(report).items()}
    assert loaded == {
        "CLAUDE.md": ALWAYS_ON,
        ".claude/CLAUDE.md": ALWAYS_ON,
        "svc/CLAUDE.md": ALWAYS_ON,
        ".claude/rules/style.md": ALWAYS_ON,
        ".claude/rules/api/api.md": ON_DEMAND,
        "svc/deep/CLAUDE.md": ON_DEMAND,
    }
    # A rule's frontmatter is the host's: its body is what is counted.
    assert files(report)[".claude/rules/style.md"][0] == count("always\n")
    assert report.total == sum(f.tokens for f in report.always_on)


def test_imports_follow_relative_absolute_and_diamonds_once(tmp_path: Path) -> None:
    write(tmp_path / "CLAUDE.md", f"@docs/a.md @docs/b.md @{tmp_path / 'abs.md'}\n")
    write(tmp_path / "docs" / "a.md", "a imports @shared.md\n")
    write(tmp_path / "docs" / "b.md", "b imports @./shared.md too\n")
    write(tmp_path / "docs" / "shared.md", "shared once\n")
    write(tmp_path / "abs.md", "absolute inside the repository\n")
    report = measure_memory(tmp_path, "claude")
    assert list(files(report)) == [
        "CLAUDE.md",
        "docs/a.md",
        "docs/shared.md",
        "docs/b.md",
        "abs.md",
    ]
    vias = {f.path: f.via for f in report.files}
    assert vias["docs/shared.md"] == "import of docs/a.md"
    assert report.findings == ()


def test_an_import_in_a_code_block_or_span_is_not_counted(tmp_path: Path) -> None:
    write(tmp_path / "CLAUDE.md", "```\n@fenced.md\n```\nand `@span.md`\n")
    write(tmp_path / "fenced.md", "must not count\n")
    write(tmp_path / "span.md", "must not count\n")
    report = measure_memory(tmp_path, "claude")
    assert list(files(report)) == ["CLAUDE.md"]


def test_broken_imports_are_m101_findings_and_never_read(tmp_path: Path) -> None:
    outside = tmp_path / "outside.md"
    write(outside, "private\n")
    repo = tmp_path / "repo"
    write(repo / "CLAUDE.md", f"@missing.md\n@../outside.md\n@{outside}\n@~/personal.md\n@a.md\n")
    write(repo / "a.md", "@b.md\n")
    write(repo / "b.md", "@a.md\n")  # a cycle back to a.md
    report = measure_memory(repo, "claude")
    assert list(files(report)) == ["CLAUDE.md", "a.md", "b.md"]
    messages = sorted(f"{f.subject} {f.message}" for f in report.findings)
    assert all(f.rule == "M101" and f.severity == "warn" for f in report.findings)
    assert messages == [
        "CLAUDE.md:1 @missing.md names no file; not read",
        "CLAUDE.md:2 @../outside.md leaves the repository (each user's own file: not gated); not read",
        f"CLAUDE.md:3 @{outside} leaves the repository (each user's own file: not gated); not read",
        "CLAUDE.md:4 @~/personal.md leaves the repository (each user's own file: not gated); not read",
        "b.md:1 @a.md is an import cycle (CLAUDE.md -> a.md -> b.md -> a.md); not read",
    ]


def test_imports_stop_at_each_hosts_depth(tmp_path: Path) -> None:
    # Claude Code: five files counting the root (four hops); gemini-cli-core: maxDepth 5
    # below the root file (six files).
    for name in ("CLAUDE.md", "GEMINI.md"):
        write(tmp_path / name, "@h1.md\n")
    for hop in range(1, 8):
        write(tmp_path / f"h{hop}.md", f"hop {hop} @h{hop + 1}.md\n")
    claude = measure_memory(tmp_path, "claude")
    assert list(files(claude)) == ["CLAUDE.md", "h1.md", "h2.md", "h3.md", "h4.md"]
    (finding,) = claude.findings
    assert finding.subject == "h4.md:1" and "is hop 5, past claude-code's 4" in finding.message
    gemini = measure_memory(tmp_path, "gemini")
    assert list(files(gemini)) == ["GEMINI.md", "h1.md", "h2.md", "h3.md", "h4.md", "h5.md"]


def test_claude_leaves_block_comments_out_and_imports_text_files_only(tmp_path: Path) -> None:
    write(
        tmp_path / "CLAUDE.md",
        "# Rules\n<!-- a maintainer's note,\nover two lines -->\nkeep <!-- inline --> this\n"
        "```html\n<!-- in a code block: kept -->\n```\n@logo.png\n@notes.txt\n",
    )
    write(tmp_path / "logo.png", "not text for the model\n")
    write(tmp_path / "notes.txt", "<!-- dropped -->\nnotes\n")
    report = measure_memory(tmp_path, "claude")
    expected = (
        "# Rules\nkeep <!-- inline --> this\n```html\n<!-- in a code block: kept -->\n```\n"
        "@logo.png\n@notes.txt\n"
    )
    assert files(report) == {
        "CLAUDE.md": (count(expected), ALWAYS_ON),
        "notes.txt": (count("notes\n"), ALWAYS_ON),
    }
    (finding,) = report.findings
    assert finding.rule == "M101" and "is not a text file claude-code imports" in finding.message
    # Codex reads AGENTS.md verbatim: a comment there is paid.
    write(tmp_path / "AGENTS.md", "<!-- note -->\nrules\n")
    assert measure_memory(tmp_path, "codex").total == count("<!-- note -->\nrules\n")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_claude_local_md_counts_only_when_committed(tmp_path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)

    git("init", "-q")
    write(tmp_path / "CLAUDE.md", "team\n")
    write(tmp_path / "CLAUDE.local.md", "mine\n")
    git("add", "CLAUDE.md")
    assert list(files(measure_memory(tmp_path, "claude"))) == ["CLAUDE.md"]
    git("add", "CLAUDE.local.md")
    assert list(files(measure_memory(tmp_path, "claude"))) == ["CLAUDE.md", "CLAUDE.local.md"]


def test_codex_chain_one_file_per_folder_override_first_blanks_skipped(tmp_path: Path) -> None:
    write(tmp_path / "AGENTS.md", "root\n")
    write(tmp_path / "a" / "AGENTS.override.md", "override wins\n")
    write(tmp_path / "a" / "AGENTS.md", "shadowed\n")
    write(tmp_path / "a" / "b" / "AGENTS.md", "   \n\n")
    write(tmp_path / "a" / "b" / "c" / "AGENTS.md", "below the working folder\n")
    report = measure_memory(tmp_path, "codex", cwd=tmp_path / "a" / "b")
    assert files(report) == {
        "AGENTS.md": (count("root\n"), ALWAYS_ON),
        "a/AGENTS.override.md": (count("override wins\n"), ALWAYS_ON),
    }


def test_codex_chain_past_the_limit_names_the_files_it_loses(tmp_path: Path) -> None:
    root_text = "# Root\n" + "Keep every change small and tested.\n" * 900  # ~32 KiB
    write(tmp_path / "AGENTS.md", root_text)
    write(tmp_path / "pkg" / "AGENTS.md", "Package rules that matter most here.\n" * 40)
    write(tmp_path / "pkg" / "api" / "AGENTS.md", "API rules.\n")
    report = measure_memory(tmp_path, "codex", cwd=tmp_path / "pkg" / "api")
    root_bytes = len(root_text.encode())
    assert root_bytes < CODEX_MAX_BYTES
    by_path = {f.path: f for f in report.files}
    assert by_path["AGENTS.md"].bytes_read == root_bytes
    cut = by_path["pkg/AGENTS.md"]
    assert cut.bytes_read == CODEX_MAX_BYTES - root_bytes and cut.cut
    assert by_path["pkg/api/AGENTS.md"].loaded == LOST
    assert cut.tokens == count((tmp_path / "pkg/AGENTS.md").read_bytes()[: cut.bytes_read].decode())
    (finding,) = report.findings
    assert finding.rule == "M102" and finding.severity == "error"
    assert finding.subject == "pkg/AGENTS.md"
    assert "the instructions of pkg/AGENTS.md, pkg/api/AGENTS.md are lost" in finding.message
    # Raising project_doc_max_bytes reads the whole chain.
    whole = measure_memory(tmp_path, "codex", cwd=tmp_path / "pkg/api", max_bytes=64 * 1024)
    assert whole.findings == () and all(not f.cut for f in whole.files)


def test_a_real_agents_md_is_one_always_on_file() -> None:
    root = FIXTURES / "wshobson-agents"
    report = measure_memory(root, "codex")
    text = (root / "AGENTS.md").read_text(encoding="utf-8")
    assert files(report) == {"AGENTS.md": (count(text), ALWAYS_ON)}


def test_gemini_copilot_and_cursor_files(tmp_path: Path) -> None:
    write(tmp_path / "GEMINI.md", "gemini root @docs/g.md\n")
    write(tmp_path / "docs" / "g.md", "imported\n")
    write(tmp_path / "web" / "GEMINI.md", "loaded at start too\n")
    write(tmp_path / ".github" / "copilot-instructions.md", "copilot\n")
    write(tmp_path / ".github/instructions/all.instructions.md", "---\napplyTo: '**'\n---\nall\n")
    write(
        tmp_path / ".github/instructions/py.instructions.md", "---\napplyTo: '**/*.py'\n---\npy\n"
    )
    write(tmp_path / ".cursor/rules/always.mdc", "---\nalwaysApply: true\n---\nalways\n")
    write(tmp_path / ".cursor/rules/maybe.mdc", "---\nglobs: '*.py'\n---\nmaybe\n")
    loaded = {
        h: {p: how for p, (_, how) in files(measure_memory(tmp_path, h)).items()}
        for h in ("gemini", "copilot", "cursor")
    }
    assert loaded["gemini"] == {
        "GEMINI.md": ALWAYS_ON,
        "docs/g.md": ALWAYS_ON,
        "web/GEMINI.md": ON_DEMAND,  # just in time: when a tool touches web/
    }
    assert loaded["copilot"] == {
        ".github/copilot-instructions.md": ALWAYS_ON,
        ".github/instructions/all.instructions.md": ALWAYS_ON,
        ".github/instructions/py.instructions.md": ON_DEMAND,
    }
    assert loaded["cursor"] == {
        ".cursor/rules/always.mdc": ALWAYS_ON,
        ".cursor/rules/maybe.mdc": ON_DEMAND,
    }


def test_gemini_reads_the_names_context_filename_adds(tmp_path: Path) -> None:
    # gemini-cli-core 0.61.0: setGeminiMdFilename adds the names to GEMINI.md (its loader,
    # run in test_gemini_oracle.py, reads all three).
    write(tmp_path / "GEMINI.md", "the default name, still read\n")
    write(tmp_path / "AGENTS.md", "shared\n")
    write(tmp_path / "CONTEXT.md", "second name\n")
    settings = tmp_path / ".gemini" / "settings.json"
    write(settings, '{"context": {"fileName": ["AGENTS.md", "CONTEXT.md"]}}')
    read = list(files(measure_memory(tmp_path, "gemini")))
    assert read == ["AGENTS.md", "CONTEXT.md", "GEMINI.md"]
    write(settings, '{"context": {"fileName": "CONTEXT.md"}}')
    assert list(files(measure_memory(tmp_path, "gemini"))) == ["CONTEXT.md", "GEMINI.md"]


def test_cursor_sources_and_apply_intelligently_descriptions(tmp_path: Path) -> None:
    description = "Use when writing SQL migrations"
    write(tmp_path / "AGENTS.md", "agents\n")
    write(tmp_path / ".cursorrules", "legacy rules\n")
    write(tmp_path / "api" / "AGENTS.md", "nested agents\n")
    write(tmp_path / ".cursor/rules/sql.mdc", f"---\ndescription: {description}\n---\nbody\n")
    write(tmp_path / "web/.cursor/rules/ui.mdc", "---\nalwaysApply: true\n---\nui\n")
    report = measure_memory(tmp_path, "cursor")
    assert files(report) == {
        "AGENTS.md": (count("agents\n"), ALWAYS_ON),
        ".cursorrules": (count("legacy rules\n"), ALWAYS_ON),
        "api/AGENTS.md": (count("nested agents\n"), ON_DEMAND),
        ".cursor/rules/sql.mdc#description": (count(description), ALWAYS_ON),
        ".cursor/rules/sql.mdc": (count("body\n"), ON_DEMAND),
        "web/.cursor/rules/ui.mdc": (count("ui\n"), ON_DEMAND),
    }


def test_crlf_checkouts_measure_what_lf_ones_do(tmp_path: Path) -> None:
    write(tmp_path / "lf" / "CLAUDE.md", "one\ntwo\n")
    (tmp_path / "crlf").mkdir()
    (tmp_path / "crlf" / "CLAUDE.md").write_bytes(b"one\r\ntwo\r\n")
    assert (
        measure_memory(tmp_path / "lf", "claude").total
        == measure_memory(tmp_path / "crlf", "claude").total
    )


def test_bad_hosts_and_working_folders_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="memory host must be one of"):
        measure_memory(tmp_path, "vim")
    with pytest.raises(UsageError, match="must be inside the repository"):
        measure_memory(tmp_path, "claude", cwd=Path(os.sep))
