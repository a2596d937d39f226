"""Issue #36 item 8: a verb's own flag written after ``-- COMMAND`` is refused with the order
that works, never handed to the server and silently ignored (``toll fix -- CMD --write OUT``
wrote nothing, exit 0)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.cli import run_main

SERVER = Path(__file__).resolve().parents[1] / "servers" / "sdk_server.py"


@pytest.mark.parametrize(
    ("verb", "flags"),
    [
        ("fix", ["--write", "OUT"]),
        ("fix", ["--json"]),
        ("weigh", ["--json"]),
        ("weigh", ["--timeout=5"]),
    ],
)
def test_our_flag_after_the_command_is_refused_with_the_right_order(
    verb: str,
    flags: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    argv = [verb, "--", sys.executable, str(SERVER), *flags]
    code, out, err = run_main(capsys, *argv)
    assert code == 2, out + err
    flag = flags[0].split("=")[0]
    assert f"{flag} after `--` would go to the server, not to toll {verb}" in err
    assert f"(toll {verb} {flags[0]} … -- {sys.executable} …)" in err
    assert not (tmp_path / "OUT").exists()


def test_the_servers_own_arguments_still_pass(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Words that are not our flags go to the server as before."""
    code, out, err = run_main(
        capsys, "weigh", "--json", "--", sys.executable, str(SERVER), "--page-size", "5"
    )
    assert code in (0, 1), err
    assert '"tools"' in out
