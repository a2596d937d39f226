"""The MCP client against real servers: the official SDK as the oracle, hand-written ones for
faults the SDK cannot produce. Every server is a real process; HTTP is real HTTP on 127.0.0.1."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.definitions.mcp import http as mcp_http
from pytest_toll.definitions.mcp import listing as mcp_listing
from pytest_toll.definitions.mcp import stdio as mcp_stdio
from tests.local_http import serving
from tests.servers import sdk_server

SERVERS = Path(__file__).parents[1] / "servers"
SDK_NAMES = ["read_file", "write_file", "search"]


def sdk(*args: str) -> list[str]:
    return [sys.executable, str(SERVERS / "sdk_server.py"), *args]


def raw(*args: str) -> list[str]:
    return [sys.executable, str(SERVERS / "raw_server.py"), *args]


def names(listing: mcp_listing.Listing) -> list[str]:
    return [str(tool["name"]) for tool in listing.tools]


def sdk_oracle(*args: str) -> list[dict[str, Any]]:
    """What the SDK itself lists for the same server, in-process, as wire dicts."""
    import anyio

    server = sdk_server.build(sdk_server.parse(list(args)))
    tools = anyio.run(server.list_tools)
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]


# --- stdio ------------------------------------------------------------------------------


def test_stdio_lists_what_the_sdk_serves_through_every_page(stdio_pump: str) -> None:
    listing = mcp_stdio.list_stdio(sdk("--page-size", "2", "--extra", "5"), timeout=20)
    extras = ["extra_000", "extra_001", "extra_002", "extra_003", "extra_004"]
    assert names(listing) == [*SDK_NAMES, *extras]
    assert [dict(tool) for tool in listing.tools] == sdk_oracle("--extra", "5")
    assert listing.instructions == (
        "Use read_file before write_file. Paths are relative to the project root."
    )
    assert (listing.transport, listing.protocol_version, listing.pages) == (
        "stdio",
        "2025-11-25",
        4,
    )
    assert listing.server_name == "toll-test-server"
    assert listing.noise_count == 0


# The SDK server's stdout banner (E116) and its order changing between connections (E112)
# are exercised end to end in tests/test_weigh.py.


def test_the_handshake_declares_roots_and_answers_roots_list_as_hosts_do(
    stdio_pump: str, tmp_path: Path
) -> None:
    # Claude Code and Gemini CLI declare roots (core/hosts.py); a server that lists a tool
    # only for such a client, after asking roots/list, lists it to toll too.
    listing = mcp_stdio.list_stdio(sdk("--roots-tool"), timeout=20, cwd=tmp_path)
    assert names(listing) == [*SDK_NAMES, "list_roots"]


def test_noise_between_answers_is_collected(stdio_pump: str) -> None:
    listing = mcp_stdio.list_stdio(raw("noise"), timeout=10)
    assert names(listing) == ["ping"]
    assert listing.protocol_version == "2025-06-18"
    # Two requests, each preceded by a non-JSON line and a JSON value that is not JSON-RPC;
    # blank lines are not noise.
    assert listing.noise_count == 4
    assert listing.noise_samples == (
        "DEBUG: handling initialize",
        "[1, 2, 3]",
        "DEBUG: handling tools/list",
        "[1, 2, 3]",
    )


def _gone(pid: int) -> bool:
    """Dead: no such process, or a zombie waiting for init to reap it."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def test_a_hang_times_out_and_the_whole_process_group_is_killed(
    tmp_path: Path, stdio_pump: str
) -> None:
    pid_file = tmp_path / "child.pid"
    with pytest.raises(CouldNotJudge) as caught:
        mcp_stdio.list_stdio(raw("hang", str(pid_file)), timeout=1.0)
    # The mechanism, not the wall time (a loaded machine may take seconds to start Python):
    # the deadline fired (the message says so) and the whole process group is gone.
    message = str(caught.value)
    assert "raw_server.py hang" in message
    assert (
        "no answer to initialize within the 1s timeout; killed the server's process group"
        in message
    )
    assert "  | hanging on purpose" in message
    child = int(pid_file.read_text())
    deadline = time.monotonic() + 3
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _gone(child), "the server's child outlived the timeout"


def test_a_server_that_dies_shows_its_exit_code_and_stderr(stdio_pump: str) -> None:
    with pytest.raises(CouldNotJudge) as caught:
        mcp_stdio.list_stdio(raw("die"), timeout=10)
    message = str(caught.value)
    assert message.endswith(
        "raw_server.py die: exited with code 3 before answering (initialize)\n"
        "  stderr (last lines):\n"
        "  | fatal: DATABASE_URL is not set"
    )


def test_a_json_rpc_error_is_reported_with_code_and_message(stdio_pump: str) -> None:
    with pytest.raises(mcp_listing.RpcError) as caught:
        mcp_stdio.list_stdio(sdk("--fail-list"), timeout=20)
    assert caught.value.code == -32603
    assert "tools/list failed: JSON-RPC error -32603: tool registry unavailable" in str(
        caught.value
    )
    assert "  | server ready" in str(caught.value)


def test_a_repeated_cursor_is_a_loop(stdio_pump: str) -> None:
    with pytest.raises(CouldNotJudge, match=r"tools/list page 2: nextCursor same was already"):
        mcp_stdio.list_stdio(sdk("--page-size", "1", "--loop-cursor"), timeout=20)


def test_a_result_that_is_not_a_tools_list(stdio_pump: str) -> None:
    with pytest.raises(
        CouldNotJudge, match=r"tools/list page 1: result is not a tools list: \{\"items\": \[\]\}"
    ):
        mcp_stdio.list_stdio(raw("not-a-list"), timeout=10)


def test_a_2026_server_without_initialize_gets_a_bare_tools_list(stdio_pump: str) -> None:
    listing = mcp_stdio.list_stdio(raw("bare"), timeout=10)
    assert names(listing) == ["ping"]
    assert listing.protocol_version == "2026-07-28"
    assert listing.instructions is None


def test_the_sdk_refusing_initialize_is_asked_the_2026_way(stdio_pump: str) -> None:
    listing = mcp_stdio.list_stdio(sdk("--modern-only"), timeout=20)
    assert names(listing) == SDK_NAMES
    assert listing.protocol_version == "2026-07-28"
    assert [dict(tool) for tool in listing.tools] == sdk_oracle()


def test_env_and_cwd_reach_the_server(tmp_path: Path, stdio_pump: str) -> None:
    listing = mcp_stdio.list_stdio(
        raw("env"), env={"TOLL_TEST_VALUE": "42"}, cwd=tmp_path, timeout=10
    )
    assert listing.tools[0]["description"] == f"42 in {tmp_path}"


def test_a_missing_command_and_a_bad_timeout(stdio_pump: str) -> None:
    with pytest.raises(CouldNotJudge, match=r"command not found: no-such-toll-server$"):
        mcp_stdio.list_stdio(["no-such-toll-server", "--flag"])
    with pytest.raises(CouldNotJudge, match="timeout must be a positive number"):
        mcp_stdio.list_stdio(sdk(), timeout=0)
    with pytest.raises(CouldNotJudge, match="no server command given"):
        mcp_stdio.list_stdio([])


def test_the_chosen_pump_moves_the_bytes_and_leaves_no_thread(stdio_pump: str) -> None:
    before = set(threading.enumerate())
    session = mcp_stdio.StdioSession(raw("noise"), deadline=time.monotonic() + 10, timeout=10)
    try:
        started = {thread.name for thread in set(threading.enumerate()) - before}
        readers = {"toll-stdout", "toll-stderr", "toll-stdin"}
        assert started == (readers if stdio_pump == "threads" else set())
        result = session.request("tools/list", None)
        assert [tool["name"] for tool in result["tools"]] == ["ping"]
        assert session.noise.count == 2
    finally:
        session.close()
    # Once the server is gone its pipes end, and so do the pump's threads.
    deadline = time.monotonic() + 3
    while set(threading.enumerate()) - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert set(threading.enumerate()) - before == set()


# --- streamable HTTP --------------------------------------------------------------------


def _start_http(*args: str) -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        sdk("--http", *args), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    port = process.stdout.readline().strip()
    if not port.isdigit():
        process.kill()
        raise RuntimeError(f"the HTTP test server did not start: {process.communicate()[1]}")
    return process, f"http://127.0.0.1:{port}/mcp"


@pytest.fixture(scope="module")
def sse_server() -> Iterator[str]:
    process, url = _start_http("--page-size", "2")
    yield url
    process.terminate()
    process.communicate(timeout=10)


@pytest.fixture(scope="module")
def json_server() -> Iterator[str]:
    process, url = _start_http("--json-response", "--expect-header", "Authorization=Bearer s3cret")
    yield url
    process.terminate()
    process.communicate(timeout=10)


def test_http_event_stream_answers_with_session(sse_server: str) -> None:
    listing = mcp_http.list_http(sse_server, timeout=20)
    assert names(listing) == SDK_NAMES
    assert (listing.transport, listing.protocol_version, listing.pages) == ("http", "2025-11-25", 2)
    assert listing.instructions is not None
    assert [dict(tool) for tool in listing.tools] == sdk_oracle()
    session = mcp_http.HttpSession(sse_server, deadline=time.monotonic() + 20, timeout=20)
    try:
        session.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": mcp_listing.CLIENT_INFO,
            },
        )
        assert session.session_id
        session.protocol_version = "2025-06-18"
        session.notify("notifications/initialized")
        result = session.request("tools/list", {})
        assert [tool["name"] for tool in result["tools"]] == SDK_NAMES[:2]
        assert session.content_types == ["text/event-stream", "text/event-stream"]
    finally:
        session.close()


def test_http_2026_requests_carry_the_envelope(sse_server: str) -> None:
    listing = mcp_http.list_http(sse_server, timeout=20, modern_only=True)
    assert names(listing) == SDK_NAMES
    assert listing.protocol_version == "2026-07-28"


def test_http_json_answers_and_headers_never_printed(json_server: str) -> None:
    with pytest.raises(CouldNotJudge) as caught:
        mcp_http.list_http(json_server, timeout=20)
    assert str(caught.value) == (
        f"{json_server}: HTTP 401 to initialize (the server wants credentials: pass them with "
        "--header or headers:): missing credentials"
    )
    with pytest.raises(CouldNotJudge) as caught:
        mcp_http.list_http(json_server, headers={"Authorization": "Bearer wrong"}, timeout=20)
    assert "wrong" not in str(caught.value)
    listing = mcp_http.list_http(
        json_server, headers={"Authorization": "Bearer s3cret"}, timeout=20
    )
    assert names(listing) == SDK_NAMES
    session = mcp_http.HttpSession(
        json_server,
        deadline=time.monotonic() + 20,
        timeout=20,
        headers={"Authorization": "Bearer s3cret"},
    )
    try:
        session.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": mcp_listing.CLIENT_INFO,
            },
        )
        assert session.content_types == ["application/json"]
    finally:
        session.close()


def test_http_refused_connection_names_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/mcp"
    with pytest.raises(CouldNotJudge, match=rf"^{url}: initialize failed: ConnectError"):
        mcp_http.list_http(url, timeout=5)
    with pytest.raises(CouldNotJudge, match="not an http:// or https:// URL"):
        mcp_http.list_http("ftp://127.0.0.1/mcp")


def test_http_silence_times_out() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    accepted: list[socket.socket] = []

    def accept() -> None:
        try:
            connection, _ = listener.accept()
            accepted.append(connection)  # held open, never answered
        except OSError:
            pass

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{listener.getsockname()[1]}/mcp"
    try:
        with pytest.raises(
            CouldNotJudge, match=rf"^{url}: no answer to initialize within the 0.5s timeout$"
        ):
            mcp_http.list_http(url, timeout=0.5)
    finally:
        listener.close()
        for connection in accepted:
            connection.close()


# --- the event-stream parser ------------------------------------------------------------


def test_iter_sse_follows_the_event_stream_rules() -> None:
    lines = [
        ": a comment",
        "event: message",
        "data: {",
        "data:  two spaces keep one",
        "",
        "",
        "event: ping",
        "data: x",
        "",
        "id: 7",
        "data",
        "",
        "data: left open at the end",
    ]
    assert list(mcp_http.iter_sse(lines)) == [
        ("message", "{\n two spaces keep one"),
        ("ping", "x"),
        ("message", ""),
        ("message", "left open at the end"),
    ]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.text(alphabet=st.characters(exclude_characters="\r\n"), max_size=30), max_size=30)
)
def test_iter_sse_never_crashes_and_round_trips_data(lines: list[str]) -> None:
    events = list(mcp_http.iter_sse(lines))
    assert all(isinstance(event, str) and isinstance(data, str) for event, data in events)
    payloads = [line for line in lines if "\n" not in line]
    stream = [f"data: {payload}" for payload in payloads]
    stream_events = list(mcp_http.iter_sse([item for line in stream for item in (line, "")]))
    assert stream_events == [("message", payload) for payload in payloads]


def test_processes_are_reaped() -> None:
    # Every test above closed its sessions: no zombie children of this process remain.
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children")
    if not children.exists():
        pytest.skip("no /proc children list here")
    zombies = [pid for pid in children.read_text().split() if _gone(int(pid))]
    assert zombies == []


class _Recorder(BaseHTTPRequestHandler):
    """A hand-written streamable-HTTP server that records what the client sends.

    initialize is answered on an event stream (after a notification, a comment and an
    unrelated event), negotiating 2025-06-18 and opening session "sess-1"; tools/list is
    answered with a JSON body; DELETE ends the session.
    """

    seen: ClassVar[list[tuple[str, str | None, dict[str, str | None]]]] = []

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _record(self, method: str | None) -> None:
        wanted = ("accept", "content-type", "mcp-session-id", "mcp-protocol-version", "x-api-key")
        self.seen.append((self.command, method, {name: self.headers.get(name) for name in wanted}))

    def do_DELETE(self) -> None:
        self._record(None)
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._record(body["method"])
        if "id" not in body:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if body["method"] == "initialize":
            answer = {
                "jsonrpc": "2.0",
                "id": body["id"],
                "result": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "serverInfo": {"name": "recorder", "version": "0"},
                    "instructions": "hi",
                },
            }
            notification = {"jsonrpc": "2.0", "method": "notifications/message", "params": {}}
            stream = (
                f"event: message\ndata: {json.dumps(notification)}\n\n"
                ": keep-alive\n\n"
                "event: other\ndata: not json\n\n"
                f"event: message\ndata: {json.dumps(answer)}\n\n"
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Mcp-Session-Id", "sess-1")
        else:
            stream = json.dumps(
                {"jsonrpc": "2.0", "id": body["id"], "result": {"tools": [{"name": "t"}]}}
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(stream)))
        self.end_headers()
        self.wfile.write(stream)


def test_http_carries_session_and_protocol_headers() -> None:
    _Recorder.seen = []
    with serving(_Recorder) as base:
        listing = mcp_http.list_http(f"{base}/mcp", headers={"X-Api-Key": "k"}, timeout=10)
    assert names(listing) == ["t"]
    assert (listing.protocol_version, listing.instructions) == ("2025-06-18", "hi")
    accept = "application/json, text/event-stream"
    assert _Recorder.seen == [
        (
            "POST",
            "initialize",
            {
                "accept": accept,
                "content-type": "application/json",
                "mcp-session-id": None,
                "mcp-protocol-version": None,
                "x-api-key": "k",
            },
        ),
        (
            "POST",
            "notifications/initialized",
            {
                "accept": accept,
                "content-type": "application/json",
                "mcp-session-id": "sess-1",
                "mcp-protocol-version": "2025-06-18",
                "x-api-key": "k",
            },
        ),
        (
            "POST",
            "tools/list",
            {
                "accept": accept,
                "content-type": "application/json",
                "mcp-session-id": "sess-1",
                "mcp-protocol-version": "2025-06-18",
                "x-api-key": "k",
            },
        ),
        (
            "DELETE",
            None,
            {
                "accept": accept,
                "content-type": "application/json",
                "mcp-session-id": "sess-1",
                "mcp-protocol-version": "2025-06-18",
                "x-api-key": "k",
            },
        ),
    ]


class _Redirect(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        self.send_response(307)
        self.send_header("Location", "http://elsewhere.invalid/mcp/")
        self.send_header("Content-Length", "0")
        self.end_headers()


def test_http_redirects_are_named_not_followed() -> None:
    with serving(_Redirect) as base, pytest.raises(CouldNotJudge) as caught:
        url = f"{base}/mcp"
        mcp_http.list_http(url, headers={"Authorization": "Bearer s3cret"}, timeout=10)
    assert str(caught.value) == (
        f"{url}: HTTP 307 to initialize: redirected to http://elsewhere.invalid/mcp/; use that URL"
    )
