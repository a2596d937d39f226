"""Reading a third party's SQLite file (OpenCode's sessions), bounded (issue 34, doors 2 and 6).

The database is opened read-only (immutable when no write-ahead log is beside it, so a read
creates no ``-wal``/``-shm`` file), with a statement time limit (a progress handler that
interrupts a query past its deadline: a view that recurses forever stops) and a cap on the
size of any one value (SQLite's own length limit: a row value past it is an error, not
gigabytes in memory). Both failures are :class:`DatabaseError` with a message that says
which limit was met.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_toll.core.limits import DATABASE_TIME_LIMIT, MAX_DATABASE_VALUE_BYTES
from pytest_toll.core.textio import describe_size

if TYPE_CHECKING:
    import sqlite3

#: SQLite virtual-machine steps between two looks at the clock (cheap, and fine-grained).
_STEPS = 10_000


class DatabaseError(Exception):
    """A database that cannot be read within its limits, or at all; the message says why."""


def open_read_only(
    path: Path,
    *,
    time_limit: float | None = None,
    max_value_bytes: int | None = None,
) -> sqlite3.Connection:
    """A read-only connection to ``path`` whose statements stop at ``time_limit`` seconds
    from now and whose values are at most ``max_value_bytes``; ``DatabaseError`` when it
    cannot be opened."""
    import sqlite3  # only a database pays for it

    live = path.with_name(path.name + "-wal").exists()
    flags = "mode=ro" if live else "mode=ro&immutable=1"
    try:
        connection = sqlite3.connect(f"{path.resolve().as_uri()}?{flags}", uri=True)
    except sqlite3.Error as error:
        raise DatabaseError(f"cannot open the database: {error}") from None
    deadline = time.monotonic() + (DATABASE_TIME_LIMIT if time_limit is None else time_limit)
    connection.set_progress_handler(lambda: int(time.monotonic() > deadline), _STEPS)
    limit = MAX_DATABASE_VALUE_BYTES if max_value_bytes is None else max_value_bytes
    # Python 3.11's setlimit; on 3.10 the time limit still holds, the value cap does not.
    setlimit = getattr(connection, "setlimit", None)
    if setlimit is not None:
        setlimit(getattr(sqlite3, "SQLITE_LIMIT_LENGTH"), limit)  # noqa: B009 - (3.11+)
    return connection


def explain(error: sqlite3.Error) -> str:
    """What a failed read met, as a bad record says it."""
    said = str(error)
    if "interrupted" in said:
        return f"stopped at the {DATABASE_TIME_LIMIT:g} s time limit of a database read"
    if "too big" in said:
        limit = describe_size(MAX_DATABASE_VALUE_BYTES)
        return f"a value larger than the {limit} row-size cap; not read"
    return f"cannot read the database: {said}"
