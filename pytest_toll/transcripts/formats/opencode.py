"""OpenCode sessions, in the three forms it keeps them:

- the storage tree (``~/.local/share/opencode/storage``): ``session/<project>/<id>.json`` (the
  session), ``message/<session>/<id>.json`` (each message's info), ``part/<message>/<id>.json``
  (its parts). The session file stands for the session; its messages and parts are read
  from beside it, in id order (OpenCode's ids sort by time);
- its newer SQLite database (``opencode.db``): tables ``session``, ``message`` and ``part``
  whose ``data`` column holds the same JSON; opened read-only, never written;
- ``opencode export`` JSON: ``{"info": <session>, "messages": [{"info", "parts"}]}``,
  known by that structure whatever fields its version's session carries.

A ``tool`` part is a call and its result together: ``callID``, ``tool``, ``state.input`` and
``state.output`` (status ``completed``) or ``state.error`` (status ``error``); a part still
``pending`` or ``running`` has no result (unpaired). Usage comes from each ``step-finish``
part (one model request) or, without them, the assistant message's ``tokens``
(``input`` without the cache, ``cache.read``, ``cache.write``, ``output`` and ``reasoning``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.core.database import DatabaseError, explain, open_read_only
from pytest_toll.core.parse import ParseError, load_json
from pytest_toll.core.textio import join_inside, open_regular, walk_inside
from pytest_toll.transcripts.formats.base import (
    Home,
    arguments_of,
    call_text,
    document_or_bad_line,
    items,
    number,
    text_of,
)
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    Record,
    ResultRecord,
    SessionRecord,
    TextRecord,
    UsageRecord,
)

NAME = "opencode"
TITLE = "OpenCode"
#: the file name of its SQLite session store
DATABASE_NAME = "opencode.db"
SQLITE_MAGIC = b"SQLite format 3\x00"
_TABLES = frozenset({"session", "message", "part"})


def folders(home: Home) -> list[Path]:
    found = [home.data / "opencode"]
    if home.platform == "darwin":
        found.append(home.path / "Library" / "Application Support" / "opencode")
    return found


def is_session_info(value: object) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("id"), str)
        and value["id"].startswith("ses")
        and ("projectID" in value or "directory" in value)
        and "role" not in value
    )


def is_export(value: object) -> bool:
    """``opencode export``'s document, known by its own structure: a session ``info`` (an id,
    no role) and ``messages``, each an ``info`` with a role and its ``parts``. Versions differ
    in the session's fields (older ones have no ``projectID`` or ``directory``), so an export
    with messages is known by them, and one without by its session id alone."""
    if not isinstance(value, dict) or not isinstance(value.get("messages"), list):
        return False
    info = value.get("info")
    if not isinstance(info, dict) or not isinstance(info.get("id"), str) or "role" in info:
        return False
    messages = value["messages"]
    if not messages:
        return is_session_info(info) or info["id"].startswith("ses_")
    first = messages[0]
    return (
        isinstance(first, dict)
        and isinstance(first.get("info"), dict)
        and first["info"].get("role") in ("user", "assistant")
        and isinstance(first.get("parts"), list)
    )


def sniff(value: object) -> bool:
    """An exported session, or a session file of the storage tree."""
    return is_session_info(value) or is_export(value)


def _starts_as_database(path: Path) -> bool:
    try:
        with open_regular(path) as stream:
            return stream.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def is_database(path: Path) -> bool:
    """An SQLite file holding OpenCode's session, message and part tables."""
    import sqlite3  # only a database pays for it

    if not _starts_as_database(path):
        return False
    try:
        connection = open_read_only(path)
        try:
            names = {row[0] for row in connection.execute("select name from sqlite_master")}
        finally:
            connection.close()
    except (OSError, sqlite3.Error, DatabaseError):
        return False
    return names >= _TABLES


def _usage(
    session: str, message_id: str, info: Mapping[str, Any], tokens: object
) -> UsageRecord | None:
    if not isinstance(tokens, dict):
        return None
    cache = tokens.get("cache")
    cache = cache if isinstance(cache, dict) else {}
    record = UsageRecord(
        session,
        str(info.get("modelID") or "unknown"),
        number(tokens.get("input")),
        number(tokens.get("output")) + number(tokens.get("reasoning")),
        number(cache.get("read")),
        number(cache.get("write")),
        0,
        message_id,
    )
    return record if record.prompt or record.output else None


def message_records(
    session: str,
    info: Mapping[str, Any],
    parts: Iterable[Mapping[str, Any]],
    with_text: bool,
) -> Iterator[SessionRecord]:
    """The records of one message and its parts, in part order."""
    message_id = str(info.get("id") or "")
    role = info.get("role")
    steps = 0
    for part in parts:
        part_type = part.get("type")
        if part_type == "tool" and isinstance(part.get("callID"), str):
            state = part.get("state")
            state = state if isinstance(state, dict) else {}
            tool = str(part.get("tool") or "unknown")
            arguments = arguments_of(state.get("input"))
            yield CallRecord(session, part["callID"], tool, arguments)
            if with_text:
                yield call_text(session, tool, arguments)
            status = state.get("status")
            if status == "completed":
                yield ResultRecord(session, part["callID"], text_of(state.get("output")), False)
            elif status == "error":
                yield ResultRecord(session, part["callID"], text_of(state.get("error")), True)
        elif part_type == "step-finish":
            steps += 1
            turn = _usage(session, f"{message_id}/{part.get('id')}", info, part.get("tokens"))
            if turn is not None:
                yield turn
        elif part_type == "compaction":
            yield BoundaryRecord(session)
        elif with_text and part_type == "text" and text_of(part.get("text")):
            yield TextRecord(session, "user" if role == "user" else "assistant", part["text"])
        elif with_text and part_type == "reasoning" and text_of(part.get("text")):
            yield TextRecord(session, "thinking", part["text"])
    if role == "assistant" and not steps:
        turn = _usage(session, message_id, info, info.get("tokens"))
        if turn is not None:
            yield turn


def _json_files(storage: Path, kind: str, name: str) -> list[Path]:
    """The JSON files of ``storage/kind/name``; none when ``name`` (an id read from a
    session or message file) is not one plain path part: ``../`` never leaves the tree."""
    folder = join_inside(storage / kind, name)
    if folder is None:
        return []
    return sorted(walk_inside(folder, storage, suffix=".json", max_depth=0))


def _tree(path: Path, info: Mapping[str, Any], with_text: bool) -> Iterator[Record]:
    session = str(info["id"])
    if len(path.parents) < 3:
        return
    storage = path.parents[2]  # storage/session/<project>/<id>.json
    if join_inside(storage / "message", session) is None:
        yield BadLine(1, "the session id is not a plain name; its messages not read")
        return
    for message_path in _json_files(storage, "message", session):
        message, bad = document_or_bad_line(message_path)
        if bad is not None or not isinstance(message, dict):
            yield BadLine(1, f"{message_path.name}: {bad.reason if bad else 'not an object'}")
            continue
        parts = []
        if join_inside(storage / "part", str(message.get("id"))) is None:
            yield BadLine(1, f"{message_path.name}: the message id is not a plain name")
            continue
        for part_path in _json_files(storage, "part", str(message.get("id"))):
            part, bad = document_or_bad_line(part_path)
            if bad is not None or not isinstance(part, dict):
                yield BadLine(1, f"{part_path.name}: {bad.reason if bad else 'not an object'}")
                continue
            parts.append(part)
        yield from message_records(session, message, parts, with_text)


def _database(path: Path, with_text: bool) -> Iterator[Record]:
    import sqlite3

    try:
        connection = open_read_only(path)
    except DatabaseError as error:
        yield BadLine(1, str(error))
        return
    try:
        messages = connection.execute(
            "select id, session_id, data from message order by session_id, time_created, id"
        )
        for message_id, session, data in messages:
            try:
                info = load_json(data, f"message {message_id}")
            except (TypeError, ParseError):
                yield BadLine(1, f"message {message_id}: data is not JSON")
                continue
            if not isinstance(info, dict):
                continue
            info = {**info, "id": message_id}
            parts = []
            for part_id, part_data in connection.execute(
                "select id, data from part where message_id = ? order by time_created, id",
                (message_id,),
            ):
                try:
                    part = load_json(part_data, f"part {part_id}")
                except (TypeError, ParseError):
                    yield BadLine(1, f"part {part_id}: data is not JSON")
                    continue
                if isinstance(part, dict):
                    parts.append({**part, "id": part_id})
            yield from message_records(str(session), info, parts, with_text)
    except sqlite3.Error as error:
        yield BadLine(1, explain(error))
    finally:
        connection.close()


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    if is_database(path):
        yield from _database(path, with_text)
        return
    value, bad = document_or_bad_line(path)
    if bad is not None:
        yield bad
        return
    if is_session_info(value):
        yield from _tree(path, value, with_text)
        return
    if not is_export(value):
        return
    session = str(value["info"]["id"])
    for message in items(value.get("messages")):
        if not isinstance(message, dict) or not isinstance(message.get("info"), dict):
            continue
        parts = [part for part in items(message.get("parts")) if isinstance(part, dict)]
        yield from message_records(session, message["info"], parts, with_text)


def session_files(path: Path) -> list[Path]:
    """A database and its write-ahead log; a storage-tree session's file, its messages' and
    their parts'."""
    if _starts_as_database(path):
        return [path, path.with_name(path.name + "-wal")]
    value, bad = document_or_bad_line(path)
    if bad is None and is_session_info(value):
        return list(tree_files(path, str(value["id"])))
    return []


def tree_files(path: Path, info_id: str) -> Iterator[Path]:
    """Every file a storage-tree session is read from (for its cache fingerprint)."""
    yield path
    if len(path.parents) < 3 or join_inside(path.parents[2] / "message", info_id) is None:
        return
    storage = path.parents[2]
    for message_path in _json_files(storage, "message", info_id):
        yield message_path
        yield from _json_files(storage, "part", message_path.stem)
