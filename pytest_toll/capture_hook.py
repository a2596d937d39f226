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
bytes; that is the one case where capture touches a request, and only for an LLM path. When
the code's own body generator raises while it is read, that exception reaches the code
unchanged (the request was never sent, so nothing is recorded). Headers are never recorded
(API keys travel there), nor the query string.

A request is measured as it is recorded, in the thread that sends it, and only its
measurement is kept: memory stays flat however many large requests a run sends.

boto3 / botocore clients (Bedrock) are captured through botocore's own event system
(:mod:`pytest_toll.capture_botocore`), while the same captures are on.

This module is part of the pytest adapter, but it does not import pytest; httpx is imported
only when a capture starts.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass, replace
from importlib import import_module
from importlib.util import find_spec
from types import TracebackType
from typing import Any
from urllib.parse import unquote

from pytest_toll import capture_botocore
from pytest_toll.calls.capture import (
    CaptureReport,
    MeasuredRequest,
    SentRequest,
    measure_request,
    recognise,
)
from pytest_toll.core.models import Catalogue, load_models

#: The client libraries whose ``send`` is wrapped, when installed.
CLIENT_MODULES = ("httpx", "httpx2")


class Capture:
    """One test's capture: on between :meth:`start` and :meth:`stop` (which nest), and the
    requests it saw in the order they were sent, from any thread."""

    def __init__(self, catalogue: Catalogue | None = None) -> None:
        #: The model catalogue requests are measured with (None: the shipped one).
        self.catalogue = catalogue
        #: What was sent, measured, in the order recorded (bodies are not kept).
        self.requests: list[MeasuredRequest] = []
        #: Whether it was ever started: a test that asked to capture and saw nothing says so.
        self.used = False
        self._depth = 0
        self._lock = threading.Lock()

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

    def add(self, request: MeasuredRequest) -> None:
        """Keep one measured request, numbered in the order requests are added."""
        with self._lock:
            self.requests.append(replace(request, number=len(self.requests) + 1))

    def measure(self) -> CaptureReport:
        with self._lock:
            return CaptureReport(tuple(self.requests))

    def watch(self, client: Any) -> Any:
        """Capture a boto3 / botocore client made before this capture started (clients made
        while a capture is on are watched already); returns the client."""
        return capture_botocore.watch(client)

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
    httpx_wrapped = any(patch.owner.__dict__.get("send") is patch.wrapper for patch in _patches)
    return httpx_wrapped or capture_botocore.wrapped()


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
    capture_botocore.install(_record_botocore)
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
    capture_botocore.uninstall()
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
    host = capture_botocore.host_of(url.host, url.port)
    return api, host, url.path


def _record(where: tuple[str, str, str], body: bytes | None, read_error: str) -> None:
    """Measure one request now and give it to every capture that is on."""
    captures = list(_active)
    if not captures:
        return
    api, host, path = where
    sent = SentRequest(api, host, path, body, read_error)
    catalogue = captures[0].catalogue or load_models()
    try:
        measured = measure_request(sent, catalogue)
    except Exception as failure:  # a measurer's bug must not break the code's request
        error = f"measuring failed: {type(failure).__name__}: {failure}"
        measured = MeasuredRequest(0, api, host, path, error=error)
    if measured is None:
        return  # not a call measured here (a Bedrock body of another model family)
    for capture in captures:
        capture.add(measured)


def _record_botocore(
    method: str, host: str, path: str, body: bytes | None, read_error: str
) -> None:
    api = recognise(method, path)
    if api is not None and _active:
        # botocore's URL keeps the model id quoted (``-v1%3A0``); httpx's path is unquoted.
        _record((api, host, unquote(path)), body, read_error)


def _wrap_sync(original: Callable[..., Any], not_read: type[BaseException]) -> Callable[..., Any]:
    @functools.wraps(original)
    def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        where = _where(request) if _active else None
        if where is not None:
            try:
                body = request.content
            except not_read:
                # The code's own body generator: what it raises reaches the code unchanged
                # (reading it again in send would only say StreamConsumed).
                body = request.read()
            _record(where, body, "")
        return original(self, request, *args, **kwargs)

    return send


def _wrap_async(original: Callable[..., Any], not_read: type[BaseException]) -> Callable[..., Any]:
    @functools.wraps(original)
    async def send(self: Any, request: Any, *args: Any, **kwargs: Any) -> Any:
        where = _where(request) if _active else None
        if where is not None:
            try:
                body = request.content
            except not_read:
                body = await request.aread()  # what the generator raises reaches the code
            _record(where, body, "")
        return await original(self, request, *args, **kwargs)

    return send
