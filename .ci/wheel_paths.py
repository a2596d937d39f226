"""The installed wheel takes its fast paths: the compiled transcript reader, and with the
``fast`` extra the proven fast counter.

    python .ci/wheel_paths.py VENV_PYTHON dist/pytest_toll-*.whl

``VENV_PYTHON`` is the interpreter of a fresh virtual environment that holds the wheel alone.
``toll doctor`` must name the typed reader (msgspec) by default and the pure one under
``TOLL_PARSER=pure``; then ``WHEEL[fast]`` is installed into the same environment and doctor
must name quicktok, proven equal to tiktoken on the probe, as the counter of big scans. The
release and test workflows run this on Linux, macOS and Windows runners, and ``.ci/run`` on
Linux. Exits non-zero, saying which check failed and what doctor said, when one does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys


def doctor(python: str, **environ: str) -> dict[str, dict[str, str]]:
    """``toll doctor --json``'s checks by name (it exits 1 on a runner with no transcripts or
    ledger, so its exit code is not the verdict; its JSON is)."""
    done = subprocess.run(
        [python, "-m", "pytest_toll", "doctor", "--json"],
        capture_output=True,
        text=True,
        env={**os.environ, **environ},
        check=False,
    )
    try:
        checks = json.loads(done.stdout)["checks"]
    except (ValueError, KeyError):
        raise SystemExit(
            f"toll doctor printed no report (exit {done.returncode}): {done.stderr}"
        ) from None
    return {check["check"]: check for check in checks}


def expect(checks: dict[str, dict[str, str]], name: str, start: str, status: str = "ok") -> str:
    check = checks[name]
    if check["status"] != status or not check["detail"].startswith(start):
        raise SystemExit(f"{name}: expected {status}, {start!r}…; doctor said {check}")
    return check["detail"]


def main() -> None:
    python, wheel = sys.argv[1], sys.argv[2]
    typed = expect(doctor(python, TOLL_PARSER=""), "transcript reader", "typed: msgspec")
    pure = expect(doctor(python, TOLL_PARSER="pure"), "transcript reader", "pure Python")
    print(f"default reader: {typed}\nTOLL_PARSER=pure: {pure}")
    install = [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check"]
    subprocess.run([*install, f"{wheel}[fast]"], check=True)
    fast = expect(doctor(python, TOLL_COUNTER=""), "fast counter", "quicktok ")
    print(f"fast counter: {fast}")


if __name__ == "__main__":
    main()
