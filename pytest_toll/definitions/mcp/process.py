"""Starting and stopping a stdio server's process, on POSIX and on Windows.

A server starts from an argv list (never a shell) in a process group of its own, so that
stopping it stops the programs it started too: on POSIX a new session, signalled as a group
(``killpg``); on Windows a new process group, stopped as a tree by ``taskkill /T``.

A command whose program is a bare ``python``, ``python3`` or ``pythonX.Y`` runs under the
Python that runs pytest-toll (``sys.executable``): ``.venv/bin/python -m pytest --toll``
without an activated virtual environment would otherwise start the first ``python`` on
PATH, which lacks the project's packages. A path (``/usr/bin/python3``) is left as given.

A server inherits this process's environment minus every secret-like and model-provider
variable (:func:`pytest_toll.core.secrets.inheritable_environment`): measuring a tool list
needs no API key, and a server that prints its environment must find none to print. A
variable the ledger's ``env:`` names is passed on purpose, whatever its name.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

from pytest_toll.core.secrets import inheritable_environment

WINDOWS = sys.platform == "win32"

#: ``python``, ``python3``, ``python3.12`` (and ``python.exe`` & co. on Windows).
_BARE_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)?)?(?:\.exe)?", re.IGNORECASE)
#: How long ``taskkill`` itself may take on Windows.
_TASKKILL_SECONDS = 10.0


def resolve_program(command: Sequence[str]) -> list[str]:
    """``command`` with a bare Python name replaced by :data:`sys.executable`."""
    argv = list(command)
    if argv and sys.executable and _BARE_PYTHON.fullmatch(argv[0]):
        argv[0] = sys.executable
    return argv


def start(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> subprocess.Popen[bytes]:
    """Start ``command`` with piped stdin, stdout and stderr, in a group of its own, with the
    inheritable environment and ``env`` over it.

    Raises ``FileNotFoundError`` or ``PermissionError`` as :class:`subprocess.Popen` does.
    """
    group: dict[str, object] = (
        {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}  # type: ignore[attr-defined]
        if WINDOWS
        else {"start_new_session": True}
    )
    return subprocess.Popen(  # type: ignore[call-overload, no-any-return]
        resolve_program(command),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**inheritable_environment(), **(env or {})},
        cwd=cwd,
        **group,
    )


def terminate(process: subprocess.Popen[bytes]) -> None:
    """Ask the process and its children to stop (SIGTERM to the group; Windows: taskkill /T)."""
    if WINDOWS:
        _taskkill(process.pid, force=False)
    else:
        _signal_group(process.pid, signal.SIGTERM)


def kill(process: subprocess.Popen[bytes]) -> None:
    """Stop the process and its children now (SIGKILL to the group; Windows: taskkill /T /F).

    Safe to call on a process that has exited: its group's leftovers still go.
    """
    if WINDOWS:
        _taskkill(process.pid, force=True)
        with contextlib.suppress(OSError):
            process.kill()
    else:
        _signal_group(process.pid, signal.SIGKILL)


def _signal_group(pgid: int, signal_number: signal.Signals) -> None:
    killpg = getattr(os, "killpg", None)
    if killpg is None:  # pragma: no cover - POSIX has it
        return
    with contextlib.suppress(ProcessLookupError, PermissionError):
        killpg(pgid, signal_number)


def _taskkill(pid: int, *, force: bool) -> None:  # pragma: no cover - Windows only
    argv = ["taskkill", "/T", "/PID", str(pid)]
    if force:
        argv.insert(1, "/F")
    devnull: IO[bytes] | int = subprocess.DEVNULL
    with contextlib.suppress(OSError, subprocess.TimeoutExpired):
        subprocess.run(argv, stdout=devnull, stderr=devnull, timeout=_TASKKILL_SECONDS, check=False)
