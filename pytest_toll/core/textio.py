"""Reading user files as text, with errors that name the file (never a crash, never a guess)."""

from __future__ import annotations

import sys
from pathlib import Path

from pytest_toll.core.errors import CouldNotJudge

STDIN = "-"


def read_text(path: str | Path) -> str:
    """The UTF-8 text of a file (``-`` for stdin), BOM removed.

    A directory, a missing file, or a binary file (NUL bytes or invalid UTF-8) is
    ``CouldNotJudge`` with a one-line message naming the file.
    """
    name = str(path)
    if name == STDIN:
        data = sys.stdin.buffer.read()
        name = "<stdin>"
    else:
        file = Path(path)
        if file.is_dir():
            raise CouldNotJudge(f"{name}: is a directory, not a file")
        try:
            data = file.read_bytes()
        except FileNotFoundError:
            raise CouldNotJudge(f"{name}: no such file") from None
        except OSError as error:
            raise CouldNotJudge(f"{name}: cannot read: {error.strerror or error}") from None
    return decode_text(data, name)


def decode_text(data: bytes, name: str) -> str:
    if b"\0" in data:
        raise CouldNotJudge(f"{name}: binary file (contains NUL bytes), not counted")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CouldNotJudge(
            f"{name}: binary file (invalid UTF-8 at byte {error.start}), not counted"
        ) from None
