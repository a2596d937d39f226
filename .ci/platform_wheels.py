"""The built wheel installs with its compiled transcript reader on macOS and Windows.

    python .ci/platform_wheels.py dist/pytest_toll-*.whl

``toll scan`` reads Claude Code and Codex lines on the typed path when msgspec imports, and
msgspec is compiled code: a platform with no msgspec wheel would build it from source (a
compiler the user may not have) or fall back to the pure reader. The workflows run the
installed wheel on macOS and Windows runners (release.yml, tests.yml); this machine has
neither, so here pip resolves the wheel and every dependency for those platforms as binary
wheels only, for the oldest and newest Python the release checks, and msgspec's wheel must
hold its compiled ``_core`` for that platform. Exits non-zero, naming the platform, when not.

The ``fast`` extra's counter (quicktok) is optional: where it has no binary wheel, pip builds
it from its sdist (a C++20 compiler) or the user goes without, and big scans count with
tiktoken. Which platforms it has a compiled wheel for is printed, never a failure.
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


def resolve(
    wanted: Path | str, platform: str, python: str, into: Path, deps: bool = True
) -> list[Path]:
    """Every wheel pip would install for ``wanted`` on ``platform``, binary wheels only."""
    command = [
        sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
        "--only-binary=:all:", "--implementation", "cp", "--platform", platform,
        "--python-version", python, "--dest", str(into), str(wanted),
        *([] if deps else ["--no-deps"]),
    ]  # fmt: skip
    subprocess.run(command, check=True, stderr=None if deps else subprocess.DEVNULL)
    return sorted(into.glob("*.whl"))


def compiled(wheel: Path, module: str, suffix: str) -> str | None:
    """The compiled ``module`` (``package/_name``) a wheel holds for its platform, if any."""
    with zipfile.ZipFile(wheel) as archive:
        found = [
            name for name in archive.namelist() if name.startswith(module) and name.endswith(suffix)
        ]
    return found[0] if found else None


def fast_extra(wheel: Path) -> str:
    """The requirement the wheel's ``fast`` extra names (its metadata, not a copy of it)."""
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(name for name in archive.namelist() if name.endswith(".dist-info/METADATA"))
        lines = archive.read(metadata).decode("utf-8").splitlines()
    for line in lines:
        if line.startswith("Requires-Dist:") and 'extra == "fast"' in line:
            return line.removeprefix("Requires-Dist:").split(";")[0].strip()
    raise SystemExit(f"{wheel.name}: no requirement under the fast extra")


def fast_counter(requirement: str, platform: str, python: str, suffix: str) -> str:
    with tempfile.TemporaryDirectory() as folder:
        try:
            (wheel,) = resolve(requirement, platform, python, Path(folder), deps=False)
        except subprocess.CalledProcessError:
            return "no binary wheel (pip builds it from its sdist, or scans count with tiktoken)"
        return f"{wheel.name}: {compiled(wheel, 'quicktok/_quicktok', suffix) or 'NOT compiled'}"


def main() -> None:
    wheel = Path(sys.argv[1])
    fast = fast_extra(wheel)
    for platform, suffix in PLATFORMS:
        for python in PYTHONS:
            with tempfile.TemporaryDirectory() as folder:
                wheels = resolve(wheel, platform, python, Path(folder))
                msgspec = [found for found in wheels if found.name.startswith("msgspec-")]
                if not msgspec:
                    raise SystemExit(f"{platform}, Python {python}: msgspec was not resolved")
                core = compiled(msgspec[0], "msgspec/_core", suffix)
                if core is None:
                    raise SystemExit(f"{msgspec[0].name}: no compiled msgspec/_core*{suffix}")
            counter = fast_counter(fast, platform, python, suffix)
            print(
                f"{platform}, Python {python}: {len(wheels)} wheels; {msgspec[0].name}: {core}; "
                f"fast extra ({fast}): {counter}"
            )


if __name__ == "__main__":
    main()
