"""A minimal MCP client that does one thing: list a server's tools, every page, and go.

Two transports, one protocol flow (``list_tools``):

- stdio: the server is started from an argv list (never a shell) in its own process group,
  spoken to over newline-delimited JSON-RPC, and always reaped — on a timeout the whole
  group is killed, so a server's own children do not outlive it;
- streamable HTTP: JSON-RPC POSTs answered by a JSON body or an SSE stream, carrying
  ``Mcp-Session-Id`` and ``MCP-Protocol-Version``. Extra headers (auth) are sent and never
  printed.

The handshake is tried first (``initialize`` offering 2025-11-25, accepting what the server
negotiates among the handshake revisions). A server that rejects ``initialize`` is asked
again on a fresh connection in the 2026-07-28 style: a bare ``tools/list`` carrying the
per-request ``_meta`` envelope.

Every fault is a ``CouldNotJudge`` naming the server, with the stderr tail for stdio.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_toll._version import __version__
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_TIMEOUT

if TYPE_CHECKING:
    import httpx

LATEST_HANDSHAKE_VERSION = "2025-11-25"
#: Revisions reached through ``initialize``; ``tools/list`` means the same in all of them.
HANDSHAKE_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
MODERN_VERSION = "2026-07-28"
PROTOCOL_VERSION_META_KEY = "io.modelcontextprotocol/protocolVersion"
CLIENT_CAPABILITIES_META_KEY = "io.modelcontextprotocol/clientCapabilities"
CLIENT_INFO_META_KEY = "io.modelcontextprotocol/clientInfo"
CLIENT_INFO = {"name": "pytest-toll", "version": __version__}

#: A server that pages forever without repeating a cursor is still stopped here.
MAX_PAGES = 10_000
_STDERR_TAIL_LINES = 20
_STDERR_TAIL_CHARS = 2_000
_NOISE_SAMPLES = 5
# How long a server gets to exit by itself once its stdin is closed, then after SIGTERM.
_GRACE_SECONDS = 2.0

METHOD_NOT_FOUND = -32601


class RpcError(CouldNotJudge):
    """The server answered a request with a JSON-RPC error."""

    def __init__(self, message: str, code: int | None, rpc_message: str) -> None:
        super().__init__(message)
        self.code = code
        self.rpc_message = rpc_message


@dataclass
class Noise:
    """Lines on a stdio server's stdout that are not JSON-RPC (rule E116)."""

    count: int = 0
    samples: list[str] = field(default_factory=list)

    def add(self, line: str) -> None:
        self.count += 1
        if len(self.samples) < _NOISE_SAMPLES:
            self.samples.append(line[:200])


@dataclass(frozen=True)
class Listing:
    """What a server advertised: its tools elements (all pages, in order) and instructions."""

    target: str
    transport: str
    tools: tuple[Mapping[str, Any], ...]
    instructions: str | None
    protocol_version: str
    server_name: str | None
    pages: int
    noise_count: int = 0
    noise_samples: tuple[str, ...] = ()


class Session(Protocol):
    """One connection to a server; ``request`` returns the JSON-RPC ``result``."""

    target: str
    protocol_version: str | None

    def request(self, method: str, params: Mapping[str, Any] | None) -> Any: ...

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None: ...

    def close(self) -> None: ...


def _modern_params(params: Mapping[str, Any] | None) -> dict[str, Any]:
    meta = {
        PROTOCOL_VERSION_META_KEY: MODERN_VERSION,
        CLIENT_CAPABILITIES_META_KEY: {},
        CLIENT_INFO_META_KEY: CLIENT_INFO,
    }
    return {**(params or {}), "_meta": meta}


def _describe_error(error: object) -> tuple[int | None, str]:
    if isinstance(error, dict):
        code = error.get("code")
        return (code if isinstance(code, int) else None), str(error.get("message", ""))
    return None, str(error)


def list_tools(open_session: Callable[[], Session], *, modern_only: bool = False) -> Listing:
    """Handshake (or the 2026-07-28 fallback), then ``tools/list`` through every page."""
    session = open_session()
    try:
        if modern_only:
            return _list_pages(session, modern=True, instructions=None, server_name=None)
        try:
            initialized = session.request(
                "initialize",
                {
                    "protocolVersion": LATEST_HANDSHAKE_VERSION,
                    "capabilities": {},
                    "clientInfo": CLIENT_INFO,
                },
            )
        except RpcError as refused:
            # A 2026-07-28 server has no handshake: it refuses initialize (unknown method or
            # unsupported version). Ask again, bare, on a connection that never saw it.
            session.close()
            session = open_session()
            try:
                return _list_pages(session, modern=True, instructions=None, server_name=None)
            except RpcError as also:
                raise RpcError(
                    f"{also} (initialize was refused too: {refused.rpc_message})",
                    also.code,
                    also.rpc_message,
                ) from None
        if not isinstance(initialized, dict):
            raise CouldNotJudge(
                f"{session.target}: initialize result is not an object: {_clip(initialized)}"
            )
        version = initialized.get("protocolVersion")
        if version not in HANDSHAKE_VERSIONS:
            raise CouldNotJudge(
                f"{session.target}: server negotiated protocol version {version!r}; "
                f"toll speaks {', '.join(HANDSHAKE_VERSIONS)} and {MODERN_VERSION}"
            )
        session.protocol_version = version
        session.notify("notifications/initialized")
        instructions = initialized.get("instructions")
        info = initialized.get("serverInfo")
        name = info.get("name") if isinstance(info, dict) else None
        return _list_pages(
            session,
            modern=False,
            instructions=instructions if isinstance(instructions, str) else None,
            server_name=name if isinstance(name, str) else None,
        )
    finally:
        session.close()


def _list_pages(
    session: Session, *, modern: bool, instructions: str | None, server_name: str | None
) -> Listing:
    if modern:
        session.protocol_version = MODERN_VERSION
    tools: list[Mapping[str, Any]] = []
    seen_cursors: set[str] = set()
    cursor: str | None = None
    pages = 0
    while True:
        params: dict[str, Any] = {} if cursor is None else {"cursor": cursor}
        result = session.request("tools/list", _modern_params(params) if modern else params)
        pages += 1
        where = f"{session.target}: tools/list page {pages}"
        if not isinstance(result, dict) or not isinstance(result.get("tools"), list):
            raise CouldNotJudge(f"{where}: result is not a tools list: {_clip(result)}")
        for index, element in enumerate(result["tools"]):
            if not isinstance(element, dict):
                raise CouldNotJudge(f"{where}: tools[{index}] is not an object: {_clip(element)}")
        tools.extend(result["tools"])
        next_cursor = result.get("nextCursor")
        if next_cursor is None or next_cursor == "":
            break
        if not isinstance(next_cursor, str):
            raise CouldNotJudge(f"{where}: nextCursor must be a string, not {_clip(next_cursor)}")
        if next_cursor in seen_cursors:
            raise CouldNotJudge(
                f"{where}: nextCursor {_clip(next_cursor)} was already returned by an earlier "
                "page; the server loops on its cursor"
            )
        if pages >= MAX_PAGES:
            raise CouldNotJudge(f"{where}: still paging after {MAX_PAGES} pages; gave up")
        seen_cursors.add(next_cursor)
        cursor = next_cursor
    noise = getattr(session, "noise", None)
    return Listing(
        target=session.target,
        transport="stdio" if isinstance(session, StdioSession) else "http",
        tools=tuple(tools),
        instructions=instructions,
        protocol_version=session.protocol_version or "",
        server_name=server_name,
        pages=pages,
        noise_count=noise.count if isinstance(noise, Noise) else 0,
        noise_samples=tuple(noise.samples) if isinstance(noise, Noise) else (),
    )


def _clip(value: object, limit: int = 120) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# --- stdio ------------------------------------------------------------------------------


def describe_command(command: Sequence[str]) -> str:
    return shlex.join(command)


class StdioSession:
    """A server process spoken to over its stdin/stdout; stderr is kept as a tail."""

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
            self._process = subprocess.Popen(
                list(command),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env={**os.environ, **env} if env else None,
                cwd=cwd,
                # Its own process group: a timeout kills the server and its children together.
                start_new_session=True,
            )
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
                code, text = _describe_error(answer["error"])
                raise RpcError(
                    self._fault(f"{method} failed: JSON-RPC error {code}: {text}"), code, text
                )
            if "result" not in answer:
                raise CouldNotJudge(
                    self._fault(f"answer to {method} has neither result nor error: {_clip(answer)}")
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
                _signal_group(process.pid, signal.SIGTERM)
                with contextlib.suppress(subprocess.TimeoutExpired):
                    process.wait(timeout=_GRACE_SECONDS)
            _signal_group(process.pid, signal.SIGKILL)
            process.wait()
        # Children the server left behind in its group go too.
        _signal_group(process.pid, signal.SIGKILL)
        for reader in self._readers:
            reader.join(timeout=1.0)
        for stream in (process.stdout, process.stderr):
            if stream is not None:
                stream.close()


def _signal_group(pgid: int, signal_number: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal_number)


def list_stdio(
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    modern_only: bool = False,
) -> Listing:
    """List the tools of a stdio server started from ``command`` (an argv list)."""
    _check_timeout(timeout)
    deadline = time.monotonic() + timeout
    noise = Noise()

    def open_session() -> Session:
        return StdioSession(
            command, deadline=deadline, timeout=timeout, env=env, cwd=cwd, noise=noise
        )

    return list_tools(open_session, modern_only=modern_only)


def _check_timeout(timeout: float) -> None:
    if not timeout > 0:
        raise CouldNotJudge(f"timeout must be a positive number of seconds, not {timeout}")


# --- streamable HTTP --------------------------------------------------------------------


def iter_sse(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """Server-sent events from text lines: ``(event type, data)``, type ``message`` by default.

    Per the SSE rules: ``:`` starts a comment, one space after the colon is dropped, ``data``
    lines join with ``\\n``, a blank line dispatches. An event left open at the end of the
    stream is dispatched too (a server that closes without the final blank line).
    """
    event = ""
    data: list[str] = []
    has_data = False
    for line in lines:
        if line == "":
            if has_data:
                yield event or "message", "\n".join(data)
            event, data, has_data = "", [], False
            continue
        if line.startswith(":"):
            continue
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "data":
            data.append(value)
            has_data = True
        elif name == "event":
            event = value
    if has_data:
        yield event or "message", "\n".join(data)


class HttpSession:
    """A streamable-HTTP endpoint. Header values are sent, never printed."""

    def __init__(
        self,
        url: str,
        *,
        deadline: float,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        import httpx

        self.target = url
        self.url = url
        self.protocol_version: str | None = None
        self.session_id: str | None = None
        #: The content type of every answer, in order (JSON bodies and event streams).
        self.content_types: list[str] = []
        self._deadline = deadline
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._client = httpx.Client(headers=dict(headers or {}), follow_redirects=False)

    def _headers(self, method: str) -> dict[str, str]:
        headers = {
            "Accept": "application/json, text/event-stream",
            "Content-Type": "application/json",
        }
        if self.session_id is not None:
            headers["Mcp-Session-Id"] = self.session_id
        if self.protocol_version is not None:
            headers["MCP-Protocol-Version"] = self.protocol_version
        if self.protocol_version == MODERN_VERSION:
            headers["Mcp-Method"] = method
        return headers

    def _remaining(self, method: str) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise CouldNotJudge(
                f"{self.url}: no answer to {method} within the {self._timeout:g}s timeout"
            )
        return remaining

    @contextlib.contextmanager
    def _transport_errors(self, method: str) -> Iterator[None]:
        """httpx's timeouts and transport failures, as could-not-judge naming the URL."""
        import httpx

        try:
            yield
        except httpx.TimeoutException:
            raise CouldNotJudge(
                f"{self.url}: no answer to {method} within the {self._timeout:g}s timeout"
            ) from None
        except httpx.HTTPError as error:
            raise CouldNotJudge(
                f"{self.url}: {method} failed: {type(error).__name__}: {error}"
            ) from None

    def _post(self, method: str, message: Mapping[str, Any]) -> httpx.Response:
        request = self._client.build_request(
            "POST",
            self.url,
            content=json.dumps(message).encode(),
            headers=self._headers(method),
            timeout=self._remaining(method),
        )
        with self._transport_errors(method):
            return self._client.send(request, stream=True)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        response = self._post(method, message)
        try:
            if response.status_code >= 400:
                with self._transport_errors(method):
                    response.read()
                raise CouldNotJudge(self._http_fault(method, response))
        finally:
            response.close()

    def _http_fault(self, method: str, response: httpx.Response) -> str:
        body = response.text.strip()
        hint = ""
        if response.status_code in (401, 403):
            hint = " (the server wants credentials: pass them with --header or headers:)"
        elif response.is_redirect:
            # Not followed, so credentials in the headers never go to an address not given.
            location = response.headers.get("location", "?")
            return f"{self.url}: HTTP {response.status_code} to {method}: redirected to {location}; use that URL"
        shown = f": {_clip(body, 200)}" if body else ""
        return f"{self.url}: HTTP {response.status_code} to {method}{hint}{shown}"

    def request(self, method: str, params: Mapping[str, Any] | None) -> Any:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        response = self._post(method, message)
        # Reading the body can time out or break too, not only sending the request.
        try:
            with self._transport_errors(method):
                if method == "initialize":
                    self.session_id = response.headers.get("mcp-session-id")
                content_type = (
                    response.headers.get("content-type", "").split(";")[0].strip().lower()
                )
                self.content_types.append(content_type)
                if content_type == "text/event-stream" and response.status_code < 400:
                    answer = self._answer_from_stream(method, request_id, response)
                elif content_type == "application/json":
                    response.read()
                    answer = self._answer_from_json(method, request_id, response)
                else:
                    response.read()
                    if response.status_code >= 300:
                        raise CouldNotJudge(self._http_fault(method, response))
                    raise CouldNotJudge(
                        f"{self.url}: answer to {method} is {content_type or 'untyped'} "
                        f"(HTTP {response.status_code}), not JSON or an event stream"
                    )
        finally:
            response.close()
        if "error" in answer:
            code, text = _describe_error(answer["error"])
            raise RpcError(
                f"{self.url}: {method} failed: JSON-RPC error {code}: {text}", code, text
            )
        if "result" not in answer:
            raise CouldNotJudge(
                f"{self.url}: answer to {method} has neither result nor error: {_clip(answer)}"
            )
        return answer["result"]

    def _answer_from_json(
        self, method: str, request_id: int, response: httpx.Response
    ) -> Mapping[str, Any]:
        try:
            body = json.loads(response.content)
        except ValueError:
            if response.status_code >= 400:
                raise CouldNotJudge(self._http_fault(method, response)) from None
            raise CouldNotJudge(
                f"{self.url}: answer to {method} is not valid JSON: {_clip(response.text)}"
            ) from None
        for message in body if isinstance(body, list) else [body]:
            if (
                isinstance(message, dict)
                and message.get("id") in (request_id, None)
                and ("result" in message or "error" in message)
            ):
                return message
        if response.status_code >= 400:
            raise CouldNotJudge(self._http_fault(method, response))
        raise CouldNotJudge(f"{self.url}: no answer to {method} in the JSON body: {_clip(body)}")

    def _answer_from_stream(
        self, method: str, request_id: int, response: httpx.Response
    ) -> Mapping[str, Any]:
        for event, data in iter_sse(response.iter_lines()):
            self._remaining(method)
            if event != "message":
                continue
            try:
                message = json.loads(data)
            except ValueError:
                raise CouldNotJudge(
                    f"{self.url}: an event in the answer to {method} is not JSON: {_clip(data)}"
                ) from None
            if isinstance(message, dict) and message.get("id") == request_id:
                return message
        raise CouldNotJudge(f"{self.url}: the event stream ended without an answer to {method}")

    def close(self) -> None:
        try:
            if self.session_id is not None:
                # Ending the session is a courtesy; a server that refuses it has nothing to tell us.
                self._client.delete(
                    self.url,
                    headers={"Mcp-Session-Id": self.session_id, **self._headers("")},
                    timeout=min(2.0, max(self._deadline - time.monotonic(), 0.1)),
                )
        except Exception:
            pass
        finally:
            self._client.close()


def list_http(
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    modern_only: bool = False,
) -> Listing:
    """List the tools of a streamable-HTTP MCP endpoint."""
    _check_timeout(timeout)
    if not url.startswith(("http://", "https://")):
        raise CouldNotJudge(f"{url}: not an http:// or https:// URL")
    deadline = time.monotonic() + timeout

    def open_session() -> Session:
        return HttpSession(url, deadline=deadline, timeout=timeout, headers=headers)

    return list_tools(open_session, modern_only=modern_only)
