"""OpenHands sessions, in the forms it writes them:

- a trajectory: a JSON list of events (``Save trajectory``, ``--save-trajectory-path``, the
  replay trajectories of its own tests), or an object holding one as ``trajectory`` or
  ``history``;
- a session's event store: ``sessions/<sid>/events/<n>.json``, one event a file (the
  lowest-numbered file stands for the session; the others are read from beside it);
- an evaluation's ``output.jsonl``: one instance a line, its events in ``history``.

An action event (``action``: run, read, edit, browse, call_tool_mcp…, with ``id``) is a call;
the observation whose ``cause`` is that id is its result (``observation`` ``error``, or a
non-zero exit code, is an error). Legacy histories are flat ``[action, observation]`` pairs
with neither ids nor causes: those pair by order. Usage comes from an action's
``tool_call_metadata.model_response.usage`` (``prompt_tokens`` includes the cached ones).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pytest_toll.transcripts.formats.base import (
    Home,
    OrderPairing,
    arguments_of,
    call_text,
    document_or_bad_line,
    items,
    json_lines,
    number,
    text_of,
    usage,
)
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    CallRecord,
    Record,
    ResultRecord,
    TextRecord,
)

NAME = "openhands"
TITLE = "OpenHands"
#: Actions that are not tool calls: nothing comes back for them as a result.
_NOT_CALLS = frozenset(
    {"message", "system", "finish", "change_agent_state", "recall", "null", "condensation",
     "condensation_request", "reject", "start", "pause", "resume", "stop"}
)  # fmt: skip
#: Observations that answer no call.
_NOT_RESULTS = frozenset({"agent_state_changed", "recall", "null", "condensation", "message"})
#: The shell command actions, named as their function is when the event names none.
_FUNCTIONS = {"run": "execute_bash", "run_ipython": "execute_ipython_cell"}
_EVENT_FILE = re.compile(r"^\d+$")


def folders(home: Home) -> list[Path]:
    return [home.path / ".openhands" / "sessions", home.path / ".openhands-state" / "sessions"]


def session_name(path: Path) -> str:
    """An event store's session is the folder that holds its ``events`` folder."""
    return path.parent.parent.name if path.parent.name == "events" else path.stem


def session_files(path: Path) -> list[Path]:
    """An event store's every event (one file each); nothing beside any other file."""
    return event_files(path) if path.parent.name == "events" else []


def is_event(value: object) -> bool:
    return isinstance(value, dict) and (
        isinstance(value.get("action"), str) or isinstance(value.get("observation"), str)
    )


def sniff(value: object) -> bool:
    if is_event(value):
        return True
    if isinstance(value, list) and value:
        first = value[0]
        if isinstance(first, list) and first:
            first = first[0]  # a legacy [action, observation] pair
        return is_event(first)
    if isinstance(value, dict):
        events = value.get("history", value.get("trajectory"))
        return isinstance(events, list) and (not events or sniff(events))
    return False


def _failed(event: Mapping[str, Any]) -> bool:
    if event.get("observation") == "error":
        return True
    extras = event.get("extras")
    if not isinstance(extras, dict):
        return False
    metadata = extras.get("metadata")
    code = metadata.get("exit_code") if isinstance(metadata, dict) else extras.get("exit_code")
    return isinstance(code, int) and code not in (0, -1)


def _events(
    events: Iterable[Any], session: str, with_text: bool, seen_turns: set[str]
) -> Iterator[Record]:
    order = OrderPairing()
    for item in events:
        pair = item if isinstance(item, list) else [item]
        for event in pair:
            if not isinstance(event, dict):
                continue
            action = event.get("action")
            if isinstance(action, str):
                yield from _action(event, action, session, with_text, order, seen_turns)
                continue
            observation = event.get("observation")
            if not isinstance(observation, str) or observation in _NOT_RESULTS:
                continue
            text = text_of(event.get("content"))
            cause = event.get("cause")
            if (isinstance(cause, int) and not isinstance(cause, bool)) or isinstance(cause, str):
                yield ResultRecord(session, f"{session}/{cause}", text, _failed(event))
                continue
            call_id = order.answer(session)
            if call_id is not None:
                yield from order.flag(session)
                yield ResultRecord(session, call_id, text, _failed(event))


def _action(
    event: Mapping[str, Any],
    action: str,
    session: str,
    with_text: bool,
    order: OrderPairing,
    seen_turns: set[str],
) -> Iterator[Record]:
    metadata = event.get("tool_call_metadata")
    metadata = metadata if isinstance(metadata, dict) else {}
    response = metadata.get("model_response")
    if isinstance(response, dict) and isinstance(response.get("usage"), dict):
        turn_id = response.get("id")
        if not (isinstance(turn_id, str) and turn_id in seen_turns):
            if isinstance(turn_id, str):
                seen_turns.add(turn_id)  # one response may hold several actions
            spent = response["usage"]
            details = spent.get("prompt_tokens_details")
            turn = usage(
                session,
                response.get("model"),
                prompt_with_cache=number(spent.get("prompt_tokens")),
                output=number(spent.get("completion_tokens")),
                cache_read=number(details.get("cached_tokens")) if isinstance(details, dict) else 0,
                # litellm counts Anthropic's cache writes inside prompt_tokens too
                cache_write=number(spent.get("cache_creation_input_tokens")),
                message_id=turn_id if isinstance(turn_id, str) else None,
            )
            if turn is not None:
                yield turn
    if action == "condensation":
        yield BoundaryRecord(session)
        return
    arguments = event.get("args")
    arguments = arguments if isinstance(arguments, dict) else {}
    if action in _NOT_CALLS:
        if with_text and action == "message" and text_of(arguments.get("content")):
            role = "user" if event.get("source") == "user" else "assistant"
            yield TextRecord(session, role, text_of(arguments.get("content")))
        return
    function = metadata.get("function_name")
    tool = function if isinstance(function, str) and function else _FUNCTIONS.get(action, action)
    # What the model sent (the function's arguments) where the event keeps it.
    sent = _sent_arguments(response, metadata.get("tool_call_id"))
    call_arguments = (
        sent
        if sent is not None
        else {
            key: value
            for key, value in arguments.items()
            if key not in ("thought", "security_risk")
        }
    )
    event_id = event.get("id")
    if (isinstance(event_id, int) and not isinstance(event_id, bool)) or isinstance(event_id, str):
        # Event ids restart at 0 in every session: the session makes them unique.
        yield CallRecord(session, f"{session}/{event_id}", tool, call_arguments)
    else:
        yield order.call(session, tool, call_arguments)
    if with_text:
        yield call_text(session, tool, call_arguments)


def _sent_arguments(response: object, call_id: object) -> Mapping[str, Any] | None:
    if not isinstance(response, dict) or not isinstance(call_id, str):
        return None
    for choice in items(response.get("choices")):
        message = choice.get("message") if isinstance(choice, dict) else None
        calls = message.get("tool_calls") if isinstance(message, dict) else None
        for call in items(calls):
            if isinstance(call, dict) and call.get("id") == call_id:
                function = call.get("function")
                if isinstance(function, dict):
                    return arguments_of(function.get("arguments"))
    return None


def event_files(path: Path) -> list[Path]:
    """A session's event files, in event order (``<n>.json`` beside ``path``)."""
    try:
        files = [p for p in path.parent.glob("*.json") if _EVENT_FILE.match(p.stem)]
    except OSError:
        return [path]
    return sorted(files, key=lambda p: int(p.stem))


def read(path: Path, *, with_text: bool, max_line_bytes: int, document: bool) -> Iterator[Record]:
    seen_turns: set[str] = set()
    if not document:
        for number_, line in json_lines(path, max_line_bytes):
            if isinstance(line, BadLine):
                yield line
            elif isinstance(line, dict):
                instance = line.get("instance_id")
                session = str(instance) if instance is not None else f"{path.stem}-{number_}"
                history = line.get("history")
                if isinstance(history, list):
                    yield from _events(history, session, with_text, seen_turns)
            else:
                yield BadLine(number_, "not a JSON object")
        return
    value, bad = document_or_bad_line(path)
    if bad is not None:
        yield bad
        return
    if is_event(value) and _EVENT_FILE.match(path.stem):
        # One event a file: the session is the event store's folder's owner.
        session = path.parent.parent.name if path.parent.name == "events" else path.parent.name
        events: list[Any] = []
        for other in event_files(path):
            event, bad = document_or_bad_line(other)
            if bad is not None:
                yield BadLine(1, f"{other.name}: {bad.reason}")
            else:
                events.append(event)
        yield from _events(events, session, with_text, seen_turns)
        return
    session = path.stem
    if isinstance(value, dict):
        # An output.jsonl of one instance reads as one document: its instance names it.
        instance = value.get("instance_id")
        session = str(instance) if instance is not None else session
        value = value.get("history", value.get("trajectory"))
    if isinstance(value, list):
        yield from _events(value, session, with_text, seen_turns)
