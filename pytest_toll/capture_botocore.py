"""The botocore half of the capture hook: boto3 / botocore clients' requests to an LLM API.

botocore does not send through httpx, so :mod:`pytest_toll.capture_hook` cannot see a
``boto3.client("bedrock-runtime")`` call. botocore has its own documented extension point,
its event system: every client emits ``before-send`` with the fully prepared request (URL,
method, signed body) just before it goes on the wire, and a handler that returns None lets
it go unchanged. So a capture registers one ``before-send`` handler on each client:

- every client created while a capture is on, through ``Session.create_client`` (the public
  method behind ``boto3.client`` and ``session.client``), wrapped for as long as a capture
  is on, exactly as httpx's ``send`` is;
- a client made before the capture started (a fixture's), handed to
  :func:`watch` (``toll.capture().watch(client)``).

The handler does nothing once no capture is on, so a client that outlives its test costs one
function call per request. botocore is imported only when installed (it is an optional
dependency: without it this module installs nothing).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from importlib.util import find_spec
from typing import Any
from urllib.parse import urlsplit

#: Called with ``(method, host, path, body, read_error)`` for every request a watched
#: client sends while a capture is on.
Recorder = Callable[[str, str, str, "bytes | None", str], None]

#: The handler's id on a client's event system: registering twice keeps one.
HANDLER_ID = "pytest-toll-capture"
_recorder: list[Recorder] = []
_wrapped: list[tuple[type, Callable[..., Any], Callable[..., Any]]] = []


def available() -> bool:
    return find_spec("botocore") is not None


#: Hosts a test's fake LLM server listens on: their port is picked at random per run.
LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1", "[::1]"})


def host_of(hostname: str, port: int | None) -> str:
    """Where a captured request went, as reports name it: ``host:port``, without the port of
    a loopback host — a fake server's random port would change every report row, and the
    sticky pull-request comment, on every run."""
    if port is None or hostname in LOOPBACK or hostname.startswith("127."):
        return hostname
    return f"{hostname}:{port}"


def _before_send(request: Any, **_: Any) -> None:
    """botocore's ``before-send``: record the prepared request, send it unchanged."""
    if not _recorder:
        return None
    url = urlsplit(str(request.url))
    host = host_of(url.hostname or "", url.port)
    body = request.body
    error = ""
    if isinstance(body, bytearray | memoryview):
        body = bytes(body)
    elif isinstance(body, str):
        body = body.encode("utf-8")
    elif body is not None and not isinstance(body, bytes):
        error = f"the body is a {type(body).__name__}, not bytes; it was not read"
        body = None
    _recorder[0](str(request.method).upper(), host, url.path, body, error)
    return None


def watch(client: Any) -> Any:
    """Capture what ``client`` (a boto3 / botocore client) sends while a capture is on."""
    client.meta.events.register("before-send", _before_send, unique_id=HANDLER_ID)
    return client


def install(recorder: Recorder) -> bool:
    """Watch every client created from now on; False when botocore is not installed."""
    _recorder[:] = [recorder]
    if not available() or _wrapped:
        return available()
    from botocore.session import Session

    original = Session.__dict__["create_client"]

    @functools.wraps(original)
    def create_client(self: Any, *args: Any, **kwargs: Any) -> Any:
        return watch(original(self, *args, **kwargs))

    Session.create_client = create_client
    _wrapped.append((Session, original, create_client))
    return True


def uninstall() -> None:
    """Stop recording, and put ``create_client`` back when nothing replaced our wrapper."""
    _recorder.clear()
    for owner, original, wrapper in list(_wrapped):
        if owner.__dict__.get("create_client") is wrapper:
            owner.create_client = original  # type: ignore[attr-defined]
            _wrapped.remove((owner, original, wrapper))


def wrapped() -> bool:
    return bool(_wrapped)
