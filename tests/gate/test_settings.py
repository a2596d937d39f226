"""Settings resolution without pytest: command line > ini > ledger > default, sources named."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.settings import Sources, open_ledger, resolve_settings


def sources(tmp_path: Path, cli: dict[str, Any] | None = None, **ini: str) -> Sources:
    return Sources(
        cli=cli or {},
        ini=ini,
        ini_name=str(tmp_path / "pytest.ini"),
        ini_dir=tmp_path / "config",
        invocation_dir=tmp_path / "here",
        rootdir=tmp_path,
    )


def test_defaults(tmp_path: Path) -> None:
    settings = resolve_settings(sources(tmp_path), None, update=False, allow_increase=False)
    assert open_ledger(sources(tmp_path), update=True).path == tmp_path / "toll.yaml"
    assert (settings.window, settings.tolerance, settings.strict) == (DEFAULT_WINDOW, 0, False)
    assert settings.outputs == {}


def test_precedence_and_relative_paths(tmp_path: Path) -> None:
    ledger_file = tmp_path / "toll.yaml"
    ledger_file.write_text("window: 1000\ntolerance: 3\n")
    ledger = load_ledger(ledger_file)
    from_ledger = resolve_settings(sources(tmp_path), ledger, update=False, allow_increase=False)
    assert (from_ledger.window, from_ledger.tolerance) == (1000, 3)
    from_ini = resolve_settings(
        sources(tmp_path, window="2_000", json="out.json", ledger="../toll.yaml"),
        ledger,
        update=False,
        allow_increase=False,
    )
    assert (from_ini.window, from_ini.tolerance) == (2000, 3)
    assert from_ini.outputs == {"json": tmp_path / "config" / "out.json"}
    named = open_ledger(sources(tmp_path, ledger="../toll.yaml"), update=True)
    assert named.path == tmp_path / "config" / ".." / "toll.yaml"
    from_cli = resolve_settings(
        sources(tmp_path, {"window": "4000", "json": "r.json", "strict": "true"}, window="2000"),
        ledger,
        update=True,
        allow_increase=True,
    )
    assert (from_cli.window, from_cli.strict, from_cli.outputs) == (
        4000,
        True,
        {"json": tmp_path / "here" / "r.json"},
    )
    assert (from_cli.policy.update, from_cli.policy.allow_increase) == (True, True)


@pytest.mark.parametrize(
    ("cli", "ini", "message"),
    [
        ({"window": "0"}, {}, "--toll-window on the command line: window must be a positive"),
        ({}, {"tolerance": "-1"}, "toll_tolerance in {ini}: tolerance must be a whole number"),
        (
            {},
            {"strict": "maybe"},
            "toll_strict in {ini}: strict must be true or false, not 'maybe'",
        ),
    ],
)
def test_a_bad_value_names_its_source(
    tmp_path: Path, cli: dict[str, Any], ini: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError) as raised:
        resolve_settings(sources(tmp_path, cli, **ini), None, update=False, allow_increase=False)
    assert str(raised.value).startswith(message.format(ini=tmp_path / "pytest.ini"))


def test_the_ledger_model_gives_the_window(tmp_path: Path) -> None:
    ledger_file = tmp_path / "toll.yaml"
    ledger_file.write_text("model: mine\nmodels:\n  mine: {provider: openai, window: 64000}\n")
    settings = resolve_settings(
        sources(tmp_path), load_ledger(ledger_file), update=False, allow_increase=False
    )
    assert settings.window == 64000
    ledger_file.write_text("model: no-such-model\n")
    with pytest.raises(UsageError, match=r"toll\.yaml:1: model: "):
        resolve_settings(
            sources(tmp_path), load_ledger(ledger_file), update=False, allow_increase=False
        )


def test_a_ledger_must_exist_unless_updating(tmp_path: Path) -> None:
    named = sources(tmp_path, {"ledger": "missing.yaml"})
    with pytest.raises(UsageError, match=r"no ledger at .*missing\.yaml \(named by --toll-ledger"):
        open_ledger(named, update=False)
    assert not open_ledger(named, update=True).exists
    # The default ledger too: no ledger is a usage error, not an empty gate that passes.
    with pytest.raises(UsageError, match=r"no ledger at .*toll\.yaml \(at the rootdir\)") as caught:
        open_ledger(sources(tmp_path), update=False)
    assert "toll init" in str(caught.value)
    assert "--toll-update" in str(caught.value)
    assert "toll.yml" not in str(caught.value)
    assert not open_ledger(sources(tmp_path), update=True).exists


def test_a_misnamed_ledger_is_pointed_at(tmp_path: Path) -> None:
    (tmp_path / "toll.yml").write_text("version: 1\n")
    with pytest.raises(UsageError, match=r"found toll\.yml beside it: rename it to toll\.yaml"):
        open_ledger(sources(tmp_path), update=False)
