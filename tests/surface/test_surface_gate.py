"""The issue's acceptance: ``toll init`` in a repository with a CLAUDE.md importing two files,
a rule, an AGENTS.md, a subagent and a command; ``pytest --toll`` passes straight after;
growth of an imported file, a subagent's or a command's description fails naming it; an
import in a code block is never counted; an AGENTS.md chain past 32 KiB is a finding."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli import run_toll
from tests.plugin.inner import QUIET

pytest_plugins = ["pytester"]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "surface"


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def repository(pytester: pytest.Pytester) -> pytest.Pytester:
    root = pytester.path
    write(
        root / "CLAUDE.md",
        "# Shop\n\nConventions: @docs/style.md and testing: @docs/testing.md\n\n"
        "```markdown\nAn example import, not ours: @docs/example.md\n```\n",
    )
    write(root / "docs/style.md", "Four spaces. Type hints everywhere.\n")
    write(root / "docs/testing.md", "Run pytest -q before every commit.\n")
    write(root / "docs/example.md", "If this were counted the example would cost tokens.\n" * 20)
    write(root / ".claude/rules/commits.md", "Small commits with honest messages.\n")
    write(root / "web/CLAUDE.md", "Loaded only when the agent reads in web/.\n")
    write(root / "AGENTS.md", "# Shop\nRun `make test`.\n")
    write(
        root / ".claude/agents/reviewer.md",
        "---\nname: reviewer\ndescription: Reviews diffs. Use when a change is ready.\n---\n"
        "You review code for bugs.\n",
    )
    write(
        root / ".claude/commands/ship.md",
        "---\ndescription: Ship the release\n---\nTag, build and publish.\n",
    )
    return pytester


def grow(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


def test_init_pins_each_piece_and_the_gate_names_what_grew(repository: pytest.Pytester) -> None:
    root = repository.path
    done = run_toll("init", cwd=root)
    assert done.returncode == 0, done.stderr
    assert "2 memory, 1 agents, 1 commands" in done.stdout
    ledger = (root / "toll.yaml").read_text(encoding="utf-8")
    for line in (
        "memory:",
        "  claude:",
        "      CLAUDE.md: ",
        '      "docs/style.md": ',
        '      "docs/testing.md": ',
        '      ".claude/rules/commits.md": ',
        "  codex:",
        "    pin: {AGENTS.md: ",
        "agents:\n  reviewer:\n",
        "commands:\n  ship:\n",
    ):
        assert line in ledger, line
    # The example inside the fenced block is not an import: never pinned, never counted;
    # the nested web/CLAUDE.md is on demand: shown, not pinned.
    assert "example.md" not in ledger and "web/CLAUDE.md" not in ledger

    result = repository.runpytest(*QUIET, "--toll", "--toll-markdown=report.md")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "memory::claude: not in the fixed cost: web/CLAUDE.md * (on-demand)",
            # init wrote hosts: entries: the figure is one host's, the others beside it.
            "fixed cost per request (claude-code): *; other hosts: codex *",
        ]
    )
    markdown = (root / "report.md").read_text(encoding="utf-8")
    for row in ("memory::claude", "memory::codex", "agents::reviewer", "commands::ship"):
        assert f"| {row} |" in markdown, row
    assert "### Memory files outside the fixed cost" in markdown
    assert "- **memory::claude**: web/CLAUDE.md " in markdown

    grow(root / "docs/style.md", "Four spaces.", "Four spaces, never tabs, not even in Makefiles.")
    result = repository.runpytest(*QUIET, "--toll")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAILED toll.yaml::memory::claude - regressed: docs/style.md +*"])

    grow(root / "docs/style.md", "Four spaces, never tabs, not even in Makefiles.", "Four spaces.")
    grow(
        root / ".claude/agents/reviewer.md",
        "Reviews diffs.",
        "Reviews diffs line by line for bugs, races and leaks.",
    )
    grow(root / ".claude/commands/ship.md", "Ship the release", "Ship the release to every index")
    result = repository.runpytest(*QUIET, "--toll")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAILED toll.yaml::agents::reviewer - regressed: metadata +* over its pin *",
            "FAILED toll.yaml::commands::ship - regressed: metadata +* over its pin *",
        ]
    )
    # The memory entry is back at its pins.
    assert "FAILED toll.yaml::memory" not in result.stdout.str()


def test_a_new_import_is_growth_the_gate_names(repository: pytest.Pytester) -> None:
    root = repository.path
    assert run_toll("init", cwd=root).returncode == 0
    write(root / "docs/deploy.md", "Deploy with make release.\n")
    grow(
        root / "CLAUDE.md", "testing: @docs/testing.md", "testing: @docs/testing.md @docs/deploy.md"
    )
    result = repository.runpytest(*QUIET, "--toll")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*docs/deploy.md +* (new, not pinned)*"])


def test_an_agents_md_chain_past_32_kib_is_a_finding(repository: pytest.Pytester) -> None:
    root = repository.path
    write(root / "AGENTS.md", "Keep every change small, reviewed and tested.\n" * 800)
    write(root / "api/AGENTS.md", "API handlers validate input first.\n")
    write(
        root / "toll.yaml",
        "version: 1\nmemory:\n  codex:\n    cwd: api\n",
    )
    result = repository.runpytest(*QUIET, "--toll")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*M102 error AGENTS.md: the AGENTS.md chain is *, over project_doc_max_bytes "
            "(32,768): Codex never reads the rest, so the instructions of AGENTS.md, "
            "api/AGENTS.md are lost*",
        ]
    )


def test_update_ratchets_file_pins_and_drops_a_removed_import(repository: pytest.Pytester) -> None:
    root = repository.path
    assert run_toll("init", cwd=root).returncode == 0
    grow(root / "docs/style.md", "Four spaces. Type hints everywhere.", "Four spaces.")
    grow(root / "CLAUDE.md", " and testing: @docs/testing.md", "")
    result = repository.runpytest(*QUIET, "--toll", "--toll-update")
    assert result.ret == 0, result.stdout.str()
    ledger = (root / "toll.yaml").read_text(encoding="utf-8")
    assert '"docs/testing.md"' not in ledger and '"docs/style.md": ' in ledger
    assert "# human ceiling: raise or lower it on purpose" in ledger  # comments kept
    assert repository.runpytest(*QUIET, "--toll").ret == 0


def test_init_on_a_real_marketplace_pins_its_plugin(pytester: pytest.Pytester) -> None:
    shutil.copytree(FIXTURES / "wshobson-agents", pytester.path, dirs_exist_ok=True)
    done = run_toll("init", cwd=pytester.path)
    assert done.returncode == 0, done.stderr
    assert "1 memory" in done.stdout and "1 plugins" in done.stdout
    ledger = (pytester.path / "toll.yaml").read_text(encoding="utf-8")
    assert 'plugins:\n  git-pr-workflows:\n    path: "plugins/git-pr-workflows"\n' in ledger
    assert '      "agents/git-pr-workflows-code-reviewer": ' in ledger
    assert '      "commands/onboard": ' in ledger
    result = pytester.runpytest(*QUIET, "--toll")
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["ok  plugins::git-pr-workflows *"])


def test_a_memory_entry_without_a_known_host_is_an_error_naming_it(
    pytester: pytest.Pytester,
) -> None:
    write(pytester.path / "CLAUDE.md", "rules\n")
    write(pytester.path / "toll.yaml", "version: 1\nmemory:\n  team: {}\n  claude: {cwd: gone}\n")
    result = pytester.runpytest(*QUIET, "--toll", "-rf")
    assert result.ret == 1
    text = result.stdout.str()
    assert "memory.team: host 'team' is not one of claude, codex, gemini, copilot, cursor" in text
    assert "gone: the working folder does not exist" in text


def test_a_line_added_past_codexs_cut_is_a_regression_never_improved(
    pytester: pytest.Pytester,
) -> None:
    # Issue 36, item 3: a chain already past 32 KiB loses more instructions with every line
    # added before the cut; the tokens past the cut are pinned and gated on their own.
    root = pytester.path
    write(root / "AGENTS.md", "Keep every change small, reviewed and tested.\n" * 800)
    write(root / "api/AGENTS.md", "API handlers validate input first.\n")
    write(root / "toll.yaml", "version: 1\nrules: {M102: warn}\nmemory:\n  codex:\n    cwd: api\n")
    assert pytester.runpytest(*QUIET, "--toll", "--toll-update").ret == 0
    assert "(past the cut): " in (root / "toll.yaml").read_text(encoding="utf-8")
    agents = root / "AGENTS.md"
    agents.write_text("Name the owner.\n" + agents.read_text(encoding="utf-8"), encoding="utf-8")
    result = pytester.runpytest(*QUIET, "--toll")
    assert result.ret == 1, result.stdout.str()
    text = result.stdout.str()
    assert "IMPROVED" not in text and "improved by" not in text
    result.stdout.fnmatch_lines(["*(past the cut) +* over its pin*", "REGRESSED  memory::codex *"])


def test_the_fixed_cost_is_per_host_and_a_new_skill_or_command_fails(
    repository: pytest.Pytester,
) -> None:
    # Issue 35: the fixed cost is one host's, never a sum across hosts; issue 36, item 2: a
    # new always-on item (a skill, a command) is growth of the pinned fixed cost and fails.
    root = repository.path
    write(
        root / ".claude/skills/pdf/SKILL.md",
        "---\nname: pdf\ndescription: Fills PDF forms. Use when a form is attached.\n---\nSteps.\n",
    )
    done = run_toll("init", cwd=root)
    assert done.returncode == 0, done.stderr
    ledger = (root / "toll.yaml").read_text(encoding="utf-8")
    assert "\nhosts:\n  claude-code:\n" in ledger and "\n  codex:\n" in ledger
    assert '"skills/pdf": ' in ledger and '"commands/ship": ' in ledger
    report_path = root / "report.json"
    result = repository.runpytest(*QUIET, "--toll", f"--toll-json={report_path}")
    assert result.ret == 0, result.stdout.str()
    fixed = json.loads(report_path.read_text(encoding="utf-8"))["fixed_cost"]
    claude, codex = fixed["hosts"]["claude-code"], fixed["hosts"]["codex"]
    assert fixed["host"] == "claude-code" and fixed["tokens"] == claude["resident"]
    assert 0 < codex["resident"] < claude["resident"]
    result.stdout.fnmatch_lines(["fixed cost per request (claude-code): *; other hosts: codex *"])
    write(
        root / ".claude/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploys. Use when asked to ship.\n---\nRun it.\n",
    )
    write(root / ".claude/commands/git/commit.md", "---\ndescription: Commit\n---\nCommit.\n")
    for strict in ((), ("--toll-strict",)):
        result = repository.runpytest(*QUIET, "--toll", *strict)
        assert result.ret == 1, result.stdout.str()
        result.stdout.fnmatch_lines(
            ["*hosts::claude-code*", "*skills/deploy +* (new, not pinned)*"], consecutive=False
        )
        assert "commands/git:commit +" in result.stdout.str()
