"""The streamable-HTTP transport: JSON-RPC POSTs answered by a JSON body or an SSE stream.

Requests carry ``Mcp-Session-Id`` and ``MCP-Protocol-Version``. Extra headers (auth) are
sent and never printed; redirects are named, never followed. httpx is imported lazily.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import time
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_TIMEOUT
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
        shown = f": {clip(body, 200)}" if body else ""
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
            code, text = describe_rpc_error(answer["error"])
            raise RpcError(
                f"{self.url}: {method} failed: JSON-RPC error {code}: {text}", code, text
            )
        if "result" not in answer:
            raise CouldNotJudge(
                f"{self.url}: answer to {method} has neither result nor error: {clip(answer)}"
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
                f"{self.url}: answer to {method} is not valid JSON: {clip(response.text)}"
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
        raise CouldNotJudge(f"{self.url}: no answer to {method} in the JSON body: {clip(body)}")

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
                    f"{self.url}: an event in the answer to {method} is not JSON: {clip(data)}"
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
    check_timeout(timeout)
    if not url.startswith(("http://", "https://")):
        raise CouldNotJudge(f"{url}: not an http:// or https:// URL")
    deadline = time.monotonic() + timeout

    def open_session() -> Session:
        return HttpSession(url, deadline=deadline, timeout=timeout, headers=headers)

    return list_tools(open_session, modern_only=modern_only)
