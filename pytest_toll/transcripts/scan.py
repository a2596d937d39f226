"""Tolls: what each tool call's result adds to an agent's context, from its transcripts.

Data flows one way: transcript records (:mod:`pytest_toll.transcripts.readers`) → one
:class:`FileSummary` per file (calls paired by id, classified, shaped, counted; repeats found
within each session) → a :class:`TollReport` over many files. File summaries are plain data,
cached per file keyed by (path, size, mtime, tokenizer) so an unchanged history re-scans
almost free, and computed in a process pool when many files need reading.

Outcomes: ``ok`` (text or images came back), ``error`` (the tool said it failed),
``empty`` (nothing came back), ``truncated`` (the tool cut its output short),
``opaque`` (structured blocks with no text or image — not a failure, not ranked) and
``unpaired`` (a call whose result never appears — never free, never ranked). Only ``ok``
tolls are ranked; a shape whose judged calls are mostly not ``ok`` is *suspicious*.
"""

from __future__ import annotations

import functools
import json
import math
import os
import posixpath
import re
import shlex
import sqlite3
import sys
import threading
import time
from collections import Counter as Tally
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.tokens import TOKENIZER_NAME
from pytest_toll.transcripts.readers import (
    MAX_LINE_BYTES,
    SHELL_TOOLS,
    BadLine,
    BoundaryRecord,
    CallRecord,
    Image,
    ResultRecord,
    TextRecord,
    UsageRecord,
    discover,
    is_subagent_file,
    read_records,
    transcript_format,
)

OK = "ok"
ERROR = "error"
EMPTY = "empty"
TRUNCATED = "truncated"
OPAQUE = "opaque"
UNPAIRED = "unpaired"
OUTCOMES = (OK, ERROR, EMPTY, TRUNCATED, OPAQUE, UNPAIRED)
#: Outcomes that say something about the tool; opaque and unpaired are not judged.
JUDGED = (OK, ERROR, EMPTY, TRUNCATED)

SUSPICIOUS_MIN_JUDGED = 3
SUSPICIOUS_OK_RATIO = 0.5
DRIFT_TOLERANCE = 0.05
NEAR_LIMIT = 0.8
#: Bump when a summary's meaning changes, so stale cache entries are ignored.
SUMMARY_VERSION = 4

# --- counting ----------------------------------------------------------------------------

# Anthropic sizes an image as (width × height) / 750 tokens after fitting it within 1568 px on
# the long edge and about 1.15 megapixels; an image whose header cannot be read is charged the
# ceiling those limits imply, and reported as such.
IMAGE_LONG_EDGE = 1568
IMAGE_MAX_PIXELS = 1_150_000
IMAGE_TOKENS_CEILING = 1_600


def image_tokens(image: Image) -> int:
    if not image.width or not image.height:
        return IMAGE_TOKENS_CEILING
    pixels = image.width * image.height
    fit = min(1.0, IMAGE_LONG_EDGE / max(image.width, image.height))
    fit = min(fit, math.sqrt(IMAGE_MAX_PIXELS / pixels))
    return max(1, math.ceil(pixels * fit * fit / 750))


def _counter() -> Callable[[str], int]:
    from pytest_toll.core.tokens import O200kCounter

    return O200kCounter().count


# --- outcomes ----------------------------------------------------------------------------

# Markers tools print when they cut output short (Claude Code, Codex, common MCP servers);
# looked for only near the ends, where tools put them, so file contents rarely match.
_TRUNCATED = re.compile(
    r"\d+ (?:lines|characters|chars|bytes|tokens) truncated"
    r"|\[(?:output )?truncated|<response clipped>|output too large"
    r"|\[\.\.\. ?omitted \d+ of \d+ lines|^Total output lines: \d+|\(truncated\)"
    r"|\.\.\. \(\d+ more (?:lines|characters)\)",
    re.IGNORECASE | re.MULTILINE,
)
_MARKER_WINDOW = 800
_TRUNCATION_KEYWORDS = ("truncat", "clipped", "too large", "omitted", "total output", " more ")


def outcome_of(result: ResultRecord) -> str:
    if result.is_error or result.text.startswith("<tool_use_error>"):
        return ERROR
    text = result.text
    if text and not text.isspace():
        ends = (
            text
            if len(text) <= 2 * _MARKER_WINDOW
            else text[:_MARKER_WINDOW] + "\n" + text[-_MARKER_WINDOW:]
        )
        lowered = ends.lower()
        # The regex is costly next to tokenizing; most results share none of its keywords.
        if not any(keyword in lowered for keyword in _TRUNCATION_KEYWORDS):
            return OK
        return TRUNCATED if _TRUNCATED.search(ends) else OK
    if result.images:
        return OK
    return OPAQUE if result.opaque_blocks else EMPTY


# --- shapes and targets ------------------------------------------------------------------

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = frozenset({"&&", "||", ";", "|", "&", ";;", "|&", "\n"})
_PRELUDES = frozenset({"cd", "pushd", "popd", "export", "set", "source", ".", "unset", "ulimit"})
# Wrappers that run the rest of the line; the value says how many option arguments take a value.
_WRAPPERS: dict[str, frozenset[str]] = {
    "sudo": frozenset({"-u", "-g", "-C", "-D", "-h", "-p", "-U", "-r", "-t"}),
    "env": frozenset({"-u", "-C", "-S"}),
    "timeout": frozenset({"-s", "-k", "--signal", "--kill-after"}),
    "nice": frozenset({"-n"}),
    "nohup": frozenset(),
    "time": frozenset(),
    "command": frozenset(),
    "exec": frozenset(),
    "stdbuf": frozenset({"-i", "-o", "-e"}),
    "xvfb-run": frozenset(),
    "npx": frozenset({"-p", "--package"}),
    "bunx": frozenset(),
    "pnpx": frozenset(),
}
# Runners whose second word is the real verb: `uv run pytest` is `$ pytest`.
_RUNNERS = {
    "uv": "run",
    "poetry": "run",
    "pipenv": "run",
    "pdm": "run",
    "hatch": "run",
    "rye": "run",
}
# Tools whose subcommand is the verb: `$ git log`, not `$ git`.
_SUBCOMMAND_TOOLS = frozenset(
    {
        "git", "gh", "glab", "npm", "pnpm", "yarn", "bun", "cargo", "docker", "podman",
        "kubectl", "helm", "go", "pip", "uv", "poetry", "brew", "apt", "apt-get", "dnf",
        "systemctl", "terraform", "dotnet", "conda", "rustup", "nix", "gcloud", "aws", "az",
        "deno", "mix", "composer", "bundle", "rails", "swift", "flutter", "hg", "svn", "jj",
    }
)  # fmt: skip
# Options of those tools that take a value before the subcommand (`git -C dir log`).
_VALUE_OPTIONS = frozenset(
    {
        "-C",
        "-c",
        "--git-dir",
        "--work-tree",
        "--namespace",
        "-n",
        "--context",
        "-f",
        "--file",
        "--project",
        "--manifest-path",
        "--prefix",
        "--cwd",
    }
)
_INTERPRETERS = frozenset(
    {
        "python",
        "node",
        "ruby",
        "perl",
        "php",
        "bash",
        "sh",
        "zsh",
        "deno",
        "bun",
        "osascript",
        "pwsh",
        "powershell",
    }
)
_INLINE_FLAGS = frozenset({"-c", "-e", "--eval", "-command", "-Command", "--command"})
_SUBCOMMAND = re.compile(r"^[a-z][a-z0-9_:.-]*$")


def _split_command(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|")
    lexer.whitespace_split = True
    lexer.commenters = ""
    # Newlines separate commands: keep them as tokens instead of whitespace.
    lexer.whitespace = " \t\r"
    try:
        words = list(lexer)
    except ValueError:
        words = command.replace("\n", " \n ").split(" ")
    return [word for word in words if word != ""]


def _segments(words: list[str]) -> list[list[str]]:
    segments: list[list[str]] = [[]]
    for word in words:
        if word in _SEPARATORS or (set(word) <= set(";&|\n") and word):
            if segments[-1]:
                segments.append([])
        else:
            segments[-1].append(word)
    return [segment for segment in segments if segment]


def _verb(word: str) -> str:
    # `/usr/bin/git` is `git`; a bare `/` or `./` stays itself rather than becoming empty.
    return posixpath.basename(word.rstrip("/")) or word


def _strip_wrappers(words: list[str]) -> list[str]:
    index = 0
    while index < len(words):
        word = words[index]
        if _ASSIGNMENT.match(word):
            index += 1
            continue
        name = _verb(word)
        if name in _WRAPPERS:
            takes_value = _WRAPPERS[name]
            index += 1
            while index < len(words) and (
                words[index].startswith("-") or (name == "env" and _ASSIGNMENT.match(words[index]))
            ):
                index += 2 if words[index] in takes_value else 1
            if name == "timeout" and index < len(words):
                index += 1  # the duration
            continue
        if name in _RUNNERS and index + 1 < len(words) and words[index + 1] == _RUNNERS[name]:
            index += 2
            while index < len(words) and words[index].startswith("-"):
                index += 1
            continue
        break
    return words[index:]


def _interpreter(name: str) -> str:
    # python3, python3.12, node18 → the family name, so versions share a bucket.
    base = re.sub(r"[\d.]+$", "", name)
    return base if base in _INTERPRETERS else name


def _inline_flag(family: str) -> str:
    # All inline code of one interpreter is one bucket, named after its usual flag.
    return "-c" if family in ("python", "bash", "sh", "zsh") else "-e"


@functools.lru_cache(maxsize=8192)  # agents re-run the same commands; shlex is not free
def shape_of_command(command: str, _depth: int = 0) -> str:
    """``$ verb`` for a shell command: wrappers and ``cd x &&`` preludes stripped."""
    segments = _segments(_split_command(command.strip()))
    chosen: list[str] = []
    for position, segment in enumerate(segments):
        words = _strip_wrappers(segment)
        if not words:
            continue
        verb = _verb(words[0])
        if verb in _PRELUDES and position + 1 < len(segments):
            continue
        chosen = words
        break
    if not chosen:
        return "$ (empty)"
    verb = _verb(chosen[0])
    family = _interpreter(verb)
    rest = chosen[1:]
    if family in _INTERPRETERS:
        if rest and rest[0] in _INLINE_FLAGS:
            if family in ("bash", "sh", "zsh") and len(rest) > 1 and _depth == 0:
                return shape_of_command(rest[1], _depth + 1)
            return f"$ {family} {_inline_flag(family)}"
        if not rest or rest[0] in ("-", "<<", "<<<") or rest[0].startswith("<<"):
            return f"$ {family} {_inline_flag(family)}"
        if family == "python" and rest[0] == "-m" and len(rest) > 1:
            return f"$ python -m {rest[1]}"
        return f"$ {family}"
    if verb in _SUBCOMMAND_TOOLS:
        index = 0
        while index < len(rest) and rest[index].startswith("-"):
            index += 2 if rest[index] in _VALUE_OPTIONS else 1
        if index < len(rest) and _SUBCOMMAND.match(rest[index]):
            return f"$ {verb} {rest[index]}"
    return f"$ {verb}"


def command_of(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """The shell command of a Bash-like call (Claude's Bash, Codex's shell tools), or None."""
    if tool.lower() not in SHELL_TOOLS:
        return None
    value = arguments.get("command", arguments.get("cmd"))
    if isinstance(value, list) and all(isinstance(part, str) for part in value):
        if (
            len(value) >= 3
            and posixpath.basename(value[0]) in ("bash", "sh", "zsh")
            and value[1] in ("-c", "-lc")
        ):
            return str(value[2])
        return shlex.join(value)
    return value if isinstance(value, str) else None


def shape_of(tool: str, arguments: Mapping[str, Any]) -> str:
    command = command_of(tool, arguments)
    if command is not None:
        return shape_of_command(command)
    return tool


_MUTATING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
# Calls that change nothing worth re-reading; never a repeat.
_NOT_FETCHES = _MUTATING_TOOLS | {"TodoWrite", "Task", "Agent", "ExitPlanMode", "update_plan"}


def _normal_path(value: object, cwd: str | None) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    if cwd and not posixpath.isabs(value):
        value = posixpath.join(cwd, value)
    return posixpath.normpath(value)


def target_of(call: CallRecord) -> str | None:
    """What a call fetched, normalised so that two identical fetches compare equal."""
    if call.tool in _NOT_FETCHES:
        return None
    arguments = call.input
    command = command_of(call.tool, arguments)
    if command is not None:
        return " ".join(command.split())
    path = _normal_path(arguments.get("file_path", arguments.get("notebook_path")), call.cwd)
    if call.tool in ("Read", "NotebookRead") and path:
        offset, limit = arguments.get("offset"), arguments.get("limit")
        return (
            path if offset is None and limit is None else f"{path} [{offset or 1}+{limit or '…'}]"
        )
    if call.tool in ("Grep", "Glob"):
        scope = _normal_path(arguments.get("path"), call.cwd) or call.cwd or "."
        extras = [
            f"{key}={arguments[key]}" for key in ("glob", "type", "output_mode") if key in arguments
        ]
        return " ".join([str(arguments.get("pattern", "")), "in", scope, *extras])
    if isinstance(arguments.get("url"), str):
        return str(arguments["url"])
    if isinstance(arguments.get("query"), str):
        return str(arguments["query"])
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


# --- one file ----------------------------------------------------------------------------


@dataclass
class ShapeTally:
    calls: int = 0
    by_outcome: dict[str, int] = field(default_factory=dict)
    ok_tokens: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Repeat:
    session: str
    shape: str
    target: str
    times: int
    tokens_each: int
    #: the id of the first fetch: the same repeat copied into a resumed session's file is one
    first_call: str = ""

    @property
    def wasted(self) -> int:
        return self.tokens_each * (self.times - 1)

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "shape": self.shape,
            "target": self.target,
            "times": self.times,
            "tokens_each": self.tokens_each,
            "wasted": self.wasted,
        }


@dataclass
class FileSummary:
    """Everything a report needs from one transcript file, as plain (cacheable) data."""

    path: str
    format: str
    sessions: list[str] = field(default_factory=list)
    unreadable_lines: int = 0
    problems: list[str] = field(default_factory=list)
    orphan_results: int = 0
    shapes: dict[str, ShapeTally] = field(default_factory=dict)
    repeats: list[Repeat] = field(default_factory=list)
    admitted_tokens: int = 0
    images: int = 0
    turns: int = 0
    prompt_tokens: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    #: per usable turn: [message id, model, reported growth, our o200k count of what was added]
    drift: list[list[Any]] | None = None
    #: [call id, shape, outcome, tokens] per call and [message id, prompt] per turn: a resumed
    #: Claude Code session copies earlier messages into its new file, so a report over many
    #: files counts each call and turn once by these keys.
    call_log: list[list[Any]] = field(default_factory=list)
    turn_log: list[list[Any]] = field(default_factory=list)

    @property
    def calls(self) -> int:
        return sum(tally.calls for tally in self.shapes.values())

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["repeats"] = [asdict(repeat) for repeat in self.repeats]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> FileSummary:
        values = dict(data)
        values["shapes"] = {name: ShapeTally(**tally) for name, tally in data["shapes"].items()}
        values["repeats"] = [Repeat(**repeat) for repeat in data["repeats"]]
        return cls(**values)


_PROBLEMS_KEPT = 5


@dataclass
class _Pending:
    session: str
    shape: str
    repeat_key: tuple[str, str, str, int] | None


def summarize_file(
    path: Path,
    *,
    drift: bool = False,
    max_line_bytes: int = MAX_LINE_BYTES,
    count: Callable[[str], int] | None = None,
) -> FileSummary:
    """Read one transcript and reduce it to a :class:`FileSummary` (never raises on content)."""
    count = count or _counter()
    summary = FileSummary(str(path), transcript_format(path), drift=[] if drift else None)
    sessions: dict[str, None] = {}
    calls: dict[str, _Pending] = {}
    early_results: dict[str, tuple[str, int]] = {}
    paired: set[str] = set()
    fetches: dict[tuple[str, str, str, int], list[tuple[str, int]]] = {}
    # Re-reading a file after editing it is not waste: edits open a new "epoch" for that path
    # (and, for commands and searches, for the whole session).
    path_epochs: Tally[tuple[str, str]] = Tally()
    session_epochs: Tally[str] = Tally()
    # drift: per session, the last reported prompt, our count since, and whether it is usable
    last_prompt: dict[str, int] = {}
    added: Tally[str] = Tally()
    tainted: set[str] = set()

    def tally(call_id: str, shape: str, outcome: str, tokens: int) -> None:
        summary.call_log.append([call_id, shape, outcome, tokens])
        entry = summary.shapes.setdefault(shape, ShapeTally())
        entry.calls += 1
        entry.by_outcome[outcome] = entry.by_outcome.get(outcome, 0) + 1
        if outcome == OK:
            entry.ok_tokens.append(tokens)

    def settle(call_id: str, pending: _Pending, outcome: str, tokens: int) -> None:
        tally(call_id, pending.shape, outcome, tokens)
        if outcome == OK and pending.repeat_key is not None:
            fetches.setdefault(pending.repeat_key, []).append((call_id, tokens))

    for record in read_records(path, with_text=drift, max_line_bytes=max_line_bytes):
        if isinstance(record, BadLine):
            summary.unreadable_lines += 1
            if len(summary.problems) < _PROBLEMS_KEPT:
                summary.problems.append(f"line {record.line}: {record.reason}")
            continue
        session = record.session
        sessions.setdefault(session, None)
        if isinstance(record, CallRecord):
            if record.tool in _MUTATING_TOOLS:
                session_epochs[session] += 1
                touched = _normal_path(
                    record.input.get("file_path", record.input.get("notebook_path")), record.cwd
                )
                if touched:
                    path_epochs[(session, touched)] += 1
            shape = shape_of(record.tool, record.input)
            target = target_of(record)
            key = None
            if target is not None:
                if record.tool in ("Read", "NotebookRead"):
                    read_path = _normal_path(
                        record.input.get("file_path", record.input.get("notebook_path")), record.cwd
                    )
                    epoch = path_epochs[(session, read_path or "")]
                elif record.tool in ("WebFetch", "WebSearch") or record.tool.startswith("mcp__"):
                    epoch = 0
                else:
                    epoch = session_epochs[session]
                key = (session, shape, target, epoch)
            pending = _Pending(session, shape, key)
            early = early_results.pop(record.call_id, None)
            if early is not None:
                paired.add(record.call_id)
                summary.admitted_tokens += early[1]
                settle(record.call_id, pending, *early)
            else:
                calls[record.call_id] = pending
        elif isinstance(record, ResultRecord):
            tokens = (count(record.text) if record.text else 0) + sum(
                map(image_tokens, record.images)
            )
            summary.images += len(record.images)
            outcome = outcome_of(record)
            found = calls.pop(record.call_id, None)
            if found is not None:
                paired.add(record.call_id)
                summary.admitted_tokens += tokens
                settle(record.call_id, found, outcome, tokens)
            elif record.call_id in paired:
                pass  # the same result written twice: counted once
            elif record.call_id in early_results:
                summary.orphan_results += 1
            else:
                # Possibly answered before its call was written (out of order): hold the verdict.
                early_results[record.call_id] = (outcome, tokens)
            if drift:
                added[session] += tokens
                if record.images:
                    tainted.add(session)
        elif isinstance(record, UsageRecord):
            summary.turns += 1
            summary.prompt_tokens += record.prompt
            summary.turn_log.append([record.message_id, record.prompt])
            summary.input_tokens += record.input
            summary.output_tokens += record.output
            summary.cache_read_tokens += record.cache_read
            summary.cache_write_tokens += record.cache_creation
            if summary.drift is not None:
                previous = last_prompt.get(session)
                growth = record.prompt - previous if previous is not None else 0
                if growth > 0 and added[session] > 0 and session not in tainted:
                    summary.drift.append([record.message_id, record.model, growth, added[session]])
                last_prompt[session] = record.prompt
                added[session] = 0
                tainted.discard(session)
        elif isinstance(record, TextRecord):
            added[session] += count(record.text) if record.text else 0
            if record.images:
                tainted.add(session)
        elif isinstance(record, BoundaryRecord):
            last_prompt.pop(session, None)
            added[session] = 0
    for call_id, pending in calls.items():
        tally(call_id, pending.shape, UNPAIRED, 0)
    # Results whose call never appeared are not attributed to any shape.
    summary.orphan_results += len(early_results)
    summary.sessions = list(sessions)
    for (session, shape, target, _), fetched in fetches.items():
        if len(fetched) >= 2:
            each = min(tokens for _, tokens in fetched)
            summary.repeats.append(
                Repeat(session, shape, target, len(fetched), each, fetched[0][0])
            )
    return summary


# --- many files: discovery, cache, pool ------------------------------------------------


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    environ = os.environ if environ is None else environ
    base = environ.get("XDG_CACHE_HOME") or str(Path("~/.cache").expanduser())
    return Path(base) / "pytest-toll"


class SummaryCache:
    """Per-file summaries in one SQLite file; any cache failure just means a re-read."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "transcripts.sqlite"
        self._db: sqlite3.Connection | None = None
        try:
            directory.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=10)
            self._db.execute(
                "CREATE TABLE IF NOT EXISTS summaries (path TEXT, kind TEXT, size INTEGER,"
                " mtime INTEGER, tokenizer TEXT, version INTEGER, data TEXT,"
                " PRIMARY KEY (path, kind))"
            )
        except (sqlite3.Error, OSError):
            self._db = None

    def get(self, path: str, kind: str, size: int, mtime: int) -> FileSummary | None:
        if self._db is None:
            return None
        try:
            row = self._db.execute(
                "SELECT data FROM summaries WHERE path=? AND kind=? AND size=? AND mtime=?"
                " AND tokenizer=? AND version=?",
                (path, kind, size, mtime, TOKENIZER_NAME, SUMMARY_VERSION),
            ).fetchone()
            return None if row is None else FileSummary.from_json(json.loads(row[0]))
        except (sqlite3.Error, ValueError, TypeError, KeyError):
            return None

    def put(self, entries: Iterable[tuple[str, str, int, int, FileSummary]]) -> None:
        if self._db is None:
            return
        try:
            with self._db:
                self._db.executemany(
                    "INSERT OR REPLACE INTO summaries VALUES (?,?,?,?,?,?,?)",
                    [
                        (
                            path,
                            kind,
                            size,
                            mtime,
                            TOKENIZER_NAME,
                            SUMMARY_VERSION,
                            json.dumps(summary.to_json()),
                        )
                        for path, kind, size, mtime, summary in entries
                    ],
                )
        except sqlite3.Error:
            pass

    def close(self) -> None:
        if self._db is not None:
            self._db.close()


def select_files(
    roots: Sequence[Path], since_days: float | None = None, limit: int | None = None
) -> list[tuple[Path, os.stat_result]]:
    """Transcript files under the roots, newest first, filtered by age and count."""
    files = []
    cutoff = time.time() - since_days * 86400 if since_days is not None else None
    for path in discover(list(roots)):
        try:
            status = path.stat()
        except OSError:
            continue
        if cutoff is not None and status.st_mtime < cutoff:
            continue
        files.append((path, status))
    files.sort(key=lambda item: item[1].st_mtime, reverse=True)
    return files[:limit] if limit is not None else files


def transcript_files(
    roots: Sequence[Path], since_days: float | None = None, limit: int | None = None
) -> list[tuple[Path, os.stat_result]]:
    """``select_files``, where finding none is could-not-judge, never an empty pass."""
    files = select_files(roots, since_days, limit)
    if not files:
        raise CouldNotJudge(
            f"no transcripts found under {', '.join(map(str, roots)) or 'no roots'}"
        )
    return files


def _single_threaded() -> bool:
    """Whether this process runs one thread, counting threads started outside ``threading``
    (execnet's, in a pytest-xdist worker) where the OS can tell."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


def _summarize_for_pool(job: tuple[str, bool]) -> tuple[str, FileSummary]:
    path, drift = job
    return path, summarize_file(Path(path), drift=drift)


#: Below this much unread data a pool costs more than it saves.
POOL_MIN_BYTES = 4 * 1024 * 1024


@dataclass
class ScanStats:
    files: int = 0
    cached: int = 0
    read_bytes: int = 0
    workers: int = 1


def summarize_files(
    files: Sequence[tuple[Path, os.stat_result]],
    *,
    drift: bool = False,
    cache: Path | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> tuple[list[FileSummary], ScanStats]:
    """A summary per file: from the cache when unchanged, else read (in a pool if it pays)."""
    kind = "drift" if drift else "tolls"
    store = SummaryCache(cache) if cache is not None else None
    summaries: dict[str, FileSummary] = {}
    missing: list[tuple[str, int, int]] = []
    for path, status in files:
        name = str(path)
        found = store.get(name, kind, status.st_size, status.st_mtime_ns) if store else None
        if found is not None:
            summaries[name] = found
        else:
            missing.append((name, status.st_size, status.st_mtime_ns))
    stats = ScanStats(len(files), len(summaries), sum(size for _, size, _ in missing))
    workers = workers if workers is not None else (os.cpu_count() or 1)
    workers = max(1, min(workers, len(missing)))
    done: list[tuple[str, str, int, int, FileSummary]] = []
    shown = [0.0]

    def report(finished: int) -> None:
        now = time.monotonic()
        if progress and (now - shown[0] > 0.2 or finished == len(missing)):
            shown[0] = now
            sys.stderr.write(f"\rtoll: read {finished}/{len(missing)} transcript files")
            if finished == len(missing):
                sys.stderr.write("\n")
            sys.stderr.flush()

    # Largest first, so one big file does not finish last on an otherwise idle pool.
    missing.sort(key=lambda item: item[1], reverse=True)
    if workers > 1 and stats.read_bytes >= POOL_MIN_BYTES:
        import multiprocessing

        from pytest_toll.core.tokens import encoding

        stats.workers = workers
        methods = multiprocessing.get_all_start_methods()
        if "fork" in methods and _single_threaded():
            # Forked workers share the vocabulary loaded here instead of each reading it.
            # multiprocessing.Pool forks its workers before starting its own threads
            # (concurrent.futures forks from a manager thread, which 3.12+ warns about).
            encoding()
            method: str | None = "fork"
        else:
            # Forking a multi-threaded process (a pytest-xdist worker, say) can leave a child
            # blocked on a lock another thread held: such hosts pay for fresh interpreters.
            method = "forkserver" if "forkserver" in methods else None
        context = multiprocessing.get_context(method)
        where = {name: (size, mtime) for name, size, mtime in missing}
        jobs = [(name, drift) for name, _size, _mtime in missing]
        with context.Pool(processes=workers) as pool:
            for finished, (name, summary) in enumerate(
                pool.imap_unordered(_summarize_for_pool, jobs), 1
            ):
                size, mtime = where[name]
                summaries[name] = summary
                done.append((name, kind, size, mtime, summary))
                report(finished)
    else:
        count = _counter()
        for finished, (name, size, mtime) in enumerate(missing, 1):
            summary = summarize_file(Path(name), drift=drift, count=count)
            summaries[name] = summary
            done.append((name, kind, size, mtime, summary))
            report(finished)
    if store is not None:
        store.put(done)
        store.close()
    return [summaries[str(path)] for path, _ in files], stats


# --- the report --------------------------------------------------------------------------


def nearest_rank(sorted_values: Sequence[int], fraction: float) -> int:
    """The nearest-rank percentile: an observed value, never an interpolation."""
    if not sorted_values:
        return 0
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


@dataclass(frozen=True)
class ShapeRow:
    shape: str
    calls: int
    ok: int
    ok_tokens: int
    median: int
    p90: int
    by_outcome: dict[str, int]
    suspicious: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "shape": self.shape,
            "calls": self.calls,
            "ok": self.ok,
            "ok_tokens": self.ok_tokens,
            "median": self.median,
            "p90": self.p90,
            "by_outcome": dict(self.by_outcome),
            "suspicious": self.suspicious,
        }


def is_suspicious(by_outcome: Mapping[str, int]) -> bool:
    judged = sum(by_outcome.get(outcome, 0) for outcome in JUDGED)
    return judged >= SUSPICIOUS_MIN_JUDGED and by_outcome.get(OK, 0) / judged < SUSPICIOUS_OK_RATIO


@dataclass
class TollReport:
    """The toll table over many files; ``as_dict()`` is the ``toll scan --json`` contract."""

    sessions: int
    calls: int
    unreadable_lines: int
    shapes: list[ShapeRow]
    repeats: list[Repeat]
    wasted_tokens: int
    ok_tokens: int
    admitted_tokens: int
    prompt_tokens: int
    files: int = 0
    orphan_results: int = 0
    images: int = 0
    problems: dict[str, list[str]] = field(default_factory=dict)
    unreadable_by_file: dict[str, int] = field(default_factory=dict)
    tokenizer: str = TOKENIZER_NAME

    @property
    def waste_ratio(self) -> float:
        return round(self.wasted_tokens / self.ok_tokens, 6) if self.ok_tokens else 0.0

    @property
    def amplification(self) -> float | None:
        """Cumulative prompt tokens over admitted tool tokens: how often a toll is re-sent."""
        if not self.prompt_tokens or not self.admitted_tokens:
            return None
        return round(self.prompt_tokens / self.admitted_tokens, 2)

    def top(self, count: int | None) -> TollReport:
        if count is None:
            return self
        copy = TollReport(**{**self.__dict__})
        copy.shapes = self.shapes[:count]
        copy.repeats = self.repeats[:count]
        return copy

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "tolls",
            "tokenizer": self.tokenizer,
            "sessions": self.sessions,
            "calls": self.calls,
            "unreadable_lines": self.unreadable_lines,
            "shapes": [row.as_dict() for row in self.shapes],
            "repeats": [repeat.as_dict() for repeat in self.repeats],
            "wasted_tokens": self.wasted_tokens,
            "waste_ratio": self.waste_ratio,
            "amplification": self.amplification,
        }


def build_report(summaries: Iterable[FileSummary]) -> TollReport:
    merged: dict[str, ShapeTally] = {}
    repeats: dict[tuple[str, str, str, int], Repeat] = {}
    seen_calls: set[tuple[str, str, str, int]] = set()
    seen_turns: set[str] = set()
    sessions: set[str] = set()
    unreadable = orphans = admitted = prompt = images = files = 0
    problems: dict[str, list[str]] = {}
    unreadable_by_file: dict[str, int] = {}
    for summary in summaries:
        files += 1
        sessions.update(summary.sessions)
        unreadable += summary.unreadable_lines
        if summary.unreadable_lines:
            problems[summary.path] = summary.problems
            unreadable_by_file[summary.path] = summary.unreadable_lines
        orphans += summary.orphan_results
        images += summary.images
        for message_id, prompt_tokens in summary.turn_log:
            if message_id is not None:
                if message_id in seen_turns:
                    continue
                seen_turns.add(message_id)
            prompt += prompt_tokens
        for call_id, shape, outcome, tokens in summary.call_log:
            key = (call_id, shape, outcome, tokens)
            if key in seen_calls:
                continue  # the same call copied into a resumed session's file
            seen_calls.add(key)
            entry = merged.setdefault(shape, ShapeTally())
            entry.calls += 1
            entry.by_outcome[outcome] = entry.by_outcome.get(outcome, 0) + 1
            if outcome == OK:
                entry.ok_tokens.append(tokens)
            if outcome != UNPAIRED:
                admitted += tokens
        for repeat in summary.repeats:
            same = (
                repeat.first_call or repeat.session,
                repeat.shape,
                repeat.target,
                repeat.tokens_each,
            )
            known = repeats.get(same)
            if known is None or known.times < repeat.times:
                repeats[same] = repeat
    rows = []
    for shape, tally in merged.items():
        values = sorted(tally.ok_tokens)
        by_outcome = {
            outcome: tally.by_outcome[outcome]
            for outcome in OUTCOMES
            if tally.by_outcome.get(outcome)
        }
        rows.append(
            ShapeRow(
                shape,
                tally.calls,
                len(values),
                sum(values),
                nearest_rank(values, 0.5),
                nearest_rank(values, 0.9),
                by_outcome,
                is_suspicious(by_outcome),
            )
        )
    rows.sort(key=lambda row: (-row.ok_tokens, -row.calls, row.shape))
    ranked = sorted(
        repeats.values(),
        key=lambda repeat: (
            -repeat.wasted,
            -repeat.times,
            repeat.session,
            repeat.shape,
            repeat.target,
        ),
    )
    return TollReport(
        sessions=len(sessions),
        calls=sum(row.calls for row in rows),
        unreadable_lines=unreadable,
        shapes=rows,
        repeats=ranked,
        wasted_tokens=sum(repeat.wasted for repeat in ranked),
        ok_tokens=sum(row.ok_tokens for row in rows),
        admitted_tokens=admitted,
        prompt_tokens=prompt,
        files=files,
        orphan_results=orphans,
        images=images,
        problems=problems,
        unreadable_by_file=unreadable_by_file,
    )


def scan(
    roots: Sequence[Path],
    *,
    since_days: float | None = None,
    limit: int | None = None,
    cache: Path | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> TollReport:
    """The toll table of every transcript under ``roots``; CouldNotJudge when there is none."""
    files = transcript_files(roots, since_days, limit)
    summaries, _ = summarize_files(files, cache=cache, workers=workers, progress=progress)
    report = build_report(summaries)
    if report.calls == 0:
        raise CouldNotJudge(f"{len(files)} transcript file(s) read, but they contain no tool calls")
    return report


# --- drift -------------------------------------------------------------------------------


@dataclass(frozen=True)
class DriftRow:
    model: str
    turns: int
    reported: int
    counted: int

    @property
    def ratio(self) -> float:
        return round(self.reported / self.counted, 4) if self.counted else 0.0

    @property
    def within_tolerance(self) -> bool:
        return abs(self.ratio - 1.0) <= DRIFT_TOLERANCE

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "turns": self.turns,
            "reported_tokens": self.reported,
            "o200k_tokens": self.counted,
            "ratio": self.ratio,
            "within_tolerance": self.within_tolerance,
        }


DRIFT_METHOD = (
    "For consecutive turns of one context, the provider's reported prompt growth (input + "
    "cache read + cache creation of the usage block) is set against our o200k count of what "
    "was added in between (the previous reply, thinking, tool calls, tool results, user text); "
    "both are summed per model and divided."
)
DRIFT_LIMITS = (
    "Message framing and tool-call wrapping are in the reported side only, so the ratio is "
    "an upper bound; thinking a provider keeps encrypted and the system prompt are not in a "
    "transcript; turns with images, compaction or shrinking prompts are skipped."
)


@dataclass
class DriftReport:
    rows: list[DriftRow]
    files: int
    unreadable_lines: int
    tolerance: float = DRIFT_TOLERANCE

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "drift",
            "tokenizer": TOKENIZER_NAME,
            "tolerance": self.tolerance,
            "models": [row.as_dict() for row in self.rows],
            "files": self.files,
            "unreadable_lines": self.unreadable_lines,
            "method": DRIFT_METHOD,
            "limits": DRIFT_LIMITS,
        }


def drift(
    roots: Sequence[Path],
    *,
    since_days: float | None = None,
    limit: int | None = None,
    cache: Path | None = None,
    workers: int | None = None,
    progress: bool = False,
) -> DriftReport:
    files = transcript_files(roots, since_days, limit)
    summaries, _ = summarize_files(
        files, drift=True, cache=cache, workers=workers, progress=progress
    )
    totals: dict[str, list[int]] = {}
    seen: set[str] = set()
    for summary in summaries:
        for message_id, model, reported, counted in summary.drift or ():
            if message_id is not None:
                if message_id in seen:
                    continue  # a turn copied into a resumed session's file
                seen.add(message_id)
            row = totals.setdefault(model, [0, 0, 0])
            row[0] += 1
            row[1] += reported
            row[2] += counted
    rows = [DriftRow(model, *values) for model, values in totals.items()]
    rows.sort(key=lambda row: (-row.turns, row.model))
    if not rows:
        raise CouldNotJudge(
            f"{len(files)} transcript file(s) read, but no two consecutive turns report usage"
        )
    return DriftReport(rows, len(files), sum(summary.unreadable_lines for summary in summaries))


# --- context -----------------------------------------------------------------------------

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

    @property
    def counted(self) -> int:
        return sum(self.slices.values())

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
        if self.priced:
            data["cost_usd"] = self.cost_usd
        return data


def find_session(roots: Sequence[Path], session: str | None) -> Path:
    """The newest main-session transcript, or the one whose name or path matches ``session``."""
    if session and Path(session).expanduser().is_file():
        return Path(session).expanduser()
    files = [(path, status) for path, status in select_files(roots) if not is_subagent_file(path)]
    if session:
        files = [
            (path, status)
            for path, status in files
            if path.stem == session or path.stem.startswith(session) or session in path.stem
        ]
        if not files:
            raise CouldNotJudge(
                f"no transcript named {session!r} under {', '.join(map(str, roots))}"
            )
    if not files:
        raise CouldNotJudge(f"no transcripts found under {', '.join(map(str, roots))}")
    return files[0][0]


def context_of(path: Path, count: Callable[[str], int] | None = None) -> ContextReport:
    """What sat in one session's context at its last turn, slice by slice."""
    count = count or _counter()
    slices = dict.fromkeys(CONTEXT_SLICES, 0)
    images = 0
    last: UsageRecord | None = None
    totals = [0, 0, 0, 0]
    turns = 0
    cost: float | None = 0.0
    priced = True
    main: str | None = None
    catalogue = _model_lookup()
    for record in read_records(path, with_text=True):
        if isinstance(record, BadLine):
            continue
        if main is None and ":" not in record.session:
            main = record.session
        if record.session != main:
            continue  # a subagent's context is not this one
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
                record.kind, "assistant_replies"
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
            turn_cost = _turn_cost(catalogue, record)
            if turn_cost is None:
                priced = False
            elif cost is not None:
                cost += turn_cost
    if last is None and not any(slices.values()):
        raise CouldNotJudge(f"{path}: no conversation or usage found in this transcript")
    model = last.model if last is not None else "unknown"
    window = None
    if catalogue is not None:
        found = catalogue(model)
        window = getattr(found, "window", None) if found is not None else None
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
    )


def _model_lookup() -> Callable[[str], Any] | None:
    try:
        from pytest_toll.core.models import find_model
    except ImportError:  # the catalogue is optional: without it nothing is priced
        return None

    def lookup(name: str) -> Any:
        try:
            return find_model(name)
        except CouldNotJudge:
            return None

    return lookup


def _turn_cost(catalogue: Callable[[str], Any] | None, usage: UsageRecord) -> float | None:
    """USD of one turn, or None when the model or one of the needed prices is unknown."""
    if catalogue is None:
        return None
    model = catalogue(usage.model)
    if model is None:
        return None
    prices = model.prices_for(usage.prompt)
    # Cache writes are priced by their lifetime; the usage block says how many were 1-hour.
    write_5m = getattr(prices, "cache_write_5m", None) or prices.cache_write
    write_1h = getattr(prices, "cache_write_1h", None) or prices.cache_write
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


# --- versus ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CommandToll:
    command: str
    exit_code: int | None
    tokens: int
    characters: int
    seconds: float

    def as_dict(self) -> dict[str, Any]:
        return {
            "command": self.command,
            "exit_code": self.exit_code,
            "tokens": self.tokens,
            "characters": self.characters,
            "seconds": round(self.seconds, 3),
        }


@dataclass(frozen=True)
class VersusReport:
    first: CommandToll
    second: CommandToll

    @property
    def saved(self) -> int:
        """Tokens the second command saves over the first (negative: it costs more)."""
        return self.first.tokens - self.second.tokens

    @property
    def ratio(self) -> float | None:
        return round(self.second.tokens / self.first.tokens, 4) if self.first.tokens else None

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "versus",
            "tokenizer": TOKENIZER_NAME,
            "a": self.first.as_dict(),
            "b": self.second.as_dict(),
            "saved": self.saved,
            "ratio": self.ratio,
        }


def run_command(command: str, *, timeout: float, allow_failure: bool) -> CommandToll:
    """Run one command (argv via shlex, never a shell) and count what it prints.

    stdout and stderr are counted together, as an agent's shell tool returns both. A command
    that fails, cannot start or times out is CouldNotJudge unless failures are allowed.
    """
    import subprocess

    try:
        argv = shlex.split(command)
    except ValueError as error:
        raise CouldNotJudge(f"{command!r}: cannot split into arguments: {error}") from None
    if not argv:
        raise CouldNotJudge("an empty command cannot be measured")
    started = time.monotonic()
    try:
        finished = subprocess.run(argv, capture_output=True, timeout=timeout, check=False)
    except FileNotFoundError:
        raise CouldNotJudge(f"{command!r}: {argv[0]}: command not found") from None
    except PermissionError:
        raise CouldNotJudge(f"{command!r}: {argv[0]}: permission denied") from None
    except subprocess.TimeoutExpired:
        raise CouldNotJudge(f"{command!r}: still running after {timeout:g} s, stopped") from None
    seconds = time.monotonic() - started
    if finished.returncode != 0 and not allow_failure:
        raise CouldNotJudge(
            f"{command!r} exited with {finished.returncode}; its output is not a fair comparison "
            "(pass --allow-failure to count it anyway)"
        )
    output = (finished.stdout + finished.stderr).decode("utf-8", errors="replace")
    return CommandToll(command, finished.returncode, _counter()(output), len(output), seconds)


def versus(
    first: str, second: str, *, timeout: float = 120.0, allow_failure: bool = False
) -> VersusReport:
    return VersusReport(
        run_command(first, timeout=timeout, allow_failure=allow_failure),
        run_command(second, timeout=timeout, allow_failure=allow_failure),
    )
