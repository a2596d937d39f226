"""ARCHITECTURE.md's recipes ("Where a new thing goes") checked against the tables they extend.

Each recipe lists the files a new kind, transcript format, setting, verb or output touches;
these tests take every row of the table a recipe extends and look for it in each listed file,
so a row added without one of its files fails here, naming the row and the file — and a file
named by a recipe that does not exist fails too (a recipe that drifted from the code).
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
import typing
from pathlib import Path

import pytest

from pytest_toll.cli import VERBS
from pytest_toll.core.kinds import KINDS, KindName
from pytest_toll.core.settings import SETTINGS
from pytest_toll.gate.kinds import FINDERS, MEASURERS
from pytest_toll.report.outputs import OUTPUTS
from pytest_toll.transcripts.formats import FORMATS

REPOSITORY = Path(__file__).resolve().parents[1]
PACKAGE = REPOSITORY / "pytest_toll"
ARCHITECTURE = (REPOSITORY / "ARCHITECTURE.md").read_text(encoding="utf-8")


def _recipes() -> dict[str, str]:
    """Each recipe's text by its bold title (``A kind``, ``A verb`` …)."""
    section = ARCHITECTURE.split("## Where a new thing goes", 1)[1].split("\n## ", 1)[0]
    recipes: dict[str, str] = {}
    for item in re.split(r"\n(?=- \*\*)", section):
        title = re.match(r"\s*- \*\*(.+?)\*\*", item)
        if title:
            recipes[title.group(1)] = item
    return recipes


RECIPES = _recipes()


def _read(relative: str) -> str:
    return (REPOSITORY / relative).read_text(encoding="utf-8")


def test_every_recipe_is_there() -> None:
    assert {"An output", "A setting", "A kind", "A rule", "A transcript format", "A verb"} <= set(
        RECIPES
    )


#: A file path written in a recipe: ``core/kinds.py``, ``data/ledger.schema.json``,
#: ``tests/fixtures/agents/build.py``; templates (``cli/<verb>.py``) are left out.
_PATH = re.compile(r"`([\w./-]+\.(?:py|json|md|yaml|example))`")


@pytest.mark.parametrize("title", sorted(RECIPES))
def test_every_file_a_recipe_names_exists(title: str) -> None:
    missing = []
    for path in _PATH.findall(RECIPES[title]):
        candidates = [REPOSITORY / path, PACKAGE / path, REPOSITORY / "docs" / path]
        if not any(candidate.exists() for candidate in candidates):
            missing.append(path)
    assert not missing, f"ARCHITECTURE.md's recipe {title!r} names files that do not exist"


# --- a kind -------------------------------------------------------------------------------


def test_a_kind_is_in_every_file_its_recipe_lists() -> None:
    recipe = RECIPES["A kind"]
    for named in (
        "core/kinds.py",
        "data/ledger.schema.json",
        "data/report.schema.json",
        "gate/measurers.py",
        "gate/kinds.py",
        "gate/discovery.py",
        "toll.yaml.example",
        "docs/ledger.md",
    ):
        assert named in recipe, f"the kind recipe no longer names {named}"
    ledger_schema = json.loads(_read("pytest_toll/data/ledger.schema.json"))
    report_schema = _read("pytest_toll/data/report.schema.json")
    example = _read("toll.yaml.example")
    ledger_page = _read("docs/ledger.md")
    finders = set(FINDERS)
    for name, kind in KINDS.items():
        assert name in typing.get_args(KindName), name
        assert name in ledger_schema["properties"], f"{name}: no section in the ledger schema"
        assert f'"{name}"' in report_schema, f"{name}: not in the report schema"
        assert re.search(rf"^{name}:", example, re.MULTILINE), (
            f"{name}: no toll.yaml.example section"
        )
        assert f"| `{name}` |" in ledger_page, f"{name}: no row in docs/ledger.md's every key"
        assert (name in MEASURERS) == kind.measured_from_ledger, name
        writes_at_init = kind.measured_from_ledger and name != "calls"
        assert (name in finders) == writes_at_init, f"{name}: toll init's finder row"


# --- a transcript format ------------------------------------------------------------------


def test_a_transcript_format_is_in_every_file_its_recipe_lists() -> None:
    cli_page = _read("docs/cli/transcripts.md")
    agents_page = _read("docs/transcripts.md")
    builders = _read("tests/fixtures/agents/build.py") + _read(
        "tests/fixtures/transcripts/build.py"
    )
    for row in FORMATS:
        module = f"transcripts/formats/{row.name}.py"
        assert (PACKAGE / module).is_file(), f"{row.name}: no module {module}"
        assert f"`{module}`" in ARCHITECTURE, f"{row.name}: {module} is not on the map"
        assert row.title in cli_page, f"{row.name}: the --root help does not name {row.title}"
        assert row.title in agents_page, f"{row.name}: docs/transcripts.md does not name it"
        if row.name not in ("claude", "codex"):
            # Claude Code's and Codex's fixtures are built by tests/fixtures/transcripts/.
            assert f"\ndef {row.name}()" in builders, f"{row.name}: no fixture builder"
            assert f"| {row.title} |" in agents_page, f"{row.name}: no agents-table row"


# --- a setting ----------------------------------------------------------------------------


def test_a_setting_is_in_every_file_its_recipe_lists() -> None:
    pytest_page = _read("docs/cli/pytest.md")
    ledger_schema = json.loads(_read("pytest_toll/data/ledger.schema.json"))
    ledger_page = _read("docs/ledger.md")
    for setting in SETTINGS.values():
        assert setting.flag in pytest_page, f"{setting.name}: not on docs/cli/pytest.md"
        if setting.ini_help is not None:
            assert f"toll_{setting.name}" in pytest_page, f"{setting.name}: ini twin not shown"
        if setting.ledger_key is not None:
            assert setting.ledger_key in ledger_schema["properties"], setting.name
            assert f"| `{setting.ledger_key}` |" in ledger_page, setting.name


# --- a verb -------------------------------------------------------------------------------


def test_a_verb_is_in_every_file_its_recipe_lists() -> None:
    spec = importlib.util.spec_from_file_location(
        "cli_reference", REPOSITORY / "docs" / "gen" / "cli_reference.py"
    )
    assert spec is not None and spec.loader is not None
    generator = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = generator  # its dataclasses look their module up by name
    try:
        spec.loader.exec_module(generator)
    finally:
        del sys.modules[spec.name]
    index = _read("docs/cli/index.md")
    for verb, module, _ in VERBS:
        assert module == f"pytest_toll.cli.{verb}", f"{verb}: its module is not cli/{verb}.py"
        assert (PACKAGE / "cli" / f"{verb}.py").is_file(), verb
        groups = [group.slug for group in generator.GROUPS if verb in group.verbs]
        assert len(groups) == 1, f"{verb}: in {len(groups)} groups of docs/gen/cli_reference.py"
        # A row may name several verbs of one job: `toll scan \| repeats \| drift`.
        row = re.compile(rf"^\| `toll (?:[\w\s|\\]*\b)?{verb}\b", re.MULTILINE)
        assert row.search(index), f"{verb}: no row in docs/cli/index.md"


# --- an output ----------------------------------------------------------------------------


def test_an_output_is_in_every_file_its_recipe_lists() -> None:
    pytest_page = _read("docs/cli/pytest.md")
    for name, output in OUTPUTS.items():
        assert output.flag in pytest_page, f"{name}: not on docs/cli/pytest.md"
        assert f"toll_{name}" in pytest_page, f"{name}: its ini twin is not shown"
