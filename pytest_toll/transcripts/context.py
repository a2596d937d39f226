"""Context: what sat in one session's context at its last turn, slice by slice.

The slices are what the transcript shows (tool results, tool calls, user messages, assistant
replies, images), counted in o200k since the last compaction; beside them, the prompt the
provider reported, the model's window and, where the catalogue prices the model, the cost.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.models import Model, Scale, find_model
from pytest_toll.core.parse import line_parser
from pytest_toll.core.tokens import TOKENIZER_NAME, scaled_method
from pytest_toll.transcripts.counting import image_tokens, text_counter
from pytest_toll.transcripts.formats import read_records, session_name
from pytest_toll.transcripts.formats.base import iter_lines
from pytest_toll.transcripts.formats.claude import is_subagent_file
from pytest_toll.transcripts.records import (
    BadLine,
    BoundaryRecord,
    PairedByOrder,
    ResultRecord,
    SessionRecord,
    TextRecord,
    UsageRecord,
)
from pytest_toll.transcripts.scan import select_files

#: A share of the window at or above this is near the limit.
NEAR_LIMIT = 0.8
#: How many first lines ``session_cwd`` reads for a ``cwd``.
_CWD_LINES = 50
#: The user turn a reconstructed request opens with when its first text is the assistant's.
OPENING_PROBE = "."

CONTEXT_SLICES = ("tool_results", "tool_calls", "user_messages", "assistant_replies", "images")
CONTEXT_NOTE = (
    "The system prompt, tool schemas and skill metadata are not in a transcript: the slices "
    "are what the transcript shows, the reported prompt is what the provider counted."
)


@dataclass
class ContextReport:
    session: str
    path: str
    model: str
    slices: dict[str, int]
    images: int
    reported_prompt: int
    turns: int
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    window: int | None = None
    cost_usd: float | None = None
    priced: bool = False
    #: The model's tokenizer scale (None for a model the catalogue lacks).
    scale: Scale | None = None

    @property
    def counted(self) -> int:
        return sum(self.slices.values())

    @property
    def scaled(self) -> int | None:
        """The counted slices scaled for the model's tokenizer; None when unscaled."""
        if self.scale is None or self.scale.factor == 1.0:
            return None
        return math.ceil(self.counted * self.scale.factor)

    @property
    def gap(self) -> int:
        return self.reported_prompt - self.counted

    @property
    def used(self) -> float | None:
        return round(self.reported_prompt / self.window, 4) if self.window else None

    @property
    def near_limit(self) -> bool:
        return self.used is not None and self.used >= NEAR_LIMIT

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "kind": "context",
            "tokenizer": TOKENIZER_NAME,
            "session": self.session,
            "path": self.path,
            "model": self.model,
            "slices": dict(self.slices),
            "images": self.images,
            "counted": self.counted,
            "reported_prompt": self.reported_prompt,
            "gap": self.gap,
            "window": self.window,
            "used": self.used,
            "near_limit": self.near_limit,
            "turns": self.turns,
            "totals": {
                "input": self.input_tokens,
                "output": self.output_tokens,
                "cache_read": self.cache_read_tokens,
                "cache_write": self.cache_write_tokens,
            },
            "note": CONTEXT_NOTE,
        }
        if self.scale is not None:
            data["scale"] = self.scale.as_dict()
        if self.scaled is not None and self.scale is not None:
            data["scaled"] = {"tokens": self.scaled, "method": scaled_method(self.scale.factor)}
        if self.priced:
            data["cost_usd"] = self.cost_usd
        return data


def claude_project_folder(cwd: Path) -> str:
    """The folder Claude Code keeps a directory's sessions in: every character that is not a
    letter or digit becomes ``-`` (``/home/me/my.app`` -> ``-home-me-my-app``)."""
    return re.sub(r"[^A-Za-z0-9]", "-", str(cwd))


def session_cwd(path: Path) -> str | None:
    """The directory a session ran in: a Claude Code line's ``cwd``, or the ``cwd`` of a
    Codex rollout's ``session_meta``; None when its first lines do not say."""
    loads, _ = line_parser()
    try:
        # Bounded lines through the Files door (a FIFO is an OSError, a huge line is skipped).
        for number, raw in iter_lines(path):
            if number > _CWD_LINES:
                break
            if raw is None:
                continue
            try:
                line = loads(raw)
            except ValueError:
                continue
            if not isinstance(line, dict):
                continue
            payload = line.get("payload")
            if line.get("type") == "session_meta" and isinstance(payload, dict):
                line = payload
            if isinstance(line.get("cwd"), str):
                return str(line["cwd"])
    except OSError:
        return None
    return None


def _of_directory(path: Path, cwd: Path) -> bool:
    if path.parent.name == claude_project_folder(cwd):
        return True
    found = session_cwd(path)
    return found is not None and Path(found) == cwd


def find_session(roots: Sequence[Path], session: str | None, cwd: Path | None = None) -> Path:
    """The newest main-session transcript (of ``cwd`` when given: Claude Code's project folder
    for it, or a session whose recorded ``cwd`` it is), or the one matching ``session``."""
    if session and Path(session).expanduser().is_file():
        return Path(session).expanduser()
    files = [(path, status) for path, status in select_files(roots) if not is_subagent_file(path)]
    if cwd is not None and not session:
        mine = [(path, status) for path, status in files if _of_directory(path, cwd)]
        if files and not mine:
            raise CouldNotJudge(
                f"no session of {cwd} under {', '.join(map(str, roots))} "
                "(--all takes the newest session of any directory)"
            )
        files = mine
    if session:
        files = [
            (path, status)
            for path, status in files
            if session in path.stem or session in session_name(path)
        ]
        if not files:
            raise CouldNotJudge(
                f"no transcript named {session!r} under {', '.join(map(str, roots))}"
            )
    if not files:
        raise CouldNotJudge(f"no transcripts found under {', '.join(map(str, roots))}")
    return files[0][0]


def _main_session_records(path: Path) -> Iterator[SessionRecord]:
    """The records, text included, of the file's main session: the first session without a
    subagent's ``:`` suffix (a subagent's context is not this one); bad lines are skipped."""
    main: str | None = None
    for record in read_records(path, with_text=True):
        if isinstance(record, (BadLine, PairedByOrder)):
            continue
        if main is None and ":" not in record.session:
            main = record.session
        if record.session == main:
            yield record


def context_of(path: Path, count: Callable[[str], int] | None = None) -> ContextReport:
    """What sat in one session's context at its last turn, slice by slice."""
    count = count or text_counter()
    slices = dict.fromkeys(CONTEXT_SLICES, 0)
    images = 0
    last: UsageRecord | None = None
    totals = [0, 0, 0, 0]
    turns = 0
    cost: float | None = 0.0
    priced = True
    main: str | None = None
    for record in _main_session_records(path):
        main = record.session
        if isinstance(record, BoundaryRecord):
            slices = dict.fromkeys(CONTEXT_SLICES, 0)
            images = 0
        elif isinstance(record, ResultRecord):
            slices["tool_results"] += count(record.text) if record.text else 0
            slices["images"] += sum(map(image_tokens, record.images))
            images += len(record.images)
        elif isinstance(record, TextRecord):
            tokens = count(record.text) if record.text else 0
            key = {"call": "tool_calls", "user": "user_messages"}.get(
                record.source, "assistant_replies"
            )
            slices[key] += tokens
            slices["images"] += sum(map(image_tokens, record.images))
            images += len(record.images)
        elif isinstance(record, UsageRecord):
            last = record
            turns += 1
            totals[0] += record.input
            totals[1] += record.output
            totals[2] += record.cache_read
            totals[3] += record.cache_creation
            turn_cost = _turn_cost(record)
            if turn_cost is None:
                priced = False
            elif cost is not None:
                cost += turn_cost
    if last is None and not any(slices.values()):
        raise CouldNotJudge(f"{path}: no conversation or usage found in this transcript")
    model = last.model if last is not None else "unknown"
    found = _find_model(model)
    window = found.window if found is not None else None
    return ContextReport(
        session=main or path.stem,
        path=str(path),
        model=model,
        slices=slices,
        images=images,
        reported_prompt=last.prompt if last is not None else 0,
        turns=turns,
        input_tokens=totals[0],
        output_tokens=totals[1],
        cache_read_tokens=totals[2],
        cache_write_tokens=totals[3],
        window=window,
        cost_usd=round(cost, 6) if priced and cost is not None and last is not None else None,
        priced=priced and last is not None,
        scale=found.scale if found is not None else None,
    )


def reconstructed_messages(path: Path) -> tuple[list[dict[str, str]], int]:
    """The last turn's request as the transcript shows it since the last compaction:
    user messages and tool results as ``user`` turns, assistant replies, thinking and tool
    calls as ``assistant`` turns (consecutive texts of one role joined by a blank line), and
    the o200k count of exactly those texts. Images are not sent (their slice is left out)."""
    count = text_counter()
    pieces: list[tuple[str, str]] = []
    for record in _main_session_records(path):
        if isinstance(record, BoundaryRecord):
            pieces = []
        elif isinstance(record, ResultRecord) and record.text:
            pieces.append(("user", record.text))
        elif isinstance(record, TextRecord) and record.text:
            pieces.append(("user" if record.source == "user" else "assistant", record.text))
    messages: list[dict[str, str]] = []
    for role, text in pieces:
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"] += "\n\n" + text
        else:
            messages.append({"role": role, "content": text})
    if not messages:
        raise CouldNotJudge(f"{path}: no conversation text to reconstruct a request from")
    if messages[0]["role"] != "user":
        # A request opens with a user turn; the probe is one token and is said to be there.
        messages.insert(0, {"role": "user", "content": OPENING_PROBE})
    return messages, sum(count(text) for _, text in pieces)


def _find_model(name: str) -> Model | None:
    """The catalogue's model, or None: an unknown model (or an unreadable catalogue) is unpriced."""
    try:
        return find_model(name)
    except CouldNotJudge:
        return None


def _turn_cost(usage: UsageRecord) -> float | None:
    """USD of one turn, or None when the model or one of the needed prices is unknown."""
    model = _find_model(usage.model)
    if model is None:
        return None
    prices = model.prices_for(usage.prompt)
    # Cache writes are priced by their lifetime; the usage block says how many were 1-hour.
    write_5m = prices.cache_write_5m or prices.cache_write
    write_1h = prices.cache_write_1h or prices.cache_write
    total = 0.0
    for tokens, price in (
        (usage.input, prices.input),
        (usage.output, prices.output),
        (usage.cache_read, prices.cache_read),
        (usage.cache_creation - usage.cache_creation_1h, write_5m),
        (usage.cache_creation_1h, write_1h),
    ):
        if tokens:
            if price is None:
                return None
            total += tokens * price / 1_000_000
    return total
