"""Anthropic's token counter: ``POST {base}/v1/messages/count_tokens``, opt-in and explicit.

Native counts are the only numbers here that come from the network, so every way that can
go wrong is named rather than absorbed:

- ``CountRefused``: the API understood the request and refused its *shape* (HTTP 400
  ``invalid_request_error``: a model without token counting, a block type it will not
  count). The caller may fall back to estimates, saying why.
- ``CountFailed``: authentication, permission, rate limit, overload, server errors,
  timeouts and transport errors. These are "could not judge" — never a silent fallback.

Both carry the provider's message and request id. The API key is read from
``ANTHROPIC_API_KEY``, sent only in the ``x-api-key`` header, and scrubbed from any message.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import DEFAULT_TIMEOUT

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
        self.error_type = error_type
        self.request_id = request_id
        self.provider_message = provider_message


class CountRefused(CountTokensError):
    """The API refused the request's shape (HTTP 400): estimates may stand in, saying why."""


class CountFailed(CountTokensError):
    """Auth, rate limit, overload, server, timeout or transport failure: could not judge."""


def _scrub(text: str, secret: str) -> str:
    return text.replace(secret, "[ANTHROPIC_API_KEY]") if secret else text


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
        if timeout <= 0:
            raise CouldNotJudge(f"count_tokens timeout must be above zero, not {timeout}")
        base = base_url or env.get(BASE_URL_VARIABLE) or DEFAULT_BASE_URL
        return cls(api_key=key, base_url=base.rstrip("/"), timeout=timeout)

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + COUNT_PATH

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
        import httpx

        headers = {
            "x-api-key": self.api_key,
            "anthropic-version": API_VERSION,
            "content-type": "application/json",
        }
        self.requests_made += 1
        try:
            response = self._client().post(self.url, headers=headers, content=json.dumps(body))
        except httpx.TimeoutException:
            raise CountFailed(
                f"Anthropic count_tokens at {self.url}: no answer within {self.timeout:g} s "
                f"(timed out; raise {TIMEOUT_VARIABLE} for a slow gateway)"
            ) from None
        except httpx.HTTPError as error:
            detail = _scrub(str(error) or type(error).__name__, self.api_key)
            raise CountFailed(
                f"Anthropic count_tokens at {self.url}: cannot connect: {detail}"
            ) from None
        return self._read(response)

    def _read(self, response: httpx.Response) -> int:
        request_id = response.headers.get("request-id")
        try:
            data = response.json()
        except ValueError:
            data = None
        if isinstance(data, dict):
            request_id = request_id or _text(data.get("request_id"))
        if response.status_code == 200:
            tokens = data.get("input_tokens") if isinstance(data, dict) else None
            if isinstance(tokens, int) and not isinstance(tokens, bool) and tokens >= 0:
                return tokens
            raise CountFailed(
                f"Anthropic count_tokens at {self.url}: HTTP 200 without an input_tokens "
                f"count{_request(request_id)}: {_snippet(response.text)}",
                status=200,
                request_id=request_id,
            )
        error = data.get("error") if isinstance(data, dict) else None
        error_type = _text(error.get("type")) if isinstance(error, dict) else None
        provider_message = _text(error.get("message")) if isinstance(error, dict) else None
        if provider_message is None:
            provider_message = _snippet(response.text) or response.reason_phrase
        provider_message = _scrub(provider_message, self.api_key)
        kind = f" {error_type}" if error_type else ""
        message = (
            f"Anthropic count_tokens: HTTP {response.status_code}{kind}: {provider_message}"
            f"{_request(request_id)}"
        )
        hint = _HINTS.get(response.status_code)
        if hint:
            message += f" — {hint}"
        details: dict[str, Any] = {
            "status": response.status_code,
            "error_type": error_type,
            "request_id": request_id,
            "provider_message": provider_message,
        }
        if response.status_code == 400 and error_type in (None, "invalid_request_error"):
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
    flat = " ".join(text.split())
    return flat if len(flat) <= _MAX_BODY_IN_MESSAGE else flat[:_MAX_BODY_IN_MESSAGE] + "…"
