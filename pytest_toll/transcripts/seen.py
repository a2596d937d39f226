"""What a scan has already counted, in memory that stops growing with the history.

A resumed Claude Code session copies earlier calls and turns into its new file under a new
session id, so the report counts each call and turn once by its content, across every file.
Those keys are most of the state that grows with the history: :class:`DigestSet` holds them as
64-bit digests (16–32 bytes a key), and :class:`FirstSeen` holds at most a fixed number of
them; past that it sets each new key aside on disk with what it counts (:class:`SetAside`,
which the report's repeats use too), and hands the first of each key back at the end, one
partition of the digests at a time.
"""

from __future__ import annotations

import contextlib
import hashlib
import struct
import tempfile
from array import array
from collections.abc import Iterator
from types import TracebackType
from typing import IO, TypeVar

from pytest_toll.core.errors import CouldNotJudge

#: DigestSet's tables: 2**8, picked by a digest's top byte, each starting at 16 slots
_TABLE_SHIFT = 56
_TABLES = 1 << (64 - _TABLE_SHIFT)
_FIRST_SLOTS = 16

#: FirstSeen's keys held in memory before it sets new ones aside: at most 8 MB of tables
#: (a 1 GB history has about 230,000 calls and turns, so it never sets one aside)
IN_MEMORY_KEYS = 1 << 18
#: the files it sets keys aside in, picked by a digest's top 6 bits: reading one back holds
#: a 64th of what was set aside
_PARTITION_SHIFT = 58
_PARTITIONS = 1 << (64 - _PARTITION_SHIFT)

_Owner = TypeVar("_Owner", bound="SetAside")


def digest(data: bytes) -> int:
    """``data``'s 64-bit digest, never 0 (0 marks an empty slot)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little") or 1


class DigestSet:
    """Distinct byte strings, kept as 64-bit digests in flat arrays (8 bytes a slot, at most
    half the slots full, so 16–32 bytes a key): sets of 16-byte digests and message ids grew
    a 1 GB scan's parent by 28 MB (its 230,962 keys, by tracemalloc). Two different keys
    share a digest with probability about n² / 2⁶⁵: 1.4 × 10⁻⁹ for those keys, 6 × 10⁻⁸ for a
    10 GB history's 1.5 million calls.

    The digests are spread by their top byte over 256 tables, each grown on its own: while a
    table doubles, its old and new arrays are both alive, and that is 3/256 of the whole
    rather than three times the set's last size (one table of 1.5 million keys grew from
    16 MB to 32 MB with the 16 MB still held)."""

    __slots__ = ("_counts", "_masks", "_size", "_tables")

    def __init__(self) -> None:
        self._tables = [array("Q", bytes(8 * _FIRST_SLOTS)) for _ in range(_TABLES)]
        self._masks = [_FIRST_SLOTS - 1] * _TABLES
        self._counts = [0] * _TABLES
        self._size = 0

    def __len__(self) -> int:
        return self._size

    def add(self, data: bytes) -> bool:
        """Keep ``data``'s digest; False when it was already kept."""
        return self.add_digest(digest(data))

    def add_digest(self, key: int) -> bool:
        """Keep a :func:`digest`; False when it was already kept."""
        table = key >> _TABLE_SHIFT  # the top byte picks the table, the low bits the slot
        slots, mask = self._tables[table], self._masks[table]
        index = key & mask
        while True:  # linear probing; 0 marks an empty slot
            found = slots[index]
            if found == key:
                return False
            if not found:
                break
            index = (index + 1) & mask
        slots[index] = key
        self._size += 1
        counts = self._counts
        counts[table] += 1
        if 2 * counts[table] > mask:
            self._grow(table)
        return True

    def has_digest(self, key: int) -> bool:
        table = key >> _TABLE_SHIFT
        slots, mask = self._tables[table], self._masks[table]
        index = key & mask
        while found := slots[index]:
            if found == key:
                return True
            index = (index + 1) & mask
        return False

    def _grow(self, table: int) -> None:
        old = self._tables[table]
        self._masks[table] = mask = 2 * len(old) - 1
        self._tables[table] = slots = array("Q", bytes(8 * (mask + 1)))
        for key in old:
            if key:
                index = key & mask
                while slots[index]:
                    index = (index + 1) & mask
                slots[index] = key


class SetAside:
    """Records written to one of 64 temporary files by a key's top bits, and read back one
    file at a time: what is held at the end is a 64th of what was set aside. The files are
    made at the first write and gone once read back or closed. A full or unwritable temporary
    folder is :class:`CouldNotJudge` naming it: a scan that could not count every key has no
    totals to report."""

    def __init__(self) -> None:
        self._files: list[IO[bytes]] = []

    def write(self, key: int, record: bytes) -> None:
        """Set ``record`` aside by ``key``, a 64-bit unsigned integer."""
        try:
            if not self._files:
                # closed by close(), which every owner's `with` reaches
                self._files = [tempfile.TemporaryFile() for _ in range(_PARTITIONS)]  # noqa: SIM115
            self._files[key >> _PARTITION_SHIFT].write(record)
        except OSError as error:
            self.close()
            raise _could_not_set_aside(error) from error

    def read_back(self) -> Iterator[bytes]:
        """Each file's records, in the order written, a file at a time; then none is left."""
        try:
            for file in self._files:
                try:
                    file.seek(0)  # (flushes what is still buffered)
                    records = file.read()
                    file.close()  # its bytes on disk are freed before the next file is read
                except OSError as error:
                    raise _could_not_set_aside(error) from error
                yield records
        finally:
            self.close()

    def close(self) -> None:
        files, self._files = self._files, []
        for file in files:
            # A flush a full disk refused: the file is gone either way.
            with contextlib.suppress(OSError):
                file.close()

    def __enter__(self: _Owner) -> _Owner:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()


def _could_not_set_aside(error: OSError) -> CouldNotJudge:
    return CouldNotJudge(
        f"could not set aside what the scan has counted in the temporary folder "
        f"{tempfile.gettempdir()} ({error.strerror or error}); free space there, or point "
        "TMPDIR at a folder with room"
    )


class FirstSeen(SetAside):
    """Each key counted once, the first time it is seen, in bounded memory.

    :meth:`add` answers at once for the first ``in_memory`` distinct keys (their digests
    held in a :class:`DigestSet`). Past that the set stops growing: a key it holds is still
    known, and any other is set aside with its payload (integers, packed as the ``struct``
    format ``payload`` says). :meth:`later` reads them back a partition at a time and yields
    the payload of each key's first copy set aside, so the totals are exactly those of an
    unbounded set, in the same order of first sight within a key."""

    def __init__(self, payload: str, in_memory: int | None = None) -> None:
        super().__init__()
        self._record = struct.Struct("<Q" + payload)
        self._kept = DigestSet()
        self._in_memory = IN_MEMORY_KEYS if in_memory is None else in_memory
        self.set_aside = 0

    def add(self, data: bytes, *payload: int) -> bool:
        """True when ``data`` is new and its payload is to be counted now; False when it was
        seen before, or when it is set aside for :meth:`later`."""
        key = digest(data)
        kept = self._kept
        if len(kept) < self._in_memory:
            return kept.add_digest(key)
        if kept.has_digest(key):
            return False
        self.write(key, self._record.pack(key, *payload))
        self.set_aside += 1
        return False

    def later(self) -> Iterator[tuple[int, ...]]:
        """The payloads set aside: each distinct key's first, once."""
        for records in self.read_back():
            firsts: set[int] = set()
            for key, *payload in self._record.iter_unpack(records):
                if key not in firsts:
                    firsts.add(key)
                    yield tuple(payload)
