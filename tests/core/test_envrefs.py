"""``${VAR}`` / ``${VAR:-default}`` as agent hosts expand them (issue #25 item 6, #24 item 4)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pytest_toll.core.envrefs import expand
from pytest_toll.core.errors import UsageError
from pytest_toll.core.secrets import forget_all, scrub
from pytest_toll.definitions.source import expand_headers
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.measurers import measure_servers_entry

SDK_SERVER = Path(__file__).resolve().parents[1] / "servers" / "sdk_server.py"


def test_defaults_unset_and_empty() -> None:
    environ = {"SET": "value", "EMPTY": ""}
    assert expand("a ${SET} b", "w", environ) == "a value b"
    assert expand("${UNSET:-fallback}", "w", environ) == "fallback"
    # As the shell's :-, a default also stands in for an empty value.
    assert expand("${EMPTY:-fallback}", "w", environ) == "fallback"
    assert expand("${UNSET:-}", "w", environ) == ""
    assert expand("$SET and ${not a ref}", "w", environ) == "$SET and ${not a ref}"
    with pytest.raises(UsageError, match=r"^w: environment variable UNSET is not set "):
        expand("${UNSET}", "w", environ)
    with pytest.raises(UsageError, match=r"^w: environment variable EMPTY is set but empty$"):
        expand("${EMPTY}", "w", environ)


def test_an_empty_header_variable_is_named_and_blanks_no_word(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    forget_all()
    monkeypatch.setenv("TOLL_T_EMPTY", "")
    with pytest.raises(UsageError) as raised:
        expand_headers({"Authorization": "Bearer ${TOLL_T_EMPTY}"})
    assert str(raised.value) == (
        "header Authorization: environment variable TOLL_T_EMPTY is set but empty"
    )
    assert scrub("Bearer tokens are words") == "Bearer tokens are words"


def test_the_gate_expands_command_args_and_env_as_the_host_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    forget_all()
    monkeypatch.delenv("TOLL_T_SERVER", raising=False)
    monkeypatch.setenv("TOLL_T_PY", sys.executable)
    monkeypatch.setenv("TOLL_T_SECRET", "s3cret-value-42")
    entry = {
        "command": ["${TOLL_T_PY}", "${TOLL_T_SERVER:-" + str(SDK_SERVER) + "}"],
        "env": {"API_TOKEN": "${TOLL_T_SECRET}", "MODE": "${TOLL_T_MODE:-plain}"},
    }
    measured = measure_servers_entry("files", entry, EntryContext(root=tmp_path))
    assert set(measured.parts) == {"read_file", "write_file", "search"}
    # A value taken from the environment for a secret-sounding name is scrubbed.
    assert scrub("leaked s3cret-value-42") == "leaked [secret]"
    with pytest.raises(UsageError, match=r"^servers.files.env.API_TOKEN: environment variable"):
        measure_servers_entry(
            "files",
            {**entry, "env": {"API_TOKEN": "${TOLL_T_UNSET_SECRET}"}},
            EntryContext(root=tmp_path),
        )
    with pytest.raises(UsageError, match=r"^servers.remote.url: environment variable TOLL_T_H"):
        measure_servers_entry(
            "remote", {"url": "http://${TOLL_T_H}/mcp"}, EntryContext(root=tmp_path)
        )
