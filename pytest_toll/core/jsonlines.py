"""Typed transcript lines: msgspec's decoder straight into ``Struct`` schemas that name only
the fields a reader uses (the rest of a line is skipped by the decoder, never built into
dicts), and the switch between that path and the pure-Python one.

The pure path (orjson into dicts, records built in Python) stays the oracle: a format's typed
builder must give exactly its records, and gives up on any line it does not fit — a field of
an unexpected type, a number outside orjson's integer range, a value nested past the
decoder's depth — so that line is read again by the pure path. Three rules make "gives up"
always safe:

- a skipped field is not checked for UTF-8 by msgspec, so only lines that are ASCII or valid
  UTF-8 are decoded typed (:func:`typed_candidate`); the pure path names the others;
- a subtree a reader takes whole (a call's input, a result's content) is declared
  :data:`Raw` and decoded by :func:`subtree` with the pure path's own parser, so its values
  (floats, big integers, duplicate keys) are exactly the pure path's;
- a builder decodes and checks everything before it changes its reader's state, so a line it
  gives up on leaves nothing behind.

One difference is left, by design and documented: a number that overflows a double
(``1e400``) inside a field no reader uses makes the pure path refuse the whole line (orjson
refuses it), while the typed path, which never looks at that field, reads the line.

``TOLL_PARSER=pure`` forces the pure path (to compare, or to rule the typed one out);
``toll doctor`` says which path is in use.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from typing import Annotated, Any, TypeVar

import msgspec

#: The environment variable that picks the path: ``pure`` forces the pure-Python reader.
ENVIRONMENT = "TOLL_PARSER"
PURE = "pure"

Struct = msgspec.Struct
Raw = msgspec.Raw
#: A Raw field's value when the line does not have it (``len(EMPTY) == 0``).
EMPTY = msgspec.Raw(b"")
#: An integer within int64 (msgspec's bounds stop there): orjson reads up to 2**64 - 1 as an
#: int and beyond as a float, so the typed path gives any larger one up and the pure path's
#: own rule (:func:`~pytest_toll.transcripts.formats.base.number`) decides.
Whole = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]

#: What a typed builder may raise for a line it does not fit: the line is then read again by
#: the pure path. (ValueError covers orjson's errors in :func:`subtree`; TypeError,
#: AttributeError and KeyError are the pure path's "unexpected record shape".)
GIVE_UP: tuple[type[BaseException], ...] = (
    msgspec.MsgspecError,
    RecursionError,
    ValueError,
    TypeError,
    AttributeError,
    KeyError,
)

_Schema = TypeVar("_Schema")


def _pure_loads() -> Callable[[Any], Any]:
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency
        return json.loads
    return orjson.loads


_loads = _pure_loads()


def subtree(raw: msgspec.Raw) -> Any:
    """A subtree a typed line kept whole, parsed by the pure path's parser (in place: a Raw
    is a view of the line); None when the line does not have it."""
    return _loads(memoryview(raw)) if len(raw) else None


def typed_enabled(environ: Mapping[str, str] | None = None) -> bool:
    """Whether transcript lines are decoded typed (unless ``TOLL_PARSER=pure``)."""
    environ = os.environ if environ is None else environ
    return environ.get(ENVIRONMENT, "").strip().lower() != PURE


def decoder(schema: type[_Schema]) -> Callable[[bytes], _Schema]:
    """A reusable decoder of one line into ``schema`` (unknown fields skipped)."""
    return msgspec.json.Decoder(schema).decode


def typed_candidate(raw: bytes) -> bool:
    """Whether a line may be decoded typed: ASCII, or valid UTF-8 (msgspec does not check
    the fields it skips; the pure path reports an invalid one as a bad line)."""
    if raw.isascii():
        return True
    try:
        raw.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def path_in_use(environ: Mapping[str, str] | None = None) -> str:
    """Which path reads transcript lines, as ``toll doctor`` says it."""
    if typed_enabled(environ):
        return (
            f"typed: msgspec {msgspec.__version__} decodes Claude Code and Codex lines into "
            f"schemas of the fields read (the pure-Python reader for any line they do not fit)"
        )
    return f"pure Python: every line parsed into dicts ({ENVIRONMENT}={PURE})"
