"""SARIF rules carry help text; every link to the project comes from the package metadata.

The installed metadata is replaced by a real ``.dist-info`` folder put first on ``sys.path``
(as an install of a release would be), once with ``[project.urls]`` entries and once without.
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path

import pytest

from pytest_toll.core import project
from pytest_toll.definitions.results import RULE_IDS as RESULT_RULES
from pytest_toll.definitions.rules import RULE_IDS as DEFINITION_RULES
from pytest_toll.definitions.usage import RULE_IDS as USAGE_RULES
from pytest_toll.gate.ledger import SCHEMA_PATH as LEDGER_SCHEMA
from pytest_toll.report import badge, sarif
from pytest_toll.report.rule_help import RULES, TURN_DOWN, rule_help
from pytest_toll.skills.rules import RULE_IDS as SKILL_RULES
from pytest_toll.surface.rules import RULE_IDS as SURFACE_RULES
from pytest_toll.transcripts.decisions import RULE_IDS as DECISION_RULES
from tests.report.test_outputs import fixture_report

DOCS = "https://docs.example.test/pytest-toll/"
REPOSITORY = "https://git.example.test/toll/pytest-toll"


def install_metadata(root: Path, monkeypatch: pytest.MonkeyPatch, *urls: str) -> None:
    """A pytest-toll ``.dist-info`` at the front of ``sys.path``: importlib.metadata finds it
    before the real install, as it would find a release's."""
    info = root / "pytest_toll-0.2.0.dist-info"
    info.mkdir(parents=True)
    lines = ["Metadata-Version: 2.4", "Name: pytest-toll", "Version: 0.2.0"]
    lines += [f"Project-URL: {url}" for url in urls]
    (info / "METADATA").write_text("\n".join(lines) + "\n\n", encoding="utf-8")
    monkeypatch.syspath_prepend(str(root))


def rules_of(log: dict[str, object]) -> list[dict[str, object]]:
    runs = log["runs"]
    assert isinstance(runs, list)
    rules: list[dict[str, object]] = runs[0]["tool"]["driver"]["rules"]
    return rules


def test_project_urls_are_read_from_the_installed_metadata(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_metadata(tmp_path, monkeypatch, f"Source Code, {REPOSITORY}", f"Documentation, {DOCS}")
    assert project.project_urls() == {"sourcecode": REPOSITORY, "documentation": DOCS}
    assert project.documentation_url() == DOCS
    # No home page named: the docs are where to read about the project.
    assert project.home_url() == DOCS


def test_a_repository_alone_is_the_home_but_not_the_docs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_metadata(tmp_path, monkeypatch, f"Repository, {REPOSITORY}", "Broken entry")
    assert project.project_urls() == {"repository": REPOSITORY}
    assert (project.home_url(), project.documentation_url()) == (REPOSITORY, None)


def test_no_urls_and_no_install_mean_no_links(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert project.project_urls("pytest-toll-not-installed-anywhere") == {}
    install_metadata(tmp_path, monkeypatch)
    assert project.project_urls() == {}
    assert (project.home_url(), project.documentation_url()) == (None, None)


def test_labels_are_normalised_as_pep_753_says() -> None:
    assert {project.normalized_label(label) for label in ("Source Code", "source-code", "SOURCE_CODE")} == {"sourcecode"}  # fmt: skip


def test_sarif_links_come_from_project_urls(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_metadata(tmp_path, monkeypatch, f"Homepage, {REPOSITORY}", f"Documentation, {DOCS}")
    log = sarif.render(fixture_report(), "toll.yaml")
    driver = log["runs"][0]["tool"]["driver"]
    assert driver["informationUri"] == REPOSITORY
    assert [rule["helpUri"] for rule in rules_of(log)] == [DOCS] * 4


def test_sarif_leaves_links_out_when_no_url_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    install_metadata(tmp_path, monkeypatch)
    log = sarif.render(fixture_report(), "toll.yaml")
    driver = log["runs"][0]["tool"]["driver"]
    assert "informationUri" not in driver
    assert all("helpUri" not in rule for rule in rules_of(log))
    # Nothing else in the log points at a made-up address for the project either.
    assert [key for key in json.dumps(log).split('"') if key.startswith("http")] == [
        sarif.SARIF_SCHEMA
    ]


def test_every_rule_in_the_log_carries_help_text() -> None:
    log = sarif.render(fixture_report(), "toll.yaml")
    rules = rules_of(log)
    assert [rule["id"] for rule in rules] == ["S102", "toll/error", "toll/over-budget", "toll/regressed"]  # fmt: skip
    for rule in rules:
        help_text = rule["help"]
        assert isinstance(help_text, dict) and len(help_text["text"]) > 40, rule
    s102 = rules[0]
    assert s102["shortDescription"] == {
        "text": "S102: skill description thin, or never says when to use the skill"
    }
    assert s102["help"] == {"text": rule_help("S102").help}
    assert "rules: {S102: warn}" in rule_help("S102").help


def test_the_help_table_knows_exactly_the_rules_the_jobs_and_schema_define() -> None:
    defined = set(DEFINITION_RULES) | set(SKILL_RULES) | set(DECISION_RULES) | set(SURFACE_RULES)
    defined |= set(RESULT_RULES) | set(USAGE_RULES)
    schema = json.loads(LEDGER_SCHEMA.read_text(encoding="utf-8"))
    assert set(RULES) == defined == set(schema["$defs"]["rules"]["propertyNames"]["enum"])
    for rule_id in defined:
        title, help_text = rule_help(rule_id)
        assert title and help_text.endswith(TURN_DOWN.replace("RULE", rule_id)), rule_id


def test_an_unknown_rule_still_gets_help_text() -> None:
    title, help_text = rule_help("X999")
    assert title == "pytest-toll rule X999"
    assert help_text.startswith("See rule X999 in the pytest-toll documentation.")


def test_the_badge_links_to_the_project_only_when_a_url_is_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    report = fixture_report()
    install_metadata(tmp_path / "without", monkeypatch)
    assert "<a " not in badge.badge_for(report).svg()
    # Put first on sys.path, this one is found before the one above.
    install_metadata(tmp_path / "with", monkeypatch, f"Documentation, {DOCS}?a=1&b=2")
    svg = badge.badge_for(report).svg()
    link = ElementTree.fromstring(svg).find("{http://www.w3.org/2000/svg}a")
    assert link is not None and link.get("href") == f"{DOCS}?a=1&b=2"


def test_toll_version_says_the_release() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (result.returncode, result.stdout) == (0, "toll 0.2.0\n")
