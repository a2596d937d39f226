"""The fault suite's tools: `toll` run as a real process under a memory limit, hostile stdio
servers written as small scripts, a hostile HTTP server on 127.0.0.1, and one check of what a
failure must look like (exit 2, one clean line, no secret, no leftover process)."""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import ClassVar

from tests.local_http import serving

#: The address space `toll` gets in these tests: far below what the unbounded reads took
#: (2.6 GB to 24 GB), far above what a bounded run needs.
MEMORY_LIMIT = 1 << 30
#: The measurement deadline the hostile cases that must hit it use. The tests assert the
#: mechanism (the deadline fired: its message; the process group is gone), never the wall
#: time a run took: on a loaded shared machine interpreter start alone can take seconds.
DEADLINE = 2.0
#: The deadline of the cases that must *not* hit one (an echoed key, a huge body, a read
#: limit): long enough that no load makes the deadline fire before the fault under test.
NO_DEADLINE = 60.0
#: Secrets the cases configure; none may appear in any output.
TOKEN = "s3cr3t-token-4f9a2c"
API_KEY = "sk-ant-hostile-7e51d0c9"


@dataclass(frozen=True)
class Outcome:
    code: int
    stdout: str
    stderr: str

    @property
    def output(self) -> str:
        return self.stdout + self.stderr


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run_toll(
    *args: str,
    env: dict[str, str] | None = None,
    stdin: bytes | None = None,
    cwd: Path | None = None,
    wall: float = 40.0,
    pump: str | None = None,
) -> Outcome:
    """``toll ARGS`` in a child process with ``RLIMIT_AS`` at ``MEMORY_LIMIT``.

    ``wall`` only keeps a regression from hanging the suite: the cases assert far less.
    ``pump`` chooses how a stdio server is read (``select`` or ``threads``; else the
    platform's own).
    """
    choose = (
        f"from pytest_toll.definitions.mcp import stdio; stdio._PUMP = {pump!r}; " if pump else ""
    )
    code = f"import sys; {choose}from pytest_toll.cli import main; sys.exit(main())"
    completed = subprocess.run(
        [sys.executable, "-c", code, *args],
        input=stdin if stdin is not None else b"",
        capture_output=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=wall,
        preexec_fn=_limit_memory,
    )
    return Outcome(
        completed.returncode,
        completed.stdout.decode("utf-8", "replace"),
        completed.stderr.decode("utf-8", "replace"),
    )


def assert_could_not_judge(
    outcome: Outcome,
    *contains: str,
    secrets: Sequence[str] = (TOKEN, API_KEY),
) -> None:
    """Exit 2 with one clean ``toll: error:`` line naming the fault, and no secret anywhere.

    How long the run took is not judged (a deadline case names its deadline in the message;
    ``run_toll``'s ``wall`` only keeps a regression from hanging the suite).
    """
    assert outcome.code == 2, outcome
    lines = outcome.stderr.splitlines()
    assert len(lines) == 1, outcome.stderr
    assert lines[0].startswith("toll: error: "), outcome.stderr
    assert "Traceback" not in outcome.output and "MemoryError" not in outcome.output
    for text in contains:
        assert text in lines[0], lines[0]
    for secret in secrets:
        assert secret not in outcome.output, outcome.output


# --- hostile stdio servers ---------------------------------------------------------------

#: The first lines of every hostile server: it records its pid (and its children's) so the
#: test can prove none is left.
_PRELUDE = """\
import os, sys, time, json, subprocess
PIDS = {pids!r}
def note(pid):
    with open(PIDS, "a") as f:
        f.write(f"{{pid}}\\n")
note(os.getpid())
"""


def write_server(folder: Path, name: str, body: str) -> tuple[list[str], Path]:
    """A hostile server script; returns its argv and the file its pids are noted in."""
    pids = folder / f"{name}.pids"
    script = folder / f"{name}.py"
    script.write_text(_PRELUDE.format(pids=str(pids)) + textwrap.dedent(body))
    return [sys.executable, str(script)], pids


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def assert_no_leftover(pids_file: Path) -> None:
    """Every process the server noted is gone (a leftover is killed, then the test fails)."""
    deadline = time.monotonic() + 3.0
    pids = [int(line) for line in pids_file.read_text().split()] if pids_file.exists() else []
    alive = [pid for pid in pids if _alive(pid)]
    while alive and time.monotonic() < deadline:
        time.sleep(0.05)
        alive = [pid for pid in alive if _alive(pid)]
    for pid in alive:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert not alive, f"left running: {alive}"


# --- a hostile HTTP server ---------------------------------------------------------------

Behaviour = Callable[[BaseHTTPRequestHandler], None]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    behaviours: ClassVar[dict[str, Behaviour]] = {}

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length", "0"))
        self.rfile.read(length)
        behaviour = self.behaviours.get(self.path.split("?")[0])
        if behaviour is None:
            self.send_error(404)
            return
        with contextlib.suppress(OSError):
            behaviour(self)

    do_DELETE = do_POST

    def log_message(self, format: str, *args: object) -> None:
        pass


@contextlib.contextmanager
def http_server(behaviours: dict[str, Behaviour]) -> Iterator[str]:
    """A real HTTP server on 127.0.0.1 answering each path with its behaviour; yields the
    base URL."""
    handler = type("Handler", (_Handler,), {"behaviours": behaviours})
    with serving(handler) as base:
        yield base


def start(handler: BaseHTTPRequestHandler, status: int, content_type: str, **headers: str) -> None:
    """Send a status line and headers without a length: the body ends when the server
    closes the connection (so it can go on for as long as the server likes)."""
    handler.send_response(status)
    handler.send_header("Content-Type", content_type)
    handler.send_header("Connection", "close")
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.end_headers()
    handler.close_connection = True


def for_a_while(seconds: float = 20.0) -> Iterator[int]:
    """Loop indexes for at most ``seconds`` (a hostile behaviour never runs on forever)."""
    end = time.monotonic() + seconds
    index = 0
    while time.monotonic() < end:
        yield index
        index += 1


def drip(handler: BaseHTTPRequestHandler) -> None:
    """A JSON body that never ends: one byte every half second."""
    start(handler, 200, "application/json")
    for _ in for_a_while():
        handler.wfile.write(b" ")
        handler.wfile.flush()
        time.sleep(0.5)


def huge_body(handler: BaseHTTPRequestHandler) -> None:
    """A JSON body of gigabytes (until the client hangs up)."""
    start(handler, 200, "application/json")
    chunk = b" " * (1 << 20)
    for _ in for_a_while():
        handler.wfile.write(chunk)
