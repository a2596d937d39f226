"""The records every transcript reader yields, whatever agent wrote the file.

A tool call, a tool result, a usage turn, conversation text, a compaction boundary and an
unreadable line: pairing, outcomes, shapes, repeats, amplification and drift work on these
alone, so every format (:mod:`~pytest_toll.transcripts.formats`) reads into them. Nothing
here reads a file.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.transcripts.images import Image

# Records are values that nothing changes once made; not frozen, because a scan makes one per
# call, result and turn, and a frozen dataclass's __init__ timed 4.6× a plain one's (timeit).


@dataclass(slots=True)
class CallRecord:
    session: str
    call_id: str
    tool: str
    input: Mapping[str, Any]
    cwd: str | None = None


@dataclass(slots=True)
class ResultRecord:
    session: str
    call_id: str
    text: str
    is_error: bool
    images: tuple[Image, ...] = ()
    #: structured blocks that are neither text nor image (a document, a tool reference, …)
    opaque_blocks: int = 0


@dataclass(slots=True)
class UsageRecord:
    """One provider-reported turn: ``prompt`` is input + cache read + cache creation."""

    session: str
    model: str
    input: int
    output: int
    cache_read: int
    cache_creation: int
    #: the part of cache_creation written for one hour (priced higher than 5-minute writes)
    cache_creation_1h: int = 0
    #: the provider's message id, when the format has one (to deduplicate across files)
    message_id: str | None = None

    @property
    def prompt(self) -> int:
        return self.input + self.cache_read + self.cache_creation


@dataclass(slots=True)
class TextRecord:
    """Conversation text that enters the context: ``source`` is who put it there — user,
    assistant, thinking or call (a tool call's name and arguments)."""

    session: str
    source: str
    text: str
    images: tuple[Image, ...] = ()


@dataclass(slots=True)
class BoundaryRecord:
    """The context was compacted: what came before is no longer in it."""

    session: str


@dataclass(slots=True)
class BadLine:
    line: int
    reason: str


@dataclass(slots=True)
class PairedByOrder:
    """The session's calls and results were paired by order: the format gives no ids."""

    session: str


@dataclass(slots=True)
class CutResult(ResultRecord):
    """A result its agent marked as cut short (Antigravity's ``truncated_fields``): its
    outcome is ``truncated`` whatever its text says."""


#: A record of something a session held (every record but an unreadable line).
SessionRecord = CallRecord | ResultRecord | UsageRecord | TextRecord | BoundaryRecord
#: What a reader yields: the session's records, its unreadable lines, and the flag that its
#: calls were paired by order.
Record = SessionRecord | BadLine | PairedByOrder
