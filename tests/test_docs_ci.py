"""docs/ci.md and docs/releasing.md agree with what ships: each permissions block with the
workflow job it names, the exit-code table with the codes each verb's code returns, and no
placeholder a reader would copy without noticing."""

from __future__ import annotations

import ast
import importlib
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_toll.cli import EXIT_BROKEN_PIPE, EXIT_CANNOT_JUDGE, VERBS

ROOT = Path(__file__).resolve().parent.parent
CI_DOC = ROOT / "docs" / "ci.md"
RELEASING_DOC = ROOT / "docs" / "releasing.md"
SHIPPED_WORKFLOWS = (
    ".github/workflow-templates/toll.yml",
    ".github/workflow-templates/toll-sharded.yml",
    ".github/workflows/release.yml",
)
PERMISSIONS_BLOCK = re.compile(r"```yaml\n# (\S+), job (\S+)\n(.*?)```", re.S)
NOT_RETURNED = "—"


def load(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return data


def documented_permissions() -> dict[tuple[str, str], object]:
    blocks: dict[tuple[str, str], object] = {}
    for doc in (CI_DOC, RELEASING_DOC):
        for file, job, body in PERMISSIONS_BLOCK.findall(doc.read_text(encoding="utf-8")):
            assert (file, job) not in blocks, f"{file} job {job} documented twice"
            blocks[(file, job)] = yaml.safe_load(body)["permissions"]
    return blocks


def test_one_permissions_block_per_shipped_job_matching_the_workflow() -> None:
    documented = documented_permissions()
    shipped = set()
    for file in SHIPPED_WORKFLOWS:
        workflow = load(ROOT / file)
        for name, job in workflow["jobs"].items():
            shipped.add((file, name))
            effective = job.get("permissions", workflow.get("permissions"))
            assert documented.get((file, name)) == effective, f"{file} job {name}"
    assert set(documented) == shipped


def table_rows(doc: str) -> dict[str, list[str]]:
    section = doc.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        match = re.match(r"\| `([^`]+)` \|(.*)\|$", line)
        if match:
            rows[match.group(1)] = [cell.strip() for cell in match.group(2).split("|")]
    return rows


def documented_codes(cells: list[str]) -> set[int]:
    """Columns 0, 1 and 2 when their cell says anything; the "other" cell's leading numbers."""
    zero, one, two, other = cells
    codes = {code for code, cell in ((0, zero), (1, one), (2, two)) if cell != NOT_RETURNED}
    if other != NOT_RETURNED:
        codes |= {int(item.split()[0]) for item in other.split("·")}
    return codes


def returned_codes(module_name: str) -> set[int]:
    """Every ``EXIT_*`` constant the verb's module reads, and 2 (the ``toll`` command turns
    anything a verb raises into "could not judge")."""
    module = importlib.import_module(module_name)
    source = Path(str(module.__file__)).read_text(encoding="utf-8")
    codes = {EXIT_CANNOT_JUDGE}
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Name)
            and isinstance(node.ctx, ast.Load)
            and re.fullmatch(r"EXIT_[A-Z_]+", node.id)
        ):
            codes.add(int(getattr(module, node.id)))
    return codes


@pytest.mark.parametrize(("verb", "module_name"), [(verb, module) for verb, module, _ in VERBS])
def test_the_exit_code_table_says_what_each_verb_returns(verb: str, module_name: str) -> None:
    rows = table_rows(CI_DOC.read_text(encoding="utf-8"))
    assert f"toll {verb}" in rows, f"docs/ci.md's exit-code table has no row for toll {verb}"
    assert documented_codes(rows[f"toll {verb}"]) == returned_codes(module_name)


def test_the_exit_code_table_has_pytest_and_only_real_verbs() -> None:
    doc = CI_DOC.read_text(encoding="utf-8")
    rows = table_rows(doc)
    # pytest's own codes; newer pytest has more (6, --max-warnings, came with 9.2).
    pytest_codes = documented_codes(rows.pop("pytest --toll"))
    assert {int(code) for code in pytest.ExitCode} <= pytest_codes <= set(range(7))
    assert set(rows) == {f"toll {verb}" for verb, _, _ in VERBS}
    assert f"`{EXIT_BROKEN_PIPE}` when the reader" in doc


def test_the_cli_overview_names_every_code_beyond_0_1_2() -> None:
    """The "Exit codes" paragraph of the CLI overview (docs/cli/index.md, where the README
    points for the reference) names each code a verb returns beyond 0, 1 and 2, and links the
    full table."""
    overview = (ROOT / "docs" / "cli" / "index.md").read_text(encoding="utf-8")
    paragraph = overview.split("Exit codes", 1)[1].split("\n\n", 1)[0]
    for verb, module_name, _ in VERBS:
        for code in sorted(returned_codes(module_name) - {0, 1, 2}):
            assert re.search(rf"`toll {verb}`[^.]*`{code}`", paragraph), (verb, code)
    assert "(../ci.md#exit-codes)" in paragraph


def test_no_placeholder_is_left_for_a_reader_to_copy_unnoticed() -> None:
    files = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    files += sorted((ROOT / ".github").rglob("*.yml"))
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert not re.search(r"\bOWNER\b|\bREPO\b|@REF\b", text), path
        # Every snippet that names the action says what to replace, on that line.
        for line in text.splitlines():
            if "<owner>/pytest-toll/.github/actions/toll@<tag>" in line and path.suffix == ".md":
                assert "replace <owner> and <tag>" in line, (path, line)
