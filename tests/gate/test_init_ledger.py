"""What ``toll init`` writes: always valid YAML (issue #25 item 2), findings already there as
acknowledged overrides (item 3), and the file written as any file is (#24 item 14)."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.cli import main
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import ERROR, WARN, RuleOverrides
from pytest_toll.gate.discovery import Found
from pytest_toll.gate.ledger import ledger_from_text
from pytest_toll.gate.starter import Discovery, Starter, render
from tests.plugin.inner import QUIET

DEMO_SKILL = Path(__file__).resolve().parents[2] / "examples" / "demo" / "skills" / "release-notes"


# --- item 2: never invalid YAML ------------------------------------------------------------


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(reason=st.text(), note=st.text(), name=st.text(min_size=1))
def test_a_commented_out_server_always_loads(reason: str, note: str, name: str) -> None:
    """Whatever the reason (a traceback, CR, NEL, U+2028 …), every line stays a comment."""
    server = Found(name, {"command": ["srv", reason]}, comments=("from .mcp.json", note))
    skill = {"path": "skills/a", "budget": 100, "pin": {"metadata": 1, "body": 2}}
    transcripts = Found("transcripts", {"roots": ["transcripts"]})
    starter = Starter(
        Discovery(root=Path(".")),
        entries={
            "servers": [(server, reason)],
            "skills": [(Found("a", {"path": "skills/a"}), skill)],
            "transcripts": [(transcripts, reason)],
        },
    )
    ledger = ledger_from_text(render(starter), Path("toll.yaml"))
    assert not ledger.data.get("servers")
    assert list(ledger.data["skills"]) == ["a"]
    assert "transcripts" not in ledger.data


def test_a_traceback_reason_is_commented_line_by_line() -> None:
    reason = 'Traceback (most recent call last):\n  File "x.py", line 1\nKeyError: "a: b"'
    server = Found("s", {"command": ["srv"]}, comments=("from .mcp.json",))
    text = render(Starter(Discovery(root=Path(".")), entries={"servers": [(server, reason)]}))
    assert '  #   File "x.py", line 1\n  # KeyError: "a: b"\n' in text
    ledger_from_text(text, Path("toll.yaml"))


def test_the_ledger_is_written_in_the_kinds_order_whatever_order_init_found_them() -> None:
    """Init names what it found in FINDERS order (transcripts third); the ledger's sections
    follow the kinds' report order, and each row's comment heads its section."""
    memory = {"budget": 100, "pin": {"CLAUDE.md": 12}}
    section = {"roots": ["transcripts"], "decide_above_tokens": 0, "waste_ratio_pin": 0.5}
    starter = Starter(
        Discovery(root=Path(".")),
        entries={
            "transcripts": [(Found("transcripts", {"roots": ["transcripts"]}), section)],
            "memory": [(Found("claude", {}), memory)],
            "skills": [(Found("a", {"path": "skills/a"}), "no SKILL.md")],
        },
    )
    text = render(starter)
    assert text.index("\nskills:\n") < text.index("\nmemory:\n") < text.index("\ntranscripts:\n")
    assert "# What each host loads from this repository at session start" in text
    assert "  waste_ratio_pin: 0.5   # machine: ratchets down\n" in text
    assert "decisions" not in text
    data = ledger_from_text(text, Path("toll.yaml")).data
    assert list(data) == ["version", "tokenizer", "skills", "memory", "transcripts"]
    assert data["skills"] is None  # its one skill is written commented out
    assert starter.counts() == ["0 server(s)", "0 skill(s)", "transcripts", "1 memory"]
    assert starter.not_measured() == [("skills.a", "no SKILL.md")]


# --- item 3: a fresh ledger passes its own gate ----------------------------------------------


def test_an_acknowledged_finding_is_shown_and_a_new_one_still_fails() -> None:
    rules = RuleOverrides.parse(
        {
            "E125": {
                "severity": "warn",
                "reason": "found by toll init on 2026-12-01: too long",
                "subjects": ["old_tool"],
            },
            "E126": {"severity": "info", "reason": "kept: the enum is the API"},
        }
    )
    old = rules.finding("E125", ERROR, "old_tool", "too long")
    new = rules.finding("E125", ERROR, "new_tool", "too long")
    reviewed = rules.finding("E126", ERROR, "any", "big enum")
    assert old is not None and old.severity == WARN
    assert "there when the ledger was made (2026-12-01), not yet reviewed" in old.message
    assert new is not None and new.severity == ERROR and "ledger" not in new.message
    assert reviewed is not None and reviewed.severity == "info"
    assert reviewed.message == "big enum (acknowledged in the ledger: kept: the enum is the API)"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"severity": "warn"}, r"S101.reason: say why"),
        ({"reason": "x"}, r"S101: an override with a reason needs a severity"),
        ({"severity": "loud", "reason": "x"}, r"S101.severity: severity must be one of"),
        ({"severity": "warn", "reason": "x", "subjects": "a"}, r"S101.subjects: must be a list"),
        ({"severity": "warn", "reason": "x", "expires": 1}, r"S101.expires: unknown key"),
        ({"severity": "warn", "reason": "x", "until": 1}, r"S101.until: must be a day"),
        ({"severity": "warn", "reason": "x", "until": "2026-13-01"}, r"S101.until: must be a day"),
        ({"severity": "warn", "reason": "x", "until": "next week"}, r"S101.until: must be a day"),
    ],
)
def test_a_malformed_acknowledgement_is_refused(value: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError, match=message):
        RuleOverrides.parse({"S101": value})


def test_the_ledger_schema_takes_both_forms() -> None:
    text = (
        "version: 1\nrules:\n  E125: off\n  E126: {severity: warn, reason: kept}\n"
        "skills:\n  a:\n    path: skills/a\n    rules:\n"
        "      S101: {severity: warn, reason: because, subjects: [a]}\n"
    )
    ledger_from_text(text, Path("toll.yaml"))
    with pytest.raises(
        UsageError, match=r"toll.yaml:3: rules.E126: .reason. is a required property"
    ):
        ledger_from_text("version: 1\nrules:\n  E126: {severity: warn}\n", Path("toll.yaml"))


def test_init_then_gate_passes_and_a_new_finding_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = pytester.path / "skills" / "notes"
    shutil.copytree(DEMO_SKILL, folder)  # its name says release-notes: S101 at init
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    said = capsys.readouterr().out
    assert "1 finding(s) already there, written as rule overrides" in said
    text = (pytester.path / "toll.yaml").read_text(encoding="utf-8")
    assert 'S101: {severity: "warn", reason: "found by toll init on ' in text
    assert 'subjects: ["release-notes"]}' in text
    first = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert first.ret == 0, first.stdout.str()
    first.stdout.fnmatch_lines(["*S101 warn release-notes: *not yet reviewed*"])
    skill_md = folder / "SKILL.md"
    skill_md.write_text(
        skill_md.read_text(encoding="utf-8") + "\nSee [the missing page](references/gone.md).\n",
        encoding="utf-8",
    )
    second = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert second.ret == 1
    second.stdout.fnmatch_lines(["*S106 error release-notes: reference 'references/gone.md'*"])


# --- #24 item 14: the file itself -------------------------------------------------------------


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    shutil.copytree(DEMO_SKILL, tmp_path / "skills" / "release-notes")
    monkeypatch.chdir(tmp_path)
    return tmp_path


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o002, 0o664), (0o077, 0o600)])
def test_the_ledger_gets_the_mode_the_umask_gives(repo: Path, umask: int, mode: int) -> None:
    previous = os.umask(umask)
    try:
        assert main(["init"]) == 0
    finally:
        os.umask(previous)
    assert stat.S_IMODE((repo / "toll.yaml").stat().st_mode) == mode


def test_a_dangling_symlinked_ledger_is_refused_by_name(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    os.symlink(repo / "elsewhere" / "toll.yaml", repo / "toll.yaml")
    assert main(["init"]) == 4
    err = capsys.readouterr().err
    assert f"toll.yaml is a symlink to {repo / 'elsewhere' / 'toll.yaml'}, which does not" in err
    assert not (repo / "elsewhere").exists()


def test_print_writes_nothing(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise PermissionError(13, "read-only folder")

    # As a read-only folder would: any file made is an error.
    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    monkeypatch.setattr(os, "link", refuse)
    before = sorted(repo.rglob("*"))
    assert main(["init", "--print"]) == 0
    assert "release-notes:" in capsys.readouterr().out
    assert sorted(repo.rglob("*")) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder anyway")
def test_print_works_in_a_read_only_folder(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    repo.chmod(0o555)
    try:
        assert main(["init", "--print"]) == 0
    finally:
        repo.chmod(0o755)
    assert "version: 1" in capsys.readouterr().out


def test_init_names_every_finding_the_gate_will_show(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """#36 item 6c: an error turned down to warn and a warning as it is: the gate shows both,
    so init's summary counts both."""
    folder = pytester.path / "skills" / "notes"
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(
        "---\nname: notes\ndescription: Writes the weekly team notes from the meeting log.\n---\n"
        "Follow [the template](references/template.md).\n",
        encoding="utf-8",
    )
    monkeypatch.chdir(pytester.path)
    assert main(["init"]) == 0
    said = capsys.readouterr().out
    gate = pytester.runpytest("--toll", "toll.yaml", *QUIET)
    assert gate.ret == 0, gate.stdout.str()
    shown = [line for line in gate.stdout.lines if line.startswith("skills::notes: S")]
    assert len(shown) == 2, shown
    assert "1 finding(s) already there, written as rule overrides" in said
    assert "1 warning(s) already there, shown on every run as they are:" in said
    assert "skills.notes: S102 notes: description never says when to use the skill" in said
