"""A whole-exchange deadline for blocking network work.

httpx's timeouts apply to each read, so a peer that drips a byte every half second never
trips them. ``run_before`` runs the exchange in a daemon thread and stops waiting at the
deadline, whatever the peer does; the abandoned exchange ends at its own per-read timeout
(never later than the time it was given) and its result is dropped.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


class DeadlinePassed(TimeoutError):
    """The exchange did not finish before the deadline."""


def run_before(deadline: float, work: Callable[[], T], on_abandon: Callable[[], None]) -> T:
    """``work()``'s result or exception, or ``DeadlinePassed`` at ``deadline`` (monotonic).

    ``on_abandon`` runs when the deadline passes (close the connection, so the thread's next
    read fails fast).
    """
    outcome: list[T] = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            outcome.append(work())
        except BaseException as error:  # handed to the waiting thread, raised there
            failure.append(error)

    worker = threading.Thread(target=target, daemon=True, name="toll-deadline")
    worker.start()
    worker.join(max(deadline - time.monotonic(), 0.0))
    if worker.is_alive():
        # Closing a half-read connection has nothing to tell us.
        with contextlib.suppress(Exception):
            on_abandon()
        raise DeadlinePassed
    if failure:
        raise failure[0]
    return outcome[0]
