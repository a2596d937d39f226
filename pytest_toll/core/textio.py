"""Reading user input, with errors that name the file (never a crash, never a hang, never a guess).

Files are read against ``MAX_INPUT_FILE_BYTES`` and must be regular files (a FIFO or a device
such as ``/dev/zero`` is refused before a byte is read); stdin is read against the same
limit. JSON and YAML documents are checked against ``MAX_NESTING_DEPTH`` and
``MAX_DOCUMENT_VALUES`` so deep nesting is a clean error, not a ``RecursionError``.

The Files door (issue 34): :func:`read_inside_root` is how every file found in a tree being
measured (a repository, a plugin, a scan root) is read: a regular file, under its kind's
size cap, that resolves inside that root. :func:`walk_inside` lists a tree without following
a symlinked folder and without going deeper than ``MAX_WALK_DEPTH``; :func:`join_inside`
is the only way an id read from a third-party file becomes a path part.

Writing: :func:`write_atomically` (the ledger's rewrite and every report file) leaves the old
file or the new one, never a part.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import sys
import tempfile
from collections.abc import Collection, Iterator
from pathlib import Path
from typing import Any, BinaryIO

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.core.limits import (
    MAX_DOCUMENT_VALUES,
    MAX_INPUT_FILE_BYTES,
    MAX_NESTING_DEPTH,
    MAX_WALK_DEPTH,
)

STDIN = "-"


def describe_size(limit: int) -> str:
    """A read limit as a person reads it: ``32 MiB``, ``4 KiB``, ``100 bytes``."""
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if limit >= size and limit % size == 0:
            return f"{limit // size} {unit}"
    return f"{limit:,} bytes"


def read_capped(stream: BinaryIO, limit: int) -> bytes | None:
    """At most ``limit`` bytes of ``stream``; None when it holds more (nothing more is read)."""
    chunks: list[bytes] = []
    size = 0
    while size <= limit:
        chunk = stream.read(min(1 << 20, limit + 1 - size))
        if not chunk:
            break
        chunks.append(chunk)
        size += len(chunk)
    return None if size > limit else b"".join(chunks)


class MissingFile(CouldNotJudge):
    """The file to read does not exist."""


def read_file_bytes(
    path: str | Path, limit: int = MAX_INPUT_FILE_BYTES, *, limit_name: str = ""
) -> bytes:
    """The bytes of a regular file no larger than ``limit`` (``-`` for stdin); ``limit_name``,
    when given, names the limit in the message of a file that passes it.

    The file is opened without blocking, so a FIFO with no writer cannot hang the read; it
    and any other non-regular file (a device, a socket) is refused before it is read.
    """
    name = str(path)
    too_big = f"{name if name != STDIN else '<stdin>'}: larger than the {describe_size(limit)} "
    too_big += f"read limit{f' ({limit_name})' if limit_name else ''}; not read (nothing measured)"
    if name == STDIN:
        data = read_capped(sys.stdin.buffer, limit)
        if data is None:
            raise CouldNotJudge(too_big)
        return data
    if Path(path).is_dir():
        raise CouldNotJudge(f"{name}: is a directory, not a file")
    try:
        descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        raise MissingFile(f"{name}: no such file") from None
    except OSError as error:
        raise CouldNotJudge(f"{name}: cannot read: {error.strerror or error}") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise CouldNotJudge(f"{name}: not a regular file (a FIFO, device or socket); not read")
        if status.st_size > limit:
            raise CouldNotJudge(too_big)
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            data = read_capped(stream, limit)  # the file may have grown since fstat
    except OSError as error:
        if error.errno == errno.EISDIR:
            raise CouldNotJudge(f"{name}: is a directory, not a file") from None
        raise CouldNotJudge(f"{name}: cannot read: {error.strerror or error}") from None
    finally:
        os.close(descriptor)
    if data is None:
        raise CouldNotJudge(too_big)
    return data


def open_regular(path: str | Path, *, buffering: int = -1) -> BinaryIO:
    """A binary stream of a regular file, for a reader that streams (transcript lines) or
    seeks (a file's head): opened without blocking and checked with ``fstat`` before a byte
    is read, so a FIFO, device or socket is ``OSError`` (as a missing file is), never a hang.
    """
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        if not stat.S_ISREG(os.fstat(descriptor).st_mode):
            raise OSError(errno.EINVAL, "not a regular file (a FIFO, device or socket)", str(path))
        if hasattr(os, "set_blocking"):
            os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb", buffering=buffering)
    except BaseException:
        os.close(descriptor)
        raise


def read_text(path: str | Path, limit: int = MAX_INPUT_FILE_BYTES) -> str:
    """The UTF-8 text of a file (``-`` for stdin), BOM removed.

    A directory, a missing file, a FIFO or device, a file over ``limit``, or a binary file
    (NUL bytes or invalid UTF-8) is ``CouldNotJudge`` with a one-line message naming it.
    """
    name = "<stdin>" if str(path) == STDIN else str(path)
    return decode_text(read_file_bytes(path, limit), name)


# --- the Files door: reading inside a root ------------------------------------------------


def is_inside(path: str, root: str) -> bool:
    """``path`` (already real) is ``root`` or below it."""
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def resolves_inside(path: str | Path, root: str | Path) -> bool:
    """Whether ``path``, every symlink resolved, is ``root`` or below it."""
    return is_inside(os.path.realpath(path), os.path.realpath(root))


def writable_inside(root: str | Path, relative: str | Path) -> Path:
    """``root/relative`` for a write toll makes into a repository, after checking the way
    there: a path that is absolute or climbs out, any folder on the way that is a link (even
    a dangling one) or not a folder, or a file that is a link is a ``UsageError`` naming it,
    because a hostile repository's link would take the write somewhere else."""
    root = Path(root)
    parts = Path(relative).parts
    if Path(relative).is_absolute() or ".." in parts or not parts:
        raise UsageError(f"{relative}: outside {root}; nothing written")
    folder = root
    for part in parts[:-1]:
        folder = folder / part
        if os.path.islink(folder) or (os.path.lexists(folder) and not folder.is_dir()):
            raise UsageError(f"{relative}: {folder} is a link or not a folder; nothing written")
    target = root / relative
    if os.path.islink(target) or not resolves_inside(target.parent, root):
        raise UsageError(f"{relative}: leaves {root} or is a symlink; nothing written")
    return target


def read_inside_root(
    path: str | Path,
    root: str | Path,
    limit: int = MAX_INPUT_FILE_BYTES,
    *,
    limit_name: str = "",
) -> bytes:
    """The bytes of ``path`` when it resolves inside ``root`` and is a regular file no larger
    than ``limit`` (the read of :func:`read_file_bytes`: a FIFO never blocks it).

    A symlink (anywhere on the path) that resolves outside ``root`` is ``CouldNotJudge``
    naming the path before anything is opened: a link to ``/dev/zero``, a home folder or
    another checkout is never read as the repository's own file.
    """
    real = os.path.realpath(path)
    if not is_inside(real, os.path.realpath(root)):
        raise CouldNotJudge(
            f"{path}: a path or link resolving outside the repository or folder measured "
            f"({root}); not read"
        )
    return read_file_bytes(real, limit, limit_name=limit_name)


def read_text_inside_root(
    path: str | Path, root: str | Path, limit: int = MAX_INPUT_FILE_BYTES
) -> str:
    """:func:`read_inside_root` decoded as :func:`decode_text` does (UTF-8, BOM removed)."""
    return decode_text(read_inside_root(path, root, limit), str(path))


def is_regular_file(path: str | Path) -> bool:
    """Whether ``path`` is (a symlink to) a regular file: never true of a FIFO or device, and
    asking never opens it."""
    try:
        return stat.S_ISREG(os.stat(path).st_mode)
    except (OSError, ValueError):
        return False


def walk_inside(
    top: str | Path,
    root: str | Path,
    *,
    suffix: str = "",
    max_depth: int = MAX_WALK_DEPTH,
    skip: Collection[str] = (),
) -> Iterator[Path]:
    """Regular files under ``top`` whose names end in ``suffix``, sorted folder by folder.

    ``top`` itself must resolve inside ``root`` (a ``.claude/rules`` linked to ``/`` walks
    nothing); below it no symlinked folder is entered, folders named in ``skip`` are not
    entered, and nothing deeper than ``max_depth`` folders below ``top`` is listed. A FIFO,
    device or socket is not listed (nor opened), nor a file linked out of ``root``.
    """
    if not os.path.isdir(top) or not resolves_inside(top, root):
        return
    real_root = os.path.realpath(root)
    pending: list[tuple[str, int]] = [(os.fspath(top), 0)]
    while pending:
        folder, depth = pending.pop()
        try:
            with os.scandir(folder) as entries:
                listed = sorted(entries, key=lambda entry: entry.name)
        except OSError:
            continue  # an unreadable folder holds nothing we can measure
        folders: list[str] = []
        for entry in listed:
            try:
                if entry.is_dir(follow_symlinks=False):
                    if entry.name not in skip and depth < max_depth:
                        folders.append(entry.path)
                    continue
            except OSError:
                continue
            if not entry.name.endswith(suffix) or not is_regular_file(entry.path):
                continue
            if entry.is_symlink() and not is_inside(os.path.realpath(entry.path), real_root):
                continue
            yield Path(entry.path)
        pending.extend((inner, depth + 1) for inner in reversed(folders))


def join_inside(root: str | Path, name: str) -> Path | None:
    """``root / name`` when ``name`` (an id read from a third party's file) is one plain path
    part; None for anything that could leave ``root``: ``..``, a separator of any platform,
    an absolute path, a drive, a NUL, an empty name."""
    if (
        not isinstance(name, str)
        or name in ("", ".", "..")
        or any(mark in name for mark in ("/", "\\", "\0", ":"))
        or os.path.isabs(name)
    ):
        return None
    return Path(root) / name


def decode_text(data: bytes, name: str) -> str:
    if b"\0" in data:
        raise CouldNotJudge(f"{name}: binary file (contains NUL bytes), not counted")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise CouldNotJudge(
            f"{name}: binary file (invalid UTF-8 at byte {error.start}), not counted"
        ) from None


class TooDeep(ValueError):
    """A document nests deeper than ``MAX_NESTING_DEPTH`` or holds too many values."""


def check_document(value: object) -> None:
    """Raise ``TooDeep`` when ``value`` nests past the depth limit or, YAML aliases expanded,
    holds more than ``MAX_DOCUMENT_VALUES`` values. Iterative: it never recurses itself."""
    stack: list[tuple[object, int]] = [(value, 0)]
    seen = 0
    while stack:
        item, depth = stack.pop()
        seen += 1
        if seen > MAX_DOCUMENT_VALUES:
            raise TooDeep(
                f"holds more than {MAX_DOCUMENT_VALUES:,} values (aliases expanded); not read"
            )
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth >= MAX_NESTING_DEPTH:
            raise TooDeep(f"nests deeper than {MAX_NESTING_DEPTH} levels; not read")
        stack.extend((child, depth + 1) for child in children)


def json_within_depth(text: str | bytes) -> Any:
    """``json.loads`` bounded in depth, for a protocol message whose size its reader already
    capped (an MCP message, an HTTP body, a tools file): ``json.JSONDecodeError`` or
    ``TooDeep`` (both ``ValueError``), never ``RecursionError``. A third party's document
    (a config, a manifest, a transcript's embedded JSON) goes through
    :func:`pytest_toll.core.parse.load_json`, which also bounds numbers and names the file."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise TooDeep(f"nests deeper than {MAX_NESTING_DEPTH} levels; not read") from None
    check_document(value)
    return value


def parse_json(text: str | bytes, name: str) -> Any:
    """A JSON document read from ``name``, or ``CouldNotJudge`` naming its line and column."""
    try:
        return json_within_depth(text)
    except json.JSONDecodeError as error:
        raise CouldNotJudge(
            f"{name}:{error.lineno}:{error.colno}: not valid JSON: {error.msg}"
        ) from None
    except TooDeep as error:
        raise CouldNotJudge(f"{name}: {error}") from None


# --- writing a file whole ----------------------------------------------------------------

#: The suffix of a temporary file :func:`write_atomically` renames over its target.
TEMPORARY_SUFFIX = ".tmp"


def _temporary_prefix(path: Path) -> str:
    return f".{path.name}."


def write_atomically(path: Path, text: str) -> None:
    """Write to a fsynced temporary file beside ``path``, rename it over ``path``, fsync the
    folder: a crash at any point leaves the old file or the new one, never a part."""
    directory = path.parent if str(path.parent) else Path(".")
    handle, temporary = tempfile.mkstemp(
        prefix=_temporary_prefix(path), suffix=TEMPORARY_SUFFIX, dir=directory
    )
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
            out.flush()
            os.fsync(out.fileno())
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = 0o644
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        raise
    _fsync_folder(directory)


def _fsync_folder(directory: Path) -> None:
    if sys.platform == "win32":
        return  # folders cannot be opened for fsync there; NTFS journals the rename
    with contextlib.suppress(OSError):
        handle = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(handle)
        finally:
            os.close(handle)


def remove_stale_temporaries(path: Path) -> list[Path]:
    """Remove temporary files a killed rewrite left beside the ledger (call under the lock)."""
    removed = []
    directory = path.parent if str(path.parent) else Path(".")
    for leftover in directory.glob(f"{_temporary_prefix(path)}*{TEMPORARY_SUFFIX}"):
        with contextlib.suppress(OSError):
            leftover.unlink()
            removed.append(leftover)
    return removed
