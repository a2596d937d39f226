"""What a skill really loads, named the way skill authors name files (issue #25, items 4-5).

Code spans, placeholders, host variables, sibling skills and URLs (item 4); every named file
whatever its subfolder, transitively, and scripts kept apart as the executed part (item 5).
The real folders under tests/fixtures/real_skills are copied unchanged from public
repositories (see its README for repository and commit).
"""

from __future__ import annotations

from pathlib import Path

from pytest_toll.core import tokens
from pytest_toll.core.findings import ERROR, INFO, WARN
from pytest_toll.gate.measurers import skill_levels
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.references import find_mentions
from tests.skills.skill_folders import rules, write_skill

REAL = Path(__file__).resolve().parents[1] / "fixtures" / "real_skills"


def _paths(report_skill: object) -> list[str]:
    return [reference.path for reference in getattr(report_skill, "references", ())]


# --- item 4: references the way authors write them --------------------------------------


def test_links_inside_code_spans_and_fenced_blocks_are_not_references(tmp_path: Path) -> None:
    body = (
        "Never emit `[#123](../../pull/123)` or `[notes](references/notes.md)` in a PR.\n"
        "```markdown\n"
        "See [the guide](references/guide.md) and ![logo](assets/logo.png).\n"
        "my-skill/\n  references/layout.md\n  scripts/build.sh\n"
        "```\n"
        "Read [the real one](references/real.md).\n"
    )
    folder = write_skill(tmp_path / "pr-notes", body=body, files={"references/real.md": "real"})
    report = measure_skills(folder)
    assert rules(report) == []
    assert _paths(report.skills[0]) == ["references/real.md"]


def test_a_missing_file_named_in_inline_code_is_still_reported(tmp_path: Path) -> None:
    folder = write_skill(tmp_path / "runner", body="Run `scripts/gone.sh` first.\n")
    assert rules(measure_skills(folder)) == [
        ("S106", ERROR, "runner", "reference 'scripts/gone.sh' does not exist in the skill folder")
    ]


def test_placeholders_are_resolved_against_the_folder(tmp_path: Path) -> None:
    body = (
        "Each agent gets `references/program_<strategy>.md`.\n"
        "Per language read `{lang}/guide/README.md`; managed: shared/agents-*.md.\n"
        "Start from `templates/paper.{tex,md}`; more in references/extra/….\n"
    )
    files = {
        "references/program_depth.md": "depth strategy",
        "references/program_lr.md": "lr strategy",
        "python/guide/README.md": "python guide",
        "go/guide/README.md": "go guide",
        "shared/agents-core.md": "core",
        "shared/agents-tools.md": "tools",
        "shared/unrelated.md": "never named",
        "templates/paper.tex": "tex",
        "templates/paper.md": "md",
        "references/extra/one.md": "one",
    }
    folder = write_skill(tmp_path / "swarm", body=body, files=files)
    skill = measure_skills(folder).skills[0]
    named = sorted(path for path in files if path != "shared/unrelated.md")
    assert _paths(skill) == named
    assert skill.references_total == sum(tokens.count(files[path]) for path in named)


def test_a_placeholder_naming_no_file_is_a_note_never_an_error(tmp_path: Path) -> None:
    body = "Copy `references/program_<strategy>.md` and write `.research/<slug>/notes.md`.\n"
    report = measure_skills(write_skill(tmp_path / "empty", body=body))
    assert rules(report) == [
        (
            "S106",
            INFO,
            "empty",
            "'references/program_<strategy>.md' is a placeholder that names no file in the "
            "skill folder; not counted",
        )
    ]


def test_host_variables_are_resolved_where_they_can_be(tmp_path: Path) -> None:
    plugin = tmp_path / "plugin"
    (plugin / ".claude-plugin").mkdir(parents=True)
    (plugin / ".claude-plugin" / "plugin.json").write_text('{"name": "p"}', encoding="utf-8")
    (plugin / "scripts").mkdir()
    (plugin / "scripts" / "init.sh").write_text("echo init\n", encoding="utf-8")
    body = (
        "Read ${SKILL_DIR}/references/a.md, then\n"
        "bash ${CLAUDE_PLUGIN_ROOT}/skills/tool/scripts/run.sh and\n"
        "bash ${CLAUDE_PLUGIN_ROOT}/scripts/init.sh, also plain `scripts/init.sh`.\n"
        "Output lands in ${OUT_DIR}/report.md and $HOME/x.md.\n"
    )
    folder = write_skill(
        plugin / "skills" / "tool",
        body=body,
        files={"references/a.md": "aaa", "scripts/run.sh": "echo run\n"},
    )
    report = measure_skills(folder)
    skill = report.skills[0]
    assert _paths(skill) == ["references/a.md"]
    assert [script.path for script in skill.executed] == ["scripts/run.sh"]
    assert rules(report) == [
        (
            "S106",
            INFO,
            "tool",
            "${CLAUDE_PLUGIN_ROOT}/scripts/init.sh: a file of the plugin, outside the skill "
            "folder; not counted",
        ),
        (
            "S106",
            INFO,
            "tool",
            "'scripts/init.sh' is a file of the plugin, outside the skill folder; not counted",
        ),
    ]


def test_a_plugin_variable_without_a_plugin_is_a_note(tmp_path: Path) -> None:
    body = "bash ${CLAUDE_PLUGIN_ROOT}/scripts/init.sh\n"
    report = measure_skills(write_skill(tmp_path / "loose", body=body))
    assert [(f.rule, f.severity) for f in report.findings] == [("S106", INFO)]
    assert "no plugin root" in report.findings[0].message


def test_a_link_to_a_sibling_skill_is_a_cross_skill_reference(tmp_path: Path) -> None:
    write_skill(tmp_path / "docs-helper")
    folder = write_skill(
        tmp_path / "probe",
        body="Use [$docs-helper](../docs-helper/SKILL.md) first; never [x](../nowhere/x.md).\n",
    )
    report = measure_skills(folder)
    assert rules(report) == [
        (
            "S106",
            ERROR,
            "probe",
            "reference '../nowhere/x.md' points outside the skill folder (../)",
        ),
        (
            "S106",
            INFO,
            "probe",
            "'../docs-helper/SKILL.md' is a cross-skill reference to 'docs-helper' "
            "(measured as its own skill)",
        ),
    ]


def test_urls_are_not_files(tmp_path: Path) -> None:
    body = (
        "[cdn](//cdn.example.com/lib.js) [docs](https://example.com/references/a.md)\n"
        "See www.example.com/references/b.md and git@github.com:o/r/scripts/x.sh.\n"
        "<https://example.com/assets/c.png>\n"
    )
    report = measure_skills(write_skill(tmp_path / "webby", body=body))
    assert rules(report) == []
    assert report.skills[0].references == ()


def test_the_real_openai_agents_skills_have_no_false_errors() -> None:
    report = measure_skills(REAL / "openai-agents-python" / "skills")
    assert [f for f in report.findings if f.rule == "S106" and f.severity == ERROR] == []
    probe = {skill.name: skill for skill in report.skills}["runtime-behavior-probe"]
    assert any("cross-skill reference to 'openai-knowledge'" in note for note in probe.notes)
    assert _paths(probe) == [
        "references/error-cases.md",
        "references/openai-runtime-patterns.md",
        "references/reporting-format.md",
        "references/validation-matrix.md",
        "templates/python_probe.py",
    ]


def test_the_real_auto_research_swarm_skill_resolves_its_placeholders_and_plugin() -> None:
    report = measure_skills(REAL / "auto-research" / "skills")
    skill = report.skills[0]
    # (Its dotted name is a real S101 finding; nothing it names is an error.)
    assert [f for f in report.findings if f.rule == "S106" and f.severity == ERROR] == []
    assert [path for path in _paths(skill) if "program_" in path] == [
        "references/program_arch_explore.md",
        "references/program_batch_explore.md",
        "references/program_depth_explore.md",
        "references/program_lr_explore.md",
        "references/program_random_restart.md",
    ]
    assert any("swarm_orchestrate.sh" in note for note in skill.notes)


# --- item 5: what a skill really loads --------------------------------------------------


def test_every_named_file_counts_whatever_its_subfolder_and_transitively(tmp_path: Path) -> None:
    files = {
        "shared/models.md": "Models. For prices see shared/pricing.md and ../FORMS.md.",
        "shared/pricing.md": "Prices. Back to shared/models.md (a cycle is harmless).",
        "FORMS.md": "The forms: [field list](forms/fields.md).",
        "forms/fields.md": "name, date",
        "shared/unnamed.md": "never named by anything loaded",
    }
    body = "Read `shared/models.md` for the model table, and FORMS.md for forms.\n"
    folder = write_skill(tmp_path / "api", body=body, files=files)
    skill = measure_skills(folder).skills[0]
    loaded = ["FORMS.md", "forms/fields.md", "shared/models.md", "shared/pricing.md"]
    assert _paths(skill) == loaded
    assert skill.references_total == sum(tokens.count(files[path]) for path in loaded)
    # Files named only by a reference are not judged for depth (SKILL.md did not name them).
    assert dict(skill.reference_depths) == {"shared/models.md": 1, "FORMS.md": 0}


def test_scripts_to_run_are_the_executed_part_not_loaded_text(tmp_path: Path) -> None:
    files = {
        "scripts/convert.py": "print('convert')\n" * 50,
        "scripts/check.sh": "echo check\n",
        "scripts/example.py": "# read me for the API shape\n",
    }
    body = (
        "Run `python scripts/convert.py in.docx`.\n"
        "```bash\nbash scripts/check.sh\n```\n"
        "Read scripts/example.py before writing your own.\n"
    )
    folder = write_skill(tmp_path / "office", body=body, files=files)
    report = measure_skills(folder)
    skill = report.skills[0]
    assert _paths(skill) == ["scripts/example.py"]
    assert [script.path for script in skill.executed] == ["scripts/check.sh", "scripts/convert.py"]
    executed = tokens.count(files["scripts/check.sh"]) + tokens.count(files["scripts/convert.py"])
    assert skill.executed_total == executed
    assert report.totals["references"] == tokens.count(files["scripts/example.py"])
    assert report.totals["executed"] == executed
    assert skill_levels(report, "skills.office") == {
        "metadata": skill.metadata,
        "body": skill.body,
        "references": skill.references_total,
        "executed": executed,
    }


def test_a_skill_without_scripts_keeps_its_three_levels(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path / "plain", body="Read references/a.md.\n", files={"references/a.md": "a"}
    )
    report = measure_skills(folder)
    assert set(report.totals) == {"metadata", "body", "references"}
    assert "executed" not in report.skills[0].as_dict()
    assert set(skill_levels(report, "skills.plain")) == {"metadata", "body", "references"}


def test_the_claude_api_layout_counts_its_shared_and_language_files(tmp_path: Path) -> None:
    # The layout of anthropics/skills' claude-api (which measured "references 0" before):
    # shared/*.md named in inline code and {lang}/claude-api/*.md as a placeholder.
    files = {
        "shared/models.md": "model ids " * 40,
        "shared/prompt-caching.md": "caching " * 40,
        "shared/managed-agents-core.md": "core " * 20,
        "shared/managed-agents-tools.md": "tools " * 20,
        "python/claude-api/README.md": "python client " * 10,
        "go/claude-api/README.md": "go client " * 10,
    }
    body = (
        "Read `shared/models.md` for ids; caching: `shared/prompt-caching.md`.\n"
        "Managed agents: the `shared/managed-agents-*.md` files.\n"
        "→ Read only `{lang}/claude-api/README.md`\n"
    )
    folder = write_skill(tmp_path / "claude-api", body=body, files=files)
    report = measure_skills(folder)
    assert _paths(report.skills[0]) == sorted(files)
    assert report.totals["references"] == sum(tokens.count(text) for text in files.values())
    assert rules(report) == [
        (
            "S106",
            WARN,
            "claude-api",
            "reference '{lang}/claude-api/README.md' is nested 2 folders deep, over 1",
        )
    ]


def test_a_symlinked_folder_in_a_placeholder_match_is_not_followed_out(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.md").write_text("secret", encoding="utf-8")
    folder = write_skill(
        tmp_path / "globby", body="See `references/*.md`.\n", files={"references/a.md": "a"}
    )
    (folder / "references" / "link").symlink_to(outside, target_is_directory=True)
    (folder / "references" / "b.md").symlink_to(outside / "secret.md")
    report = measure_skills(folder)
    assert _paths(report.skills[0]) == ["references/a.md"]
    assert rules(report) == []


def test_mentions_say_how_each_file_was_named() -> None:
    forms = {
        (mention.target, mention.form, mention.strict)
        for mention in find_mentions(
            "[a](references/a.md) `scripts/x.sh` ${SKILL_DIR}/b.md `{lang}/c.md` FORMS.md\n"
        )
    }
    assert forms == {
        ("references/a.md", "link", True),
        ("scripts/x.sh", "path", True),
        ("b.md", "host", False),
        ("{lang}/c.md", "placeholder", False),
    }  # FORMS.md alone is found from the folder's listing, not from the text


def test_the_real_fixture_copies_keep_their_licence() -> None:
    for repository in ("openai-agents-python", "auto-research"):
        assert "MIT License" in (REAL / repository / "LICENSE").read_text(encoding="utf-8")


def test_a_file_named_alone_is_found_whatever_its_case(tmp_path: Path) -> None:
    # anthropics/skills' pdf skill: "see REFERENCE.md", "read FORMS.md" of reference.md and
    # forms.md (measured "references 0" before).
    files = {"reference.md": "advanced usage", "forms.md": "form filling", "notes.md": "unnamed"}
    body = "For advanced features see REFERENCE.md. To fill a form, read FORMS.md.\n"
    skill = measure_skills(write_skill(tmp_path / "pdf", body=body, files=files)).skills[0]
    assert _paths(skill) == ["forms.md", "reference.md"]
