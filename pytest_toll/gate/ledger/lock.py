"""An OS lock on the ledger for a whole read-modify-write, so two updates never lose one.

The lock is a file beside the ledger (``.toll.yaml.lock``), locked with ``fcntl.flock`` on
POSIX and ``msvcrt.locking`` on Windows. The operating system releases it when the process
ends, however it ends, so a killed run never leaves a lock that blocks the next one. No
third-party package: these are the primitives such packages wrap, and the plugin loads in
every pytest run.

On POSIX the lock file is removed on release. A waiter may then hold a lock on a removed
file, so after locking it checks that the path still names the file it locked, and retries
if not.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import LEDGER_LOCK_TIMEOUT

_POLL = 0.05


def lock_path(ledger: Path) -> Path:
    return ledger.with_name(f".{ledger.name}.lock")


@contextlib.contextmanager
def locked(ledger: Path, timeout: float = LEDGER_LOCK_TIMEOUT) -> Iterator[None]:
    """Hold the ledger's lock; another holder past ``timeout`` seconds is a UsageError."""
    path = lock_path(ledger)
    deadline = time.monotonic() + timeout
    while True:
        try:
            handle = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        except OSError as error:
            raise UsageError(
                f"{ledger}: cannot create the lock file {path.name}: {error.strerror or error}"
            ) from None
        try:
            while not _try_lock(handle):
                if time.monotonic() >= deadline:
                    raise UsageError(
                        f"{ledger}: another run holds the ledger lock ({path.name}); "
                        f"gave up after {timeout:g} s (LEDGER_LOCK_TIMEOUT)"
                    )
                time.sleep(_POLL)
            if _still_names(path, handle):
                break
        except BaseException:
            os.close(handle)
            raise
        os.close(handle)  # the holder before us removed it: lock the new one
    try:
        yield
    finally:
        if sys.platform != "win32":
            with contextlib.suppress(OSError):
                os.unlink(path)
        _unlock(handle)
        os.close(handle)


def _still_names(path: Path, handle: int) -> bool:
    if sys.platform == "win32":
        return True  # an open file cannot be removed there
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(handle)
    return (named.st_dev, named.st_ino) == (held.st_dev, held.st_ino)


def _try_lock(handle: int) -> bool:
    if sys.platform == "win32":
        import msvcrt

        try:
            msvcrt.locking(handle, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _unlock(handle: int) -> None:
    if sys.platform == "win32":
        import msvcrt

        with contextlib.suppress(OSError):
            os.lseek(handle, 0, os.SEEK_SET)
            msvcrt.locking(handle, msvcrt.LK_UNLCK, 1)
        return
    import fcntl

    fcntl.flock(handle, fcntl.LOCK_UN)
