"""The stdio transport: a server started from an argv list, spoken to over its stdin/stdout.

The server is started from an argv list (never a shell) in its own process group, spoken to
over newline-delimited JSON-RPC, and always reaped — on a timeout the whole group is killed,
so a server's own children do not outlive it. Faults carry the server's stderr tail.

Bounded in time and memory whatever the server does: its pipes are read under the
measurement's deadline, never by a blocking ``readline`` on this thread (``select`` on
POSIX, reader threads on Windows: see ``pumps``); a stdout line
is read against ``MAX_MESSAGE_BYTES`` and only the last ``STDERR_TAIL_BYTES`` of stderr are
kept. A process that left the group (``setsid``) but still holds the server's pipes is found
through ``/proc`` on Linux and killed; where it cannot be, the message says so.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import shlex
import signal
import subprocess
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.inert import inert
from pytest_toll.core.limits import DEFAULT_TIMEOUT, MAX_MESSAGE_BYTES, STDERR_TAIL_BYTES
from pytest_toll.core.secrets import remember_setting, scrub_window
from pytest_toll.core.textio import describe_size, json_within_depth
from pytest_toll.definitions.mcp import process as server_process
from pytest_toll.definitions.mcp import pumps
from pytest_toll.definitions.mcp.listing import (
    METHOD_NOT_FOUND,
    Listing,
    Noise,
    RpcError,
    Session,
    check_timeout,
    clip,
    describe_rpc_error,
    list_tools,
)

_STDERR_TAIL_LINES = 20
# How long a server gets to exit by itself once its stdin is closed, then after SIGTERM.
_GRACE_SECONDS = 2.0
#: How the server's bytes arrive (``pumps``): ``select`` needs non-blocking pipes, which
#: Windows lacks. Tests set it to run every stdio case through both. On the thread pump a
#: reader blocked on a pipe a detached grandchild holds cannot be interrupted: it is a
#: daemon thread, and the measurement still ends at its deadline.
_PUMP = "threads" if os.name == "nt" else "select"
#: How long a send waits for its write before reading what the server wrote meanwhile.
_WRITE_POLL_SECONDS = 0.05
# How often a silent server is checked for having exited, and how long its stdout may stay
# open after that (held by something it started) before it counts as closed.
_POLL_SECONDS = 0.25
_AFTER_EXIT_SECONDS = 0.5


def describe_command(command: Sequence[str]) -> str:
    return shlex.join(command)


class StdioSession:
    """A server process spoken to over its stdin/stdout; stderr is kept as a tail."""

    transport = "stdio"

    def __init__(
        self,
        command: Sequence[str],
        *,
        deadline: float,
        timeout: float,
        env: Mapping[str, str] | None = None,
        cwd: Path | None = None,
        noise: Noise | None = None,
    ) -> None:
        if not command:
            raise CouldNotJudge("no server command given")
        self.target = describe_command(command)
        self.protocol_version: str | None = None
        self.noise = noise if noise is not None else Noise()
        #: Why a process the server started may outlive it, once ``close`` found one.
        self.orphans: str | None = None
        self._deadline = deadline
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._lines: deque[str] = deque()
        self._partial = bytearray()
        self._stderr = bytearray()
        self._events: deque[pumps.Event] = deque()
        self._closed = False
        #: The folder ``roots/list`` answers with (the declared ``roots`` capability).
        self._root = Path(cwd if cwd is not None else os.getcwd()).resolve()
        self.answers_roots = True
        for name, value in (env or {}).items():
            remember_setting(name, value, kind="env")
        if cwd is not None and not Path(cwd).is_dir():
            raise CouldNotJudge(f"{self.target}: working directory {cwd} does not exist")
        try:
            # Its own process group: a timeout kills the server and its children together.
            self._process = server_process.start(command, env=env, cwd=cwd)
        except FileNotFoundError:
            where = f" (in {cwd})" if cwd else ""
            raise CouldNotJudge(f"{self.target}: command not found: {command[0]}{where}") from None
        except PermissionError as error:
            raise CouldNotJudge(f"{self.target}: cannot execute: {error}") from None
        except OSError as error:
            raise CouldNotJudge(f"{self.target}: cannot start: {error}") from None
        self._bytes = pumps.start_pump(_PUMP, self._process)
        self._open_streams = {"stdout", "stderr"}

    # --- reading, under the deadline -----------------------------------------------------

    def _pump(self, until: float) -> None:
        """Take in whatever the server wrote, waiting at most until ``until``."""
        if not self._events:
            # With both streams closed this still waits (for a write), never spins.
            self._events.extend(self._bytes.wait(until))
        # One event at a time: a fault raised by one leaves the rest (an end of stream among
        # them) to be taken in while the session closes.
        while self._events:
            name, chunk = self._events.popleft()
            if not chunk:
                self._open_streams.discard(name)
                if name == "stdout" and self._partial:
                    self._take_line(bytes(self._partial))
                    self._partial.clear()
            elif name == "stdout":
                self._take_stdout(chunk)
            else:
                self._stderr += chunk
                if len(self._stderr) > 2 * STDERR_TAIL_BYTES:
                    del self._stderr[:-STDERR_TAIL_BYTES]

    def _take_stdout(self, chunk: bytes) -> None:
        *complete, rest = chunk.split(b"\n")
        if complete:
            self._take_line(bytes(self._partial) + complete[0])
            self._partial.clear()
            for line in complete[1:]:
                self._take_line(line)
        self._partial += rest
        if len(self._partial) > MAX_MESSAGE_BYTES:
            self._partial.clear()
            raise CouldNotJudge(
                self._fault(
                    f"a stdout line is longer than the {describe_size(MAX_MESSAGE_BYTES)} read "
                    "limit; cut, nothing measured"
                )
            )

    def _take_line(self, raw: bytes) -> None:
        if len(raw) > MAX_MESSAGE_BYTES:
            raise CouldNotJudge(
                self._fault(
                    f"a stdout line is longer than the {describe_size(MAX_MESSAGE_BYTES)} read "
                    "limit; cut, nothing measured"
                )
            )
        self._lines.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

    def _next_line(self, method: str) -> str | None:
        """The next stdout line; None once stdout is closed, or soon after the server exited
        while something it started still holds stdout; a fault at the deadline."""
        exited_at: float | None = None
        while not self._lines:
            if "stdout" not in self._open_streams:
                return None
            now = time.monotonic()
            if now >= self._deadline:
                raise CouldNotJudge(
                    self._fault(
                        f"no answer to {method} within the {self._timeout:g}s timeout; "
                        "killed the server's process group"
                    )
                )
            if exited_at is None and self._process.poll() is not None:
                exited_at = now
            if exited_at is not None and now - exited_at > _AFTER_EXIT_SECONDS:
                return None
            self._pump(min(self._deadline, now + _POLL_SECONDS))
        return self._lines.popleft()

    def stderr_tail(self) -> str:
        """The last lines of the server's stderr, scrubbed, then cut, each line inert.

        The kept bytes are already a window (only the last ``STDERR_TAIL_BYTES`` are kept as
        they arrive): a piece of a secret at its cut start is masked as the secret."""
        data = bytes(self._stderr[-STDERR_TAIL_BYTES:])
        cut = len(self._stderr) > STDERR_TAIL_BYTES
        text = data.decode("utf-8", "replace")
        if cut:
            # A cut through a UTF-8 sequence decodes to U+FFFD; a secret's piece follows it.
            text = text.lstrip("\ufffd")
        text = scrub_window(text, cut_before=cut)
        lines = text.splitlines()
        if len(lines) > _STDERR_TAIL_LINES:
            lines, cut = lines[-_STDERR_TAIL_LINES:], True
        text = "\n".join(inert(line) for line in lines)
        return "…" + text if cut and text else text

    def _fault(self, message: str) -> str:
        """``message`` with the server's stderr tail appended (after the process is gone)."""
        self.close()
        orphans = f"; {self.orphans}" if self.orphans else ""
        tail = self.stderr_tail()
        if not tail:
            return f"{self.target}: {message}{orphans} (stderr was empty)"
        indented = "\n".join(f"  | {line}" for line in tail.splitlines())
        return f"{self.target}: {message}{orphans}\n  stderr (last lines):\n{indented}"

    # --- writing, under the deadline -----------------------------------------------------

    def _send(self, message: Mapping[str, Any]) -> None:
        try:
            self._bytes.start_write(json.dumps(message).encode() + b"\n")
            while True:
                if self._deadline - time.monotonic() <= 0:
                    raise CouldNotJudge(
                        self._fault(
                            f"stopped reading its stdin; gave up at the {self._timeout:g}s "
                            "timeout and killed the server's process group"
                        )
                    )
                if self._bytes.write_done():
                    return
                # Its stdin is full: read what it writes meanwhile, so neither side waits.
                self._pump(min(self._deadline, time.monotonic() + _WRITE_POLL_SECONDS))
        except (BrokenPipeError, ValueError, OSError):
            running = "stopped reading its stdin but did not exit"
            raise CouldNotJudge(self._fault(self._exit_description(running))) from None

    def _exit_description(self, running: str = "closed its stdout but did not exit") -> str:
        grace = min(_GRACE_SECONDS, max(self._deadline - time.monotonic(), 0.0))
        try:
            code = self._process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return running
        if code < 0:
            try:
                return f"exited, killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"exited, killed by signal {-code}"
        return f"exited with code {code} before answering"

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._send(message)

    def request(self, method: str, params: Mapping[str, Any] | None) -> Any:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._send(message)
        while True:
            line = self._next_line(method)
            if line is None:
                raise CouldNotJudge(self._fault(f"{self._exit_description()} ({method})"))
            answer = self._parse(line)
            if answer is None:
                continue
            if "method" in answer:
                self._answer_server_request(answer)
                continue
            if answer.get("id") != request_id:
                continue  # an answer to something we no longer wait for
            if "error" in answer:
                code, text = describe_rpc_error(answer["error"])
                raise RpcError(
                    self._fault(f"{method} failed: JSON-RPC error {code}: {text}"), code, text
                )
            if "result" not in answer:
                raise CouldNotJudge(
                    self._fault(f"answer to {method} has neither result nor error: {clip(answer)}")
                )
            return answer["result"]

    def _parse(self, line: str) -> dict[str, Any] | None:
        if not line.strip():
            return None
        try:
            message = json_within_depth(line)
        except ValueError:
            message = None
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            self.noise.add(line)
            return None
        return message

    def _answer_server_request(self, message: Mapping[str, Any]) -> None:
        # A server may ping, or ask for things we never offered; answering keeps it from
        # waiting on us. Notifications (no id) need no answer.
        if "id" not in message:
            return
        reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
        if message.get("method") == "ping":
            reply["result"] = {}
        elif message.get("method") == "roots/list":
            # The one root a host shares: the folder the server runs in.
            reply["result"] = {"roots": [{"uri": self._root.as_uri(), "name": self._root.name}]}
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": "not offered by pytest-toll"}
        self._send(reply)

    def close(self) -> None:
        """Stop the server (stdin closed, then SIGTERM, then SIGKILL to its group), reap it,
        and make sure nothing it started still holds its pipes."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        self._bytes.close_stdin()
        past_deadline = time.monotonic() >= self._deadline
        try:
            process.wait(timeout=0 if past_deadline else _GRACE_SECONDS)
        except subprocess.TimeoutExpired:
            if not past_deadline:
                server_process.terminate(process)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=_GRACE_SECONDS)
            server_process.kill(process)
            process.wait()
        # Children the server left behind in its group go too.
        server_process.kill(process)
        self._drain_and_close()

    def _drain_and_close(self) -> None:
        """Read the pipes to their end; a process outside the group that still holds one
        (it called ``setsid``) is killed when it can be found, and named otherwise."""
        self._pump_until_closed(time.monotonic() + 0.2)
        if self._open_streams:
            holders = _pipe_holders(self._process, self._open_streams)
            for pid in holders:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            self._pump_until_closed(time.monotonic() + 0.5)
            if self._open_streams:
                self.orphans = (
                    "a process the server started outside its process group still holds its "
                    f"{' and '.join(sorted(self._open_streams))} and may outlive toll"
                )
            elif holders:
                self.orphans = (
                    f"killed {len(holders)} process{'es' if len(holders) > 1 else ''} the "
                    "server had started outside its process group (setsid) that still held "
                    "its pipes"
                )
        self._bytes.close()

    def _pump_until_closed(self, until: float) -> None:
        with contextlib.suppress(CouldNotJudge):  # a cut line no longer matters here
            while self._open_streams and time.monotonic() < until:
                self._pump(until)
        self._lines.clear()


def _pipe_holders(process: subprocess.Popen[bytes], names: set[str]) -> list[int]:
    """Other processes holding the server's ``names`` pipes (Linux ``/proc``; else none)."""
    streams = {"stdout": process.stdout, "stderr": process.stderr}
    wanted = set()
    for name in names:
        stream = streams.get(name)
        if stream is not None:
            with contextlib.suppress(OSError, ValueError):
                wanted.add(f"pipe:[{os.fstat(stream.fileno()).st_ino}]")
    holders: list[int] = []
    me = os.getpid()
    try:
        pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
    except OSError:
        return holders
    for pid in pids:
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue  # gone, or not ours to look at
        if any(_link(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
            holders.append(pid)
    return holders


def _link(path: str) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def list_stdio(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    modern_only: bool = False,
) -> Listing:
    """List the tools of a stdio server started from ``command`` (an argv list)."""
    check_timeout(timeout)
    deadline = time.monotonic() + timeout
    noise = Noise()

    def open_session() -> Session:
        return StdioSession(
            command, deadline=deadline, timeout=timeout, env=env, cwd=cwd, noise=noise
        )

    return list_tools(open_session, modern_only=modern_only)
