""":func:`iter_lines` (blocks cut by ``split``) against the reading it replaced, a bounded
``readline`` per line: the same lines, numbers, oversized lines and byte ranges."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.transcripts.formats.base import iter_lines


def _by_readline(
    path: Path, max_line_bytes: int, start: int, end: int | None
) -> Iterator[tuple[int, bytes | None]]:
    """The former reader, verbatim but for the newline it left on each line."""
    with path.open("rb") as stream:
        if start:
            stream.seek(start)
        position = start
        number = 0
        while end is None or position < end:
            line = stream.readline(max_line_bytes)
            if not line:
                return
            position += len(line)
            number += 1
            if len(line) == max_line_bytes and not line.endswith(b"\n"):
                while True:
                    chunk = stream.readline(max_line_bytes)
                    position += len(chunk)
                    if not chunk or chunk.endswith(b"\n"):
                        break
                yield number, None
                continue
            if not line.isspace():
                yield number, line.removesuffix(b"\n")


LINES = st.lists(
    st.one_of(
        st.binary(max_size=40),
        st.sampled_from([b"", b" ", b"\r", b"\t \x0b", b'{"a": 1}', b"x" * 64]),
    ),
    max_size=12,
)


@pytest.mark.slow
@settings(max_examples=400, deadline=None)
@given(
    LINES,
    st.booleans(),
    st.integers(1, 70),
    st.integers(1, 50),
    st.integers(0, 400),
    st.one_of(st.none(), st.integers(0, 400)),
)
def test_split_blocks_read_as_readline_did(
    lines: list[bytes],
    final_newline: bool,
    max_line_bytes: int,
    buffer_bytes: int,
    start: int,
    end: int | None,
) -> None:
    data = b"\n".join(line.replace(b"\n", b"") for line in lines)
    data += b"\n" if final_newline and data else b""
    # start at a line start, as segment_bounds gives them
    starts = [0] + [index + 1 for index, byte in enumerate(data) if byte == 0x0A]
    start = max(at for at in starts if at <= min(start, len(data)))
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "lines.jsonl"
        path.write_bytes(data)
        expected = list(_by_readline(path, max_line_bytes, start, end))
        got = list(iter_lines(path, max_line_bytes, start, end, buffer_bytes=buffer_bytes))
    assert got == expected
