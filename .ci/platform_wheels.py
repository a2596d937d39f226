"""The built wheel installs with its compiled transcript reader on macOS and Windows.

    python .ci/platform_wheels.py dist/pytest_toll-*.whl

``toll scan`` reads Claude Code and Codex lines on the typed path when msgspec imports, and
msgspec is compiled code: a platform with no msgspec wheel would build it from source (a
compiler the user may not have) or fall back to the pure reader. The workflows run the
installed wheel on macOS and Windows runners (release.yml, tests.yml); this machine has
neither, so here pip resolves the wheel and every dependency for those platforms as binary
wheels only, for the oldest and newest Python the release checks, and msgspec's wheel must
hold its compiled ``_core`` for that platform. Exits non-zero, naming the platform, when not.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

#: (pip's platform tag, the suffix msgspec's compiled core has there)
PLATFORMS = (
    ("win_amd64", ".pyd"),
    ("macosx_14_0_arm64", ".so"),  # the macOS runners are Apple silicon
    ("macosx_13_0_x86_64", ".so"),
)
PYTHONS = ("3.10", "3.13")


def resolve(wheel: Path, platform: str, python: str, into: Path) -> list[Path]:
    """Every wheel pip would install for ``wheel`` on ``platform``, binary wheels only."""
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", "--implementation", "cp", "--platform", platform,
        "--python-version", python, "--dest", str(into), str(wheel),
    ]  # fmt: skip
    subprocess.run(command, check=True)
    return sorted(into.glob("*.whl"))


def compiled_core(msgspec_wheel: Path, suffix: str) -> str:
    with zipfile.ZipFile(msgspec_wheel) as archive:
        cores = [
            name
            for name in archive.namelist()
            if name.startswith("msgspec/_core") and name.endswith(suffix)
        ]
    if not cores:
        raise SystemExit(f"{msgspec_wheel.name}: no compiled msgspec/_core*{suffix}")
    return cores[0]


def main() -> None:
    wheel = Path(sys.argv[1])
    for platform, suffix in PLATFORMS:
        for python in PYTHONS:
            with tempfile.TemporaryDirectory() as folder:
                wheels = resolve(wheel, platform, python, Path(folder))
                msgspec = [found for found in wheels if found.name.startswith("msgspec-")]
                if not msgspec:
                    raise SystemExit(f"{platform}, Python {python}: msgspec was not resolved")
                core = compiled_core(msgspec[0], suffix)
                print(
                    f"{platform}, Python {python}: {len(wheels)} wheels; {msgspec[0].name}: {core}"
                )


if __name__ == "__main__":
    main()
