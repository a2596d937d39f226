"""The HTTP hook behind ``toll(capture=True)`` and ``toll.capture()``: what the code under
test really sends to an LLM API, recorded while a test runs.

While at least one :class:`Capture` is on, ``Client.send`` and ``AsyncClient.send`` of
httpx (and of httpx2, the same client's next generation, which newer official SDKs use) are
wrapped; when the last capture stops they are put back, so nothing is patched outside a
capturing test. The wrapper looks at a request only when its method and path name an LLM
API (:func:`pytest_toll.calls.capture.recognise`), reads its body and passes the very same
request object on, so every other host and path goes through untouched.

Why ``send`` and not the transport: ``send`` is the public entry every request of a client
goes through, above whatever transport it was given. A test's fake endpoint is often an
``httpx.MockTransport``, an ASGI app, a respx router or a vcrpy cassette, and those replace
or patch the transport layer (vcrpy patches the transport classes with references taken when
it is imported, so a wrapper of ours there would be skipped under a cassette); one layer up,
every one of them composes with the capture in either order.

Bodies: an SDK's JSON body is already in memory (``request.content``). A streaming body is
read into memory first (``read()`` / ``aread()``), which httpx itself then sends as the same
bytes; that is the one case where capture touches a request, and only for an LLM path.
Headers are never recorded (API keys travel there), nor the query string.

This module is part of the pytest adapter, but it does not import pytest; httpx is imported
only when a capture starts.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib import import_module
from importlib.util import find_spec
from types import TracebackType
from typing import Any

from pytest_toll.calls.capture import CaptureReport, SentRequest, measure_sent, recognise
from pytest_toll.core.models import Catalogue

#: The client libraries whose ``send`` is wrapped, when installed.
CLIENT_MODULES = ("httpx", "httpx2")


class Capture:
    """One test's capture: on between :meth:`start` and :meth:`stop` (which nest), and the
    requests it saw in the order they were sent, from any thread."""

    def __init__(self) -> None:
        self.sent: list[SentRequest] = []
        #: Whether it was ever started: a test that asked to capture and saw nothing says so.
        self.used = False
        self._depth = 0

    @property
    def active(self) -> bool:
        return self._depth > 0

    def start(self) -> None:
        self.used = True
        if self._depth == 0:
            _activate(self)
        self._depth += 1

    def stop(self) -> None:
        if self._depth == 0:
            return
        self._depth -= 1
        if self._depth == 0:
            _deactivate(self)

    def close(self) -> None:
        """Stop however deeply it was started (the end of a test)."""
        if self._depth:
            self._depth = 1
            self.stop()

    def measure(self, catalogue: Catalogue | None = None) -> CaptureReport:
        return measure_sent(list(self.sent), catalogue)

    def __enter__(self) -> Capture:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


@dataclass(frozen=True)
class _Patch:
    owner: type
    original: Callable[..., Any]
    wrapper: Callable[..., Any]


_lock = threading.Lock()
_active: list[Capture] = []
#: The wrappers in place. One that could not be removed (something patched ``send`` on top
#: of it and still holds it) stays here, idle while no capture is on, and is reused.
_patches: list[_Patch] = []


def active_captures() -> int:
    """How many captures are on (0 outside a capturing test)."""
    return len(_active)


def patched() -> bool:
    """Whether any ``send`` is wrapped now."""
    return any(patch.owner.__dict__.get("send") is patch.wrapper for patch in _patches)


def _activate(capture: Capture) -> None:
    with _lock:
        if not _active:
            _install()
        _active.append(capture)


def _deactivate(capture: Capture) -> None:
    with _lock:
        if capture in _active:
            _active.remove(capture)
        if not _active:
            _uninstall()


def _install() -> None:
    wrapped = {patch.owner for patch in _patches}
    for name in CLIENT_MODULES:
        if find_spec(name) is None:
            continue
        module = import_module(name)
        not_read: type[BaseException] = module.RequestNotRead
        for owner, wrap in ((module.Client, _wrap_sync), (module.AsyncClient, _wrap_async)):
            if owner in wrapped:
                continue
            original = owner.__dict__["send"]
            wrapper = wrap(original, not_read)
            owner.send = wrapper
            _patches.append(_Patch(owner, original, wrapper))


def _uninstall() -> None:
    for patch in list(_patches):
        if patch.owner.__dict__.get("send") is patch.wrapper:
            patch.owner.send = patch.original  # type: ignore[attr-defined]
            _patches.remove(patch)


def _where(request: Any) -> tuple[str, str, str] | None:
    """``(api, host, path)`` of a request to an LLM API; None for any other request."""
    url = request.url
    api = recognise(request.method, url.path)
    if api is None:
        return None
    host = url.host if url.port is None else f"{url.host}:{url.port}"
    return api, host, url.path


def _record(where: tuple[str, str, str], body: bytes | None, read_error: str) -> None:
    api, host, path = where
    sent = SentRequest(api, host, path, body, read_error)
    for capture in list(_active):
        capture.sent.append(sent)


def _wrap_sync(original: Callable[..., Any], not_read: type[BaseException]) -> Callable[..., Any]:
    @functools.wraps(original)
    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        where = _where(request) if _active else None
        if where is not None:
            body: bytes | None = None
            error = ""
            try:
                try:
                    body = request.content
                except not_read:
                    body = request.read()
            except Exception as failure:  # the request still goes out; the record says why
                error = f"{type(failure).__name__}: {failure}"
            _record(where, body, error)
        return original(self, request, *args, **kwargs)

    return send


def _wrap_async(original: Callable[..., Any], not_read: type[BaseException]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        where = _where(request) if _active else None
        if where is not None:
            body: bytes | None = None
            error = ""
            try:
                try:
                    body = request.content
                except not_read:
                    body = await request.aread()
            except Exception as failure:  # the request still goes out; the record says why
                error = f"{type(failure).__name__}: {failure}"
            _record(where, body, error)
        return await original(self, request, *args, **kwargs)

    return send
