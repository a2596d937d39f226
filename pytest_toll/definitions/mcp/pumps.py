"""How a stdio server's bytes arrive and leave: two pumps, one for POSIX and one for Windows.

Both move raw bytes only; everything above them (line splitting, the read limit, the stderr
tail, the deadline and every message) is the session's, one code path for both.

* :class:`SelectPump` (POSIX): the pipes are non-blocking and read through ``selectors``;
  stdin is written non-blocking, a full pipe answered by reading meanwhile.
* :class:`ThreadPump` (Windows, where ``selectors`` accepts only sockets and a pipe cannot be
  made non-blocking): two daemon threads read stdout and stderr in bounded chunks into a
  bounded queue, which the session waits on with a timeout; a third writes stdin, so a
  server that stops reading its stdin blocks that thread, never the measurement.

Known limit of the thread pump: a reader blocked on a pipe that a detached grandchild keeps
open cannot be interrupted (Windows has no ``/proc`` to find that process). It is a daemon
thread, the measurement still ends at its deadline, and the thread ends when the pipe does.
"""

from __future__ import annotations

import contextlib
import os
import queue
import selectors
import subprocess
import threading
import time
from typing import IO, Protocol

#: One read: ("stdout" or "stderr", bytes); empty bytes mean that stream is closed.
Event = tuple[str, bytes]

READ_CHUNK = 1 << 16
#: Chunks the thread pump holds unread at most (1 MiB): a reader waits when it is full, as a
#: writer waits on a full pipe, so memory stays bounded whatever the server writes.
_QUEUED_CHUNKS = 16
#: How often a thread waiting to hand over a chunk checks whether the session has ended.
_HANDOVER_SECONDS = 0.1
#: The thread pump's own wake-up: the writer finished a message.
_WRITTEN = "stdin"


class Pump(Protocol):
    def wait(self, until: float) -> list[Event]:
        """What the server wrote, waiting at most until ``until`` (monotonic) for any."""

    def start_write(self, data: bytes) -> None:
        """Begin sending ``data`` to the server's stdin."""

    def write_done(self) -> bool:
        """Whether all of ``data`` went; raises ``OSError`` when stdin is broken."""

    def close_stdin(self) -> None:
        """Close the server's stdin (now, or as soon as a write in progress returns)."""

    def close(self) -> None:
        """Release the pipes; called once the session is over."""


def start_pump(kind: str, process: subprocess.Popen[bytes]) -> Pump:
    if kind == "select":
        return SelectPump(process)
    if kind == "threads":
        return ThreadPump(process)
    raise ValueError(f"unknown stdio pump {kind!r}")


def _streams(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes], IO[bytes]]:
    assert process.stdin and process.stdout and process.stderr
    return process.stdin, process.stdout, process.stderr


class SelectPump:
    """Non-blocking pipes read through ``selectors`` (POSIX)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._stdin, self._stdout, self._stderr = _streams(process)
        for stream in (self._stdin, self._stdout, self._stderr):
            os.set_blocking(stream.fileno(), False)
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._stdout, selectors.EVENT_READ, "stdout")
        self._selector.register(self._stderr, selectors.EVENT_READ, "stderr")
        self._pending = memoryview(b"")

    def wait(self, until: float) -> list[Event]:
        timeout = max(until - time.monotonic(), 0.0)
        if not self._selector.get_map():
            time.sleep(timeout)  # both closed: nothing will come, but a write may be waiting
            return []
        events: list[Event] = []
        for key, _ in self._selector.select(timeout=timeout):
            stream: IO[bytes] = key.fileobj  # type: ignore[assignment]
            try:
                chunk = os.read(stream.fileno(), READ_CHUNK)
            except BlockingIOError:
                continue
            except OSError:
                chunk = b""
            if not chunk:
                self._selector.unregister(stream)
            events.append((key.data, chunk))
        return events

    def start_write(self, data: bytes) -> None:
        self._pending = memoryview(data)

    def write_done(self) -> bool:
        while self._pending:
            try:
                written = os.write(self._stdin.fileno(), self._pending)
            except BlockingIOError:
                return False
            self._pending = self._pending[written:]
        return True

    def close_stdin(self) -> None:
        with contextlib.suppress(OSError):
            self._stdin.close()

    def close(self) -> None:
        self._selector.close()
        self._stdout.close()
        self._stderr.close()


class ThreadPump:
    """Blocking pipes read and written by daemon threads (Windows; any platform in tests)."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self._stdin, stdout, stderr = _streams(process)
        self._events: queue.Queue[Event] = queue.Queue(maxsize=_QUEUED_CHUNKS)
        self._ended = threading.Event()
        # A read stream is closed by whoever comes last, the session or its reader thread,
        # never while a reader may still read its descriptor (it could be reused meanwhile).
        self._lock = threading.Lock()
        self._finished: list[IO[bytes]] = []
        self._closing = False
        # stdin: a message at a time, and closed by the writer thread only, so never under a
        # write in progress (its descriptor could be reused by then).
        self._jobs: queue.Queue[bytes | None] = queue.Queue()
        self._stdin_closed = False
        self._written = threading.Event()
        self._written.set()
        self._write_error: OSError | None = None
        for name, stream in (("stdout", stdout), ("stderr", stderr)):
            threading.Thread(
                target=self._read, args=(name, stream), name=f"toll-{name}", daemon=True
            ).start()
        threading.Thread(target=self._write, name="toll-stdin", daemon=True).start()

    # --- the threads ---------------------------------------------------------------------

    def _read(self, name: str, stream: IO[bytes]) -> None:
        descriptor = stream.fileno()
        try:
            while not self._ended.is_set():
                try:
                    chunk = os.read(descriptor, READ_CHUNK)
                except OSError:
                    chunk = b""
                self._hand_over((name, chunk))
                if not chunk:
                    return
        finally:
            with self._lock:
                self._finished.append(stream)
                if self._closing:
                    stream.close()

    def _write(self) -> None:
        descriptor = self._stdin.fileno()
        while (data := self._jobs.get()) is not None:
            view = memoryview(data)
            try:
                while view:
                    if self._stdin_closed:
                        raise BrokenPipeError("stdin is closed")
                    view = view[os.write(descriptor, view) :]
            except OSError as error:
                self._write_error = error
            finally:
                self._close_stdin_if_asked()
            if data:
                self._written.set()
                self._hand_over((_WRITTEN, b""))
        self._stdin_closed = True
        self._close_stdin_if_asked()

    def _hand_over(self, event: Event) -> None:
        while not self._ended.is_set():
            try:
                self._events.put(event, timeout=_HANDOVER_SECONDS)
            except queue.Full:
                continue
            return

    def _close_stdin_if_asked(self) -> None:
        if self._stdin_closed:
            with contextlib.suppress(OSError):
                self._stdin.close()

    # --- the session's side --------------------------------------------------------------

    def wait(self, until: float) -> list[Event]:
        try:
            events = [self._events.get(timeout=max(until - time.monotonic(), 0.0))]
        except queue.Empty:
            return []
        with contextlib.suppress(queue.Empty):
            while len(events) < _QUEUED_CHUNKS:
                events.append(self._events.get_nowait())
        return [event for event in events if event[0] != _WRITTEN]

    def start_write(self, data: bytes) -> None:
        self._written.clear()
        self._write_error = None
        self._jobs.put(data)

    def write_done(self) -> bool:
        if not self._written.is_set():
            return False
        if self._write_error is not None:
            raise self._write_error
        return True

    def close_stdin(self) -> None:
        # The writer closes it, after any write in progress (an empty job wakes it).
        self._stdin_closed = True
        self._jobs.put(b"")

    def close(self) -> None:
        self._ended.set()
        self._jobs.put(None)
        with self._lock:
            self._closing = True
            for stream in self._finished:
                stream.close()
