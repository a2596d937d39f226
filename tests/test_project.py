"""The project's own promises: README set-up commands, CI calling them, packaging."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_toll._version import __version__

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
    assert ci.splitlines()[-1] == readme_commands()[1]
    assert "set -euo pipefail" in ci
    assert "ruff check" in ci and "ruff format --check" in ci
    # mypy with no arguments checks what pyproject names: the package, tests and bench.
    assert ".venv/bin/mypy\n" in ci


def test_ci_also_runs_the_slow_tests_the_readme_command_leaves_out() -> None:
    """Every test runs in CI: the README's command deselects ``slow``, .ci/run selects it too."""
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    quick = readme_commands()[1].rsplit(" && ", 1)[1]
    assert quick.endswith(' -m "not slow"')
    assert quick.replace(' -m "not slow"', " -m slow") in ci.splitlines()
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"slow: ' in pyproject and "--strict-markers" in pyproject


def test_vocabulary_and_type_marker_ship_as_package_data() -> None:
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert '"data/*"' in pyproject and '"py.typed"' in pyproject
    assert (ROOT / "pytest_toll" / "py.typed").exists()
    assert (ROOT / "pytest_toll" / "data" / "o200k_base.tiktoken.gz").exists()


def test_the_changelog_opens_with_this_version() -> None:
    """A release bumps pytest_toll/_version.py and says what changed, in the same commit."""
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    versions = re.findall(r"^## \[(\d+\.\d+\.\d+)\]", changelog, re.M)
    assert versions[0] == __version__
    assert "0.1.0" in versions
    # The version is written once: pyproject.toml reads it from the module.
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'version = { attr = "pytest_toll._version.__version__" }' in pyproject
    assert not re.search(r'^version\s*=\s*"', pyproject, re.M)


def test_the_readme_installs_by_name() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "$ pip install pytest-toll\n" in readme
    assert "`pipx install pytest-toll` puts `toll` on\nyour PATH" in readme
    assert "git+https://" not in readme
