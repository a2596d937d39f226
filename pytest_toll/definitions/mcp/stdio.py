"""The stdio transport: a server started from an argv list, spoken to over its stdin/stdout.

The server is started from an argv list (never a shell) in its own process group, spoken to
over newline-delimited JSON-RPC, and always reaped — on a timeout the whole group is killed,
so a server's own children do not outlive it. Faults carry the server's stderr tail.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_TIMEOUT
from pytest_toll.definitions.mcp import process as server_process
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
_STDERR_TAIL_CHARS = 2_000
# How long a server gets to exit by itself once its stdin is closed, then after SIGTERM.
_GRACE_SECONDS = 2.0


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
        self._deadline = deadline
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._lines: queue.Queue[str | None] = queue.Queue()
        self._stderr: deque[str] = deque(maxlen=_STDERR_TAIL_LINES)
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
        self._closed = False
        self._readers = [
            threading.Thread(target=self._read_stdout, daemon=True),
            threading.Thread(target=self._read_stderr, daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    def _read_stdout(self) -> None:
        assert self._process.stdout is not None
        for raw in self._process.stdout:
            self._lines.put(raw.decode("utf-8", "replace").rstrip("\r\n"))
        self._lines.put(None)

    def _read_stderr(self) -> None:
        assert self._process.stderr is not None
        for raw in self._process.stderr:
            self._stderr.append(raw.decode("utf-8", "replace").rstrip("\r\n"))

    def stderr_tail(self) -> str:
        text = "\n".join(self._stderr)
        if len(text) > _STDERR_TAIL_CHARS:
            text = "…" + text[-_STDERR_TAIL_CHARS:]
        return text

    def _fault(self, message: str) -> str:
        """``message`` with the server's stderr tail appended (after the process is gone)."""
        self.close()
        tail = self.stderr_tail()
        if not tail:
            return f"{self.target}: {message} (stderr was empty)"
        indented = "\n".join(f"  | {line}" for line in tail.splitlines())
        return f"{self.target}: {message}\n  stderr (last lines):\n{indented}"

    def _send(self, message: Mapping[str, Any]) -> None:
        assert self._process.stdin is not None
        try:
            self._process.stdin.write(json.dumps(message).encode() + b"\n")
            self._process.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            running = "stopped reading its stdin but did not exit"
            raise CouldNotJudge(self._fault(self._exit_description(running))) from None

    def _exit_description(self, running: str = "closed its stdout but did not exit") -> str:
        try:
            code = self._process.wait(timeout=_GRACE_SECONDS)
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
            remaining = self._deadline - time.monotonic()
            try:
                line = self._lines.get(timeout=max(remaining, 0.0))
            except queue.Empty:
                raise CouldNotJudge(
                    self._fault(
                        f"no answer to {method} within the {self._timeout:g}s timeout; "
                        "killed the server's process group"
                    )
                ) from None
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
            message = json.loads(line)
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
        else:
            reply["error"] = {"code": METHOD_NOT_FOUND, "message": "not offered by pytest-toll"}
        self._send(reply)

    def close(self) -> None:
        """Stop the server (stdin closed, then SIGTERM, then SIGKILL to its group) and reap it."""
        if self._closed:
            return
        self._closed = True
        process = self._process
        try:
            if process.stdin is not None:
                process.stdin.close()
        except OSError:
            pass
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
        for reader in self._readers:
            reader.join(timeout=1.0)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


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
