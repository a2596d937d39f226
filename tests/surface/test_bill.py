"""One host's bill: its own memory and listings, each always-on item a part, and the
listing budget the host enforces (A104)."""

from __future__ import annotations

from pathlib import Path

from pytest_toll.core import tokens
from pytest_toll.core.hosts import HOSTS
from pytest_toll.skills.records import metadata_text
from pytest_toll.surface.bill import host_bill


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def skill(root: Path, name: str, description: str) -> None:
    write(
        root / ".claude/skills" / name / "SKILL.md",
        f"---\nname: {name}\ndescription: {description}\n---\nSteps.\n",
    )


def count(text: str) -> int:
    return tokens.O200kCounter().count(text)


def test_each_host_pays_only_its_own_items(tmp_path: Path) -> None:
    write(tmp_path / "CLAUDE.md", "claude rules\n<!-- a note for maintainers -->\n")
    write(tmp_path / "AGENTS.md", "codex rules\n")
    skill(tmp_path, "pdf", "Fills PDF forms. Use when a form is attached.")
    write(tmp_path / ".claude/commands/git/commit.md", "---\ndescription: Commit\n---\nDo.\n")
    write(
        tmp_path / ".claude/commands/release.md",
        "---\ndisable-model-invocation: true\ndescription: Release\n---\nTag.\n",
    )
    write(
        tmp_path / ".claude/skills/deploy/SKILL.md",
        "---\nname: deploy\ndescription: Deploys.\ndisable-model-invocation: true\n---\nGo.\n",
    )
    claude = host_bill(tmp_path, HOSTS["claude-code"])
    assert claude.parts == {
        "memory/CLAUDE.md": count("claude rules\n"),
        "skills/pdf": count(metadata_text("pdf", "Fills PDF forms. Use when a form is attached.")),
        "commands/git:commit": count("git:commit: Commit"),
    }
    codex = host_bill(tmp_path, HOSTS["codex"])
    assert codex.parts == {"memory/AGENTS.md": count("codex rules\n")}
    assert claude.total == sum(claude.parts.values())


def test_a104_names_the_descriptions_claude_code_cuts_and_drops(tmp_path: Path) -> None:
    long = "Use when asked. " + "word " * 317  # 1,600 characters, cut at 1,536
    skill(tmp_path, "alpha", long.strip())
    for name in ("beta", "delta", "gamma"):
        skill(tmp_path, name, f"Does {name} work. Use when {name} is asked for.")
    parts = host_bill(tmp_path, HOSTS["claude-code"]).parts
    # A budget (1% of the window) that holds alpha and beta, in listing order, and no more.
    budget = parts["skills/alpha"] + parts["skills/beta"] + 1
    bill = host_bill(tmp_path, HOSTS["claude-code"], window=budget * 100)
    messages = [(f.subject, f.message) for f in bill.findings if f.rule == "A104"]
    assert messages == [
        ("alpha", "its description is 1,600 characters; claude-code lists the first 1,536: "
         "the rest never reaches the model"),
        ("delta", f"the skill listing is {sum(parts.values()):,} tokens, over claude-code's "
         f"budget of {budget:,}: it drops descriptions (keeping the most used ones); past the "
         "budget in listing order: delta, gamma"),
    ]  # fmt: skip
    # Codex knows no such budget: no A104 for the same skills folder.
    assert not [f for f in host_bill(tmp_path, HOSTS["codex"]).findings if f.rule == "A104"]
