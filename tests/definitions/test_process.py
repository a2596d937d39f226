"""A stdio server's process: this Python for a bare ``python``, and the whole tree stopped,
on POSIX and on Windows (real processes, no stand-ins)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_toll.definitions.mcp import process

# A server that starts a child which would outlive it, writes the child's pid, then waits.
PARENT = """
import subprocess, sys, time
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)"])
with open(sys.argv[1], "w") as pid_file:
    pid_file.write(str(child.pid))
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    if sys.platform == "win32":
        listed = subprocess.run(
            ["tasklist", "/FI", f"PID eq {pid}", "/NH"],
            capture_output=True,
            text=True,
            check=False,
        ).stdout
        return str(pid) in listed.split()
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        if Path("/proc/self/stat").exists():
            return False  # Linux, and the process is gone
    else:
        return state not in ("Z", "X")
    try:
        os.kill(pid, 0)  # POSIX without /proc: signal 0 only checks
    except ProcessLookupError:
        return False
    return True


def _wait_gone(pid: int, seconds: float = 10.0) -> bool:
    deadline = time.monotonic() + seconds
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def _started_tree(tmp_path: Path) -> tuple[subprocess.Popen[bytes], int]:
    pid_file = tmp_path / "child.pid"
    server = process.start([sys.executable, "-c", PARENT, str(pid_file)])
    deadline = time.monotonic() + 20
    while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return server, int(pid_file.read_text())


def test_kill_stops_the_server_and_its_child(tmp_path: Path) -> None:
    server, child = _started_tree(tmp_path)
    assert _alive(child)
    process.kill(server)
    server.wait(timeout=10)
    assert _wait_gone(child), "the server's child outlived it"
    for stream in (server.stdin, server.stdout, server.stderr):
        assert stream is not None
        stream.close()


def test_terminate_then_kill_leaves_nothing(tmp_path: Path) -> None:
    server, child = _started_tree(tmp_path)
    process.terminate(server)
    # A console program on Windows may refuse a polite stop: kill is next either way.
    with contextlib.suppress(subprocess.TimeoutExpired):
        server.wait(timeout=5)
    process.kill(server)
    server.wait(timeout=10)
    assert _wait_gone(child)
    for stream in (server.stdin, server.stdout, server.stderr):
        assert stream is not None
        stream.close()


def test_a_bare_python_starts_this_python() -> None:
    server = process.start(["python", "-c", "import sys; print(sys.executable)"])
    out, _ = server.communicate(timeout=30)
    assert out.decode().strip() == sys.executable
    assert server.returncode == 0


def test_a_missing_program_raises_as_popen_does(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        process.start([str(tmp_path / "no-such-server")])


# A server that starts a long-lived child and exits at once.
EXITING_PARENT = PARENT.rsplit("time.sleep(300)", 1)[0]


@pytest.mark.skipif(
    sys.platform == "win32",
    reason="Windows has no group to signal once its leader exits; taskkill /T walks live trees",
)
def test_kill_after_the_server_exited_stops_what_it_left_behind(tmp_path: Path) -> None:
    pid_file = tmp_path / "child.pid"
    server = process.start([sys.executable, "-c", EXITING_PARENT, str(pid_file)])
    server.wait(timeout=30)
    child = int(pid_file.read_text())
    assert _alive(child)
    process.kill(server)
    assert _wait_gone(child)
    for stream in (server.stdin, server.stdout, server.stderr):
        assert stream is not None
        stream.close()
