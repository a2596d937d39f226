"""The streamable-HTTP transport: JSON-RPC POSTs answered by a JSON body or an SSE stream.

Requests carry ``Mcp-Session-Id`` and ``MCP-Protocol-Version``. Extra headers (auth) are
sent and never printed (their values are given to the scrubber, and the printed URL has its
userinfo and query values masked); redirects are named, never followed. httpx is imported
lazily.

Bounded whatever the server does: each exchange runs under the measurement's deadline
(``run_before``: httpx's own timeouts are per read, so a dripping body would pass them), and
an answer body — JSON or an event stream, keep-alive comments included — is read against
``MAX_MESSAGE_BYTES``.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import re
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_toll.core.deadline import DeadlinePassed, run_before
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.limits import DEFAULT_TIMEOUT, MAX_MESSAGE_BYTES
from pytest_toll.core.secrets import redact_url, remember_setting
from pytest_toll.core.textio import TooDeep, describe_size, json_within_depth
from pytest_toll.definitions.mcp.listing import (
    MODERN_VERSION,
    Listing,
    RpcError,
    Session,
    check_timeout,
    clip,
    describe_rpc_error,
    list_tools,
)

if TYPE_CHECKING:
    import httpx

T = TypeVar("T")


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


# RFC 9110: a header name is a token; a value is visible ASCII, spaces and tabs.
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_HEADER_VALUE = re.compile(r"[\t\x20-\x7e]*")


def check_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers as they can be sent, their values remembered as secrets; a bad one is a usage
    error naming the header, never its value (a stray newline, non-ASCII text)."""
    checked: dict[str, str] = {}
    for name, value in headers.items():
        value = str(value)
        remember_setting(name, value, kind="header")
        if not _HEADER_NAME.fullmatch(name):
            shown = name if name.isascii() and name.isprintable() and len(name) < 60 else "?"
            raise UsageError(f"header {shown!r}: not a valid HTTP header name")
        if not _HEADER_VALUE.fullmatch(value):
            if "\n" in value or "\r" in value:
                why = "contains a line break (a stray newline in the variable?)"
            elif not value.isascii():
                why = "contains non-ASCII characters"
            else:
                why = "contains control characters"
            raise UsageError(f"header {name}: its value {why}; not sent (value not shown)")
        checked[name] = value
    return checked


def capped_lines(chunks: Iterable[bytes], limit: int, too_long: str) -> Iterator[str]:
    """Text lines (``\\n``, ``\\r\\n`` or ``\\r`` ended) from byte chunks; ``CouldNotJudge``
    with ``too_long`` once more than ``limit`` bytes were read in all."""
    pending = bytearray()
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if total > limit:
            raise CouldNotJudge(too_long)
        pending += chunk
        if b"\n" not in chunk and b"\r" not in chunk:
            continue  # no line ends yet: nothing to split (keeps a long line linear)
        lines = bytes(pending).splitlines(keepends=True)
        pending.clear()
        if not lines[-1].endswith(b"\n"):  # unfinished, or a \r whose \n may come next
            pending += lines.pop()
        for line in lines:
            yield line.rstrip(b"\r\n").decode("utf-8", "replace")
    for line in bytes(pending).splitlines():
        yield line.decode("utf-8", "replace")


class HttpSession:
    """A streamable-HTTP endpoint. Header values are sent, never printed."""

    transport = "http"

    def __init__(
        self,
        url: str,
        *,
        deadline: float,
        timeout: float,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        import httpx

        self.target = redact_url(url)
        self.url = url
        self.protocol_version: str | None = None
        self.session_id: str | None = None
        #: The content type of every answer, in order (JSON bodies and event streams).
        self.content_types: list[str] = []
        self._deadline = deadline
        self._timeout = timeout
        self._ids = itertools.count(1)
        self._abandoned = False
        try:
            httpx.URL(url)
        except httpx.InvalidURL as error:
            raise CouldNotJudge(f"{self.target}: not a valid URL: {error}") from None
        self._client = httpx.Client(headers=check_headers(headers or {}), follow_redirects=False)

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

    def _timed_out(self, method: str) -> CouldNotJudge:
        return CouldNotJudge(
            f"{self.target}: no answer to {method} within the {self._timeout:g}s timeout"
        )

    def _remaining(self, method: str) -> float:
        remaining = self._deadline - time.monotonic()
        if remaining <= 0:
            raise self._timed_out(method)
        return remaining

    def _before_deadline(self, method: str, work: Callable[[], T]) -> T:
        """``work()`` (one whole exchange) under the deadline, whatever the server does."""
        self._remaining(method)
        try:
            return run_before(self._deadline, work, on_abandon=self._abandon)
        except DeadlinePassed:
            raise self._timed_out(method) from None

    def _abandon(self) -> None:
        self._abandoned = True
        self._client.close()

    @contextlib.contextmanager
    def _transport_errors(self, method: str) -> Iterator[None]:
        """httpx's timeouts and transport failures, as could-not-judge naming the URL."""
        import httpx

        try:
            yield
        except httpx.TimeoutException:
            raise self._timed_out(method) from None
        except httpx.HTTPError as error:
            raise CouldNotJudge(
                f"{self.target}: {method} failed: {type(error).__name__}: {error}"
            ) from None

    def _post(self, method: str, message: Mapping[str, Any]) -> httpx.Response:
        with self._transport_errors(method):
            request = self._client.build_request(
                "POST",
                self.url,
                content=json.dumps(message).encode(),
                headers=self._headers(method),
                timeout=self._remaining(method),
            )
            return self._client.send(request, stream=True)

    def _too_long(self, method: str) -> str:
        return (
            f"{self.target}: the answer to {method} is larger than the "
            f"{describe_size(MAX_MESSAGE_BYTES)} read limit; cut, nothing measured"
        )

    def _read_body(self, method: str, response: httpx.Response) -> bytes:
        """The whole body, against ``MAX_MESSAGE_BYTES``."""
        chunks: list[bytes] = []
        size = 0
        for chunk in response.iter_bytes():
            size += len(chunk)
            if size > MAX_MESSAGE_BYTES:
                raise CouldNotJudge(self._too_long(method))
            chunks.append(chunk)
        return b"".join(chunks)

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)

        def exchange() -> None:
            response = self._post(method, message)
            try:
                if response.status_code >= 400:
                    with self._transport_errors(method):
                        body = self._read_body(method, response)
                    raise CouldNotJudge(self._http_fault(method, response, body))
            finally:
                response.close()

        self._before_deadline(method, exchange)

    def _http_fault(self, method: str, response: httpx.Response, body: bytes) -> str:
        text = body.decode("utf-8", "replace").strip()
        hint = ""
        if response.status_code in (401, 403):
            hint = " (the server wants credentials: pass them with --header or headers:)"
        elif response.is_redirect:
            # Not followed, so credentials in the headers never go to an address not given.
            location = redact_url(response.headers.get("location", "?"))
            return (
                f"{self.target}: HTTP {response.status_code} to {method}: redirected to "
                f"{location}; use that URL"
            )
        shown = f": {clip(' '.join(text.split()), 200)}" if text else ""
        return f"{self.target}: HTTP {response.status_code} to {method}{hint}{shown}"

    def request(self, method: str, params: Mapping[str, Any] | None) -> Any:
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = dict(params)
        answer = self._before_deadline(method, lambda: self._exchange(method, request_id, message))
        if "error" in answer:
            code, text = describe_rpc_error(answer["error"])
            raise RpcError(
                f"{self.target}: {method} failed: JSON-RPC error {code}: {text}", code, text
            )
        if "result" not in answer:
            raise CouldNotJudge(
                f"{self.target}: answer to {method} has neither result nor error: {clip(answer)}"
            )
        return answer["result"]

    def _exchange(
        self, method: str, request_id: int, message: Mapping[str, Any]
    ) -> Mapping[str, Any]:
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
                    return self._answer_from_stream(method, request_id, response)
                body = self._read_body(method, response)
                if content_type == "application/json":
                    return self._answer_from_json(method, request_id, response, body)
                if response.status_code >= 300:
                    raise CouldNotJudge(self._http_fault(method, response, body))
                raise CouldNotJudge(
                    f"{self.target}: answer to {method} is {content_type or 'untyped'} "
                    f"(HTTP {response.status_code}), not JSON or an event stream"
                )
        finally:
            response.close()

    def _answer_from_json(
        self, method: str, request_id: int, response: httpx.Response, body: bytes
    ) -> Mapping[str, Any]:
        try:
            data = json_within_depth(body)
        except ValueError as error:
            if response.status_code >= 400:
                raise CouldNotJudge(self._http_fault(method, response, body)) from None
            problem = str(error) if isinstance(error, TooDeep) else "not valid JSON"
            raise CouldNotJudge(
                f"{self.target}: answer to {method} is {problem}: "
                f"{clip(body.decode('utf-8', 'replace'))}"
            ) from None
        for message in data if isinstance(data, list) else [data]:
            if (
                isinstance(message, dict)
                and message.get("id") in (request_id, None)
                and ("result" in message or "error" in message)
            ):
                return message
        if response.status_code >= 400:
            raise CouldNotJudge(self._http_fault(method, response, body))
        raise CouldNotJudge(f"{self.target}: no answer to {method} in the JSON body: {clip(data)}")

    def _answer_from_stream(
        self, method: str, request_id: int, response: httpx.Response
    ) -> Mapping[str, Any]:
        lines = capped_lines(response.iter_bytes(), MAX_MESSAGE_BYTES, self._too_long(method))
        for event, data in iter_sse(lines):
            if event != "message":
                continue
            try:
                message = json_within_depth(data)
            except ValueError as error:
                problem = str(error) if isinstance(error, TooDeep) else "not JSON"
                raise CouldNotJudge(
                    f"{self.target}: an event in the answer to {method} is {problem}: {clip(data)}"
                ) from None
            if isinstance(message, dict) and message.get("id") == request_id:
                return message
        raise CouldNotJudge(f"{self.target}: the event stream ended without an answer to {method}")

    def close(self) -> None:
        remaining = self._deadline - time.monotonic()
        try:
            if self.session_id is not None and not self._abandoned and remaining > 0:
                # Ending the session is a courtesy; a server that refuses it has nothing to
                # tell us, and one that does not answer is not waited for past the deadline.
                run_before(
                    time.monotonic() + min(2.0, remaining),
                    lambda: self._client.delete(
                        self.url,
                        headers={"Mcp-Session-Id": self.session_id or "", **self._headers("")},
                        timeout=min(2.0, remaining),
                    ),
                    on_abandon=self._client.close,
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
    check_timeout(timeout)
    if not url.startswith(("http://", "https://")):
        raise CouldNotJudge(f"{redact_url(url)}: not an http:// or https:// URL")
    deadline = time.monotonic() + timeout

    def open_session() -> Session:
        return HttpSession(url, deadline=deadline, timeout=timeout, headers=headers)

    return list_tools(open_session, modern_only=modern_only)
