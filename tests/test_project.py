"""The project's own promises: README set-up commands, CI calling them, packaging."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def readme_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    first_block = re.search(r"```sh\n(.*?)```", readme, re.S)
    assert first_block is not None, "README must open with a sh code block"
    assert readme.index("```sh") < readme.index("\n## "), "set-up commands come first"
    return [line for line in first_block.group(1).splitlines() if line.strip()]


def test_readme_opens_with_exactly_two_commands() -> None:
    commands = readme_commands()
    assert len(commands) == 2
    assert "pytest" in commands[1] and "[test]" in commands[1]


def test_ci_runs_the_readme_test_command_verbatim() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    assert readme_commands()[1] in ci.splitlines()
    assert "set -euo pipefail" in ci
    assert "ruff check" in ci and "ruff format --check" in ci
    # mypy with no arguments checks what pyproject names: the package, tests and bench.
    assert ".venv/bin/mypy\n" in ci


def test_vocabulary_and_type_marker_ship_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/*"' in pyproject and '"py.typed"' in pyproject
    assert (ROOT / "pytest_toll" / "py.typed").exists()
    assert (ROOT / "pytest_toll" / "data" / "o200k_base.tiktoken.gz").exists()
