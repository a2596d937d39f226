"""``toll gate [LEDGER]``: ``pytest --toll LEDGER`` with none of the repository's pytest
configuration: the ledger-only gate for CI.

``pytest --toll toll.yaml`` reads the repository's ``pyproject.toml``/``pytest.ini``/
``tox.ini``/``setup.cfg`` and its ``conftest.py`` files before measuring anything, so a
``filterwarnings`` entry naming a module the toll job does not install, an ``addopts =
--cov`` without pytest-cov or a conftest importing the project fails the gate before it
judges one entry. This verb runs the same pytest session — the plugin, the ledger's items,
the same judgement, report files and exit codes — in a child pytest that reads an empty
ini file of its own (``-c``), no conftest (``--noconftest``), no cache (``-p
no:cacheprovider``), with the rootdir set to the directory it was run in. What it gives up
is what only the repository's configuration brings: its Python tests (the ``toll``
fixture's measurements; gate those with ``pytest --toll``) and ``toll_*`` ini values (put
them in the ledger or on this command line). ``PYTEST_ADDOPTS`` is the job's own
environment, not the repository's, and still applies.

Exit codes are pytest's, passed through: 0 every entry passed, 1 one failed, 2 interrupted,
3 internal error, 4 usage error (no ledger, a bad toll.yaml), 5 nothing collected.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION
from pytest_toll.core.settings import SETTINGS
from pytest_toll.report.outputs import OUTPUTS

#: pytest's own codes beyond 0 and 1, passed through as ``pytest --toll`` returns them.
EXIT_INTERRUPTED = 2
EXIT_INTERNAL = 3
EXIT_USAGE = 4
EXIT_NO_TESTS = 5
PASSED_THROUGH = (
    EXIT_OK,
    EXIT_VIOLATION,
    EXIT_INTERRUPTED,
    EXIT_INTERNAL,
    EXIT_USAGE,
    EXIT_NO_TESTS,
)

#: The ini file the child pytest reads instead of the repository's: nothing in it.
EMPTY_INI = (
    "# written by `toll gate`: the repository's pytest configuration is not read\n[pytest]\n"
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "ledger", nargs="?", default="toll.yaml", help="the ledger to gate (default toll.yaml)"
    )
    # The plugin's own options, from the same tables, so the two doors never differ.
    for name, setting in SETTINGS.items():
        if name == "ledger":
            continue  # the positional LEDGER
        if setting.metavar is not None:
            parser.add_argument(setting.flag, dest=name, metavar=setting.metavar, help=setting.help)
        else:
            parser.add_argument(setting.flag, dest=name, action="store_true", help=setting.help)
    for name, output in OUTPUTS.items():
        parser.add_argument(output.flag, dest=name, metavar="PATH", help=output.help)
    parser.add_argument(
        "--pytest-args",
        default="",
        metavar="ARGS",
        help='more pytest arguments, split as a shell would (--pytest-args="-n 2 -v")',
    )


def pytest_command(args: argparse.Namespace, ini: Path, here: Path) -> list[str]:
    """The child pytest's command line: isolated from the repository's configuration."""
    ledger = here / args.ledger
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-c",
        str(ini),
        f"--rootdir={here}",
        "--noconftest",
        "-p",
        "no:cacheprovider",
        "-o",
        "addopts=",
        "--toll",
        # Named twice: as the ledger (whatever its file name) and as what to collect.
        f"--toll-ledger={ledger}",
        str(ledger),
    ]
    for name, setting in SETTINGS.items():
        if name == "ledger":
            continue
        value = getattr(args, name)
        if setting.metavar is not None and value is not None:
            command.append(f"{setting.flag}={value}")
        elif setting.metavar is None and value:
            command.append(setting.flag)
    for name, output in OUTPUTS.items():
        value = getattr(args, name)
        if value is not None:
            # Relative to where this command runs, as pytest resolves them from its own.
            command.append(f"{output.flag}={here / value}")
    command.extend(shlex.split(args.pytest_args))
    return command


def run(args: argparse.Namespace) -> int:
    here = Path.cwd()
    with tempfile.TemporaryDirectory(prefix="toll-gate-") as folder:
        ini = Path(folder) / "pytest.ini"
        ini.write_text(EMPTY_INI, encoding="utf-8")
        sys.stdout.flush()
        done = subprocess.run(pytest_command(args, ini, here), cwd=here, check=False)
    return done.returncode if done.returncode in PASSED_THROUGH else EXIT_INTERNAL
