"""Anthropic's token counter: ``POST {base}/v1/messages/count_tokens``, opt-in and explicit.

Native counts are the only numbers here that come from the network, so every way that can
go wrong is named rather than absorbed:

- ``CountRefused``: the API understood the request and refused its *shape* (HTTP 400
  ``invalid_request_error``: a model without token counting, a block type it will not
  count). The caller may fall back to estimates, saying why.
- ``CountFailed``: authentication, permission, rate limit, overload, server errors,
  timeouts and transport errors. These are "could not judge" — never a silent fallback.

Both carry the provider's message and request id. The API key is read from
``ANTHROPIC_API_KEY``, sent only in the ``x-api-key`` header, and given to the scrubber, so
it is blanked from every message (an error snippet or a ``request-id`` that echoes it too).

Bounded like every source: one count is one exchange under its timeout, whatever the server
does (``run_before``: a dripping body is cut at the deadline), and the answer body is read
against ``MAX_COUNT_RESPONSE_BYTES``.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_toll.core.deadline import DeadlinePassed, run_before
from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.limits import DEFAULT_TIMEOUT, MAX_COUNT_RESPONSE_BYTES, MAX_TIMEOUT
from pytest_toll.core.secrets import cut, redact_url, remember, scrub
from pytest_toll.core.textio import describe_size, json_within_depth
from pytest_toll.definitions.mcp.http import check_headers

if TYPE_CHECKING:
    import httpx

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
KEY_VARIABLE = "ANTHROPIC_API_KEY"
BASE_URL_VARIABLE = "ANTHROPIC_BASE_URL"
TIMEOUT_VARIABLE = "TOLL_ANTHROPIC_TIMEOUT"
COUNT_PATH = "/v1/messages/count_tokens"
_MAX_BODY_IN_MESSAGE = 200


class CountTokensError(CouldNotJudge):
    """count_tokens did not give a number; the message names status, type and request id."""

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        error_type: str | None = None,
        request_id: str | None = None,
        provider_message: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.error_type = None if error_type is None else scrub(error_type)
        self.request_id = None if request_id is None else scrub(request_id)
        self.provider_message = None if provider_message is None else scrub(provider_message)


class CountRefused(CountTokensError):
    """The API refused the request's shape (HTTP 400): estimates may stand in, saying why."""


class CountFailed(CountTokensError):
    """Auth, rate limit, overload, server, timeout or transport failure: could not judge."""


def check_timeout(timeout: float) -> float:
    """A count_tokens timeout: positive, finite, at most ``MAX_TIMEOUT``."""
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise UsageError(
            f"count_tokens timeout must be above zero and at most {MAX_TIMEOUT:g} s, not {timeout}"
        )
    return timeout


@dataclass
class CountTokensClient:
    """A small count_tokens client over one ``httpx.Client`` (use as a context manager)."""

    api_key: str
    base_url: str = DEFAULT_BASE_URL
    timeout: float = DEFAULT_TIMEOUT
    requests_made: int = 0
    _http: httpx.Client | None = field(default=None, repr=False)

    def __repr__(self) -> str:  # the key never appears in a repr, a log or a traceback
        return f"CountTokensClient(base_url={self.base_url!r}, timeout={self.timeout})"

    @classmethod
    def from_environment(
        cls,
        environ: Mapping[str, str] | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
    ) -> CountTokensClient:
        """Key from ``ANTHROPIC_API_KEY``; base URL from the argument, ``ANTHROPIC_BASE_URL``
        or the public API; timeout from the argument, ``TOLL_ANTHROPIC_TIMEOUT`` or 30 s."""
        env = os.environ if environ is None else environ
        key = env.get(KEY_VARIABLE, "").strip()
        remember(key)
        if not key:
            raise CouldNotJudge(
                f"exact counts need an Anthropic API key: {KEY_VARIABLE} is not set "
                "(or measure without --exact for o200k estimates)"
            )
        if timeout is None:
            raw = env.get(TIMEOUT_VARIABLE)
            try:
                timeout = float(raw) if raw else DEFAULT_TIMEOUT
            except ValueError:
                raise CouldNotJudge(
                    f"{TIMEOUT_VARIABLE}={raw!r}: must be a number of seconds"
                ) from None
        check_timeout(timeout)
        check_headers({"x-api-key": key})  # a key with a newline is refused, never echoed
        base = base_url or env.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL
        return cls(api_key=key, base_url=base.rstrip("/"), timeout=timeout)

    def __post_init__(self) -> None:
        remember(self.api_key)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + COUNT_PATH

    @property
    def shown_url(self) -> str:
        """The URL as printed: userinfo and query values masked."""
        return redact_url(self.url)

    def _client(self) -> httpx.Client:
        if self._http is None:
            import httpx

            self._http = httpx.Client(timeout=self.timeout)
        return self._http

    def close(self) -> None:
        if self._http is not None:
            self._http.close()
            self._http = None

    def __enter__(self) -> CountTokensClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def count(self, body: Mapping[str, Any]) -> int:
        """The ``input_tokens`` the API reports for a Messages request body."""
        check_timeout(self.timeout)
        self.requests_made += 1
        deadline = time.monotonic() + self.timeout
        try:
            status, headers, data, reason = run_before(
                deadline, lambda: self._exchange(body), on_abandon=self.close
            )
        except DeadlinePassed:
            raise CountFailed(
                f"Anthropic count_tokens at {self.shown_url}: no answer within "
                f"{self.timeout:g} s (timed out; raise {TIMEOUT_VARIABLE} for a slow gateway)"
            ) from None
        return self._read(status, headers, data, reason)

    def _exchange(self, body: Mapping[str, Any]) -> tuple[int, dict[str, str], bytes, str]:
        """One POST, its body read against ``MAX_COUNT_RESPONSE_BYTES``."""
        import httpx

        headers = check_headers(
            {
                "x-api-key": self.api_key,
                "anthropic-version": API_VERSION,
                "content-type": "application/json",
            }
        )
        try:
            with self._client().stream(
                "POST", self.url, headers=headers, content=json.dumps(body)
            ) as response:
                chunks: list[bytes] = []
                size = 0
                for chunk in response.iter_bytes():
                    size += len(chunk)
                    if size > MAX_COUNT_RESPONSE_BYTES:
                        raise CountFailed(
                            f"Anthropic count_tokens at {self.shown_url}: the answer is larger "
                            f"than the {describe_size(MAX_COUNT_RESPONSE_BYTES)} read limit; "
                            "cut, nothing counted"
                        )
                    chunks.append(chunk)
                return (
                    response.status_code,
                    {"request-id": response.headers.get("request-id", "")},
                    b"".join(chunks),
                    response.reason_phrase,
                )
        except httpx.TimeoutException:
            raise CountFailed(
                f"Anthropic count_tokens at {self.shown_url}: no answer within "
                f"{self.timeout:g} s (timed out; raise {TIMEOUT_VARIABLE} for a slow gateway)"
            ) from None
        except httpx.HTTPError as error:
            detail = str(error) or type(error).__name__
            raise CountFailed(
                f"Anthropic count_tokens at {self.shown_url}: cannot connect: {detail}"
            ) from None

    def _read(self, status: int, headers: Mapping[str, str], body: bytes, reason: str) -> int:
        request_id = headers.get("request-id") or None
        text = body.decode("utf-8", "replace")
        try:
            data = json_within_depth(body)
        except ValueError:
            data = None
        if isinstance(data, dict):
            request_id = request_id or _text(data.get("request_id"))
        if status == 200:
            tokens = data.get("input_tokens") if isinstance(data, dict) else None
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
                return tokens
            raise CountFailed(
                f"Anthropic count_tokens at {self.shown_url}: HTTP 200 without an input_tokens "
                f"count{_request(request_id)}: {_snippet(text)}",
                status=200,
                request_id=request_id,
            )
        error = data.get("error") if isinstance(data, dict) else None
        error_type = _text(error.get("type")) if isinstance(error, dict) else None
        provider_message = _text(error.get("message")) if isinstance(error, dict) else None
        if provider_message is None:
            provider_message = _snippet(text) or reason
        tag = f" {error_type}" if error_type else ""
        message = (
            f"Anthropic count_tokens: HTTP {status}{tag}: {provider_message}{_request(request_id)}"
        )
        hint = _HINTS.get(status)
        if hint:
            message += f" — {hint}"
        details: dict[str, Any] = {
            "status": status,
            "error_type": error_type,
            "request_id": request_id,
            "provider_message": provider_message,
        }
        if status == 400 and error_type in (None, "invalid_request_error"):
            raise CountRefused(message, **details)
        raise CountFailed(message, **details)


_HINTS = {
    401: f"check {KEY_VARIABLE}",
    403: "the key may not use this model",
    404: "check the model name and the base URL",
    429: "rate limited; try again later",
    529: "the API is overloaded; try again later",
}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _request(request_id: str | None) -> str:
    return f" (request {request_id})" if request_id else ""


def _snippet(text: str) -> str:
    return cut(" ".join(text.split()), _MAX_BODY_IN_MESSAGE + 1)
