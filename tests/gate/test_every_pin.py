"""Issue #36 item 1: ``toll init`` pins every part the gate measures (a skill's ``executed``
scripts too), and ``--toll-update`` names every pin it writes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_toll.cli import main
from pytest_toll.gate.ledger import ledger_from_text
from tests.plugin.inner import QUIET

SKILL = """---
name: build-report
description: Build the weekly report from the metrics export. Use when asked for the weekly report.
---

# Weekly report

Run `python scripts/build.py` and paste its output under "This week".
"""


def write_skill(root: Path) -> Path:
    folder = root / "skills" / "build-report"
    (folder / "scripts").mkdir(parents=True)
    (folder / "SKILL.md").write_text(SKILL, encoding="utf-8")
    script = folder / "scripts" / "build.py"
    script.write_text('print("rows")\n' * 20, encoding="utf-8")
    return script


def test_init_pins_a_skills_executed_scripts_and_the_gate_fails_their_growth(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = write_skill(pytester.path)
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    ledger = ledger_from_text((pytester.path / "toll.yaml").read_text("utf-8"), Path("toll.yaml"))
    pin = ledger.data["skills"]["build-report"]["pin"]
    assert set(pin) == {"metadata", "body", "references", "executed"}
    assert pin["executed"] > 0
    assert pytester.runpytest("--toll", "toll.yaml", *QUIET).ret == 0
    script.write_text(script.read_text("utf-8") * 3, encoding="utf-8")
    grown = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert grown.ret == 1
    grown.stdout.fnmatch_lines(["*regressed: executed +* over its pin*"])


def test_an_update_names_an_executed_pin_it_adds_to_an_untouched_skill(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_skill(pytester.path)
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    path = pytester.path / "toll.yaml"
    text = path.read_text("utf-8")
    ledger = ledger_from_text(text, path)
    executed = ledger.data["skills"]["build-report"]["pin"]["executed"]
    # A ledger made before `executed` was pinned: the other levels as measured, no executed.
    path.write_text(text.replace(f"      executed: {executed}\n", ""), encoding="utf-8")
    assert (
        "executed"
        not in ledger_from_text(path.read_text("utf-8"), path).data["skills"]["build-report"]["pin"]
    )
    updated = pytester.runpytest("--toll", "toll.yaml", "--toll-update", *QUIET)
    assert updated.ret == 0, updated.stdout.str()
    updated.stdout.fnmatch_lines(
        ["*ledger updated: toll.yaml*", f"*skills::build-report: executed new pin {executed:,}*"]
    )
    after = ledger_from_text(path.read_text("utf-8"), path)
    assert after.data["skills"]["build-report"]["pin"]["executed"] == executed


def test_a_references_regression_names_the_files_behind_it(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """#36 item 6f: init pins each file behind the references, so the message names the file
    that grew, its pin and its measure; a ledger without the file pins says which files
    hold the part now, largest first, as before."""
    folder = pytester.path / "skills" / "guide"
    (folder / "references").mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: guide\ndescription: Answer questions about the house style. Use when asked "
        "about style.\n---\nRead [style](references/style.md) and [terms](references/terms.md).\n",
        encoding="utf-8",
    )
    (folder / "references" / "style.md").write_text("Write short sentences.\n", "utf-8")
    terms = folder / "references" / "terms.md"
    terms.write_text("A toll is a token cost.\n", "utf-8")
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    terms.write_text("A toll is a token cost paid on every request.\n", "utf-8")
    ledger = (pytester.path / "toll.yaml").read_text("utf-8")
    files = ledger_from_text(ledger, Path("toll.yaml")).data["skills"]["guide"]["files"]
    assert set(files["references"]) == {"references/style.md", "references/terms.md"}
    grown = pytester.runpytest("--toll", "toll.yaml", "--toll-json", "r.json", *QUIET)
    assert grown.ret == 1
    pinned = files["references"]["references/terms.md"]
    grown.stdout.fnmatch_lines(
        [f"*regressed: references +* over its pin *: references/terms.md {pinned} → *"]
    )
    # The same growth against a ledger written before files were pinned.
    head, _, rest = ledger.partition("    files:")
    tail = rest.split("\n")
    kept = [line for line in tail[1:] if not line.startswith("      ")]
    (pytester.path / "toll.yaml").write_text(head + "\n".join(kept), encoding="utf-8")
    before = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert before.ret == 1
    before.stdout.fnmatch_lines(
        [
            "*regressed: references +* over its pin * (now in references/terms.md *, "
            "references/style.md *)*"
        ]
    )
