"""Shapes and targets: what kind of call a tool call is, and what exactly it fetched.

A call's *shape* groups it with its kind (``$ git log``, ``Read``, ``mcp__srv__tool``): a shell
command becomes ``$ verb`` with wrappers (``sudo``, ``timeout``, ``uv run``) and preludes
(``cd x &&``) stripped. Its *target* is what it fetched (a path, a command line, a query),
normalised so that two identical fetches compare equal; repeats are found on targets.
"""

from __future__ import annotations

import functools
import json
import posixpath
import re
import shlex
from collections.abc import Mapping
from typing import Any

from pytest_toll.transcripts.records import CallRecord

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


# Without quotes or backslashes, shlex's words (whitespace split, runs of ; & | their own
# word) are this regex's matches: tests/transcripts/test_shapes.py proves it on random text.
_PLAIN_WORDS = re.compile(r"[;&|]+|[^ \t\r;&|]+")
_QUOTING = frozenset("'\"\\")


def _split_command(command: str) -> list[str]:
    if _QUOTING.isdisjoint(command):
        return _PLAIN_WORDS.findall(command)
    return _shlex_words(command)


def _shlex_words(command: str) -> list[str]:
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


#: The tools that run a shell command, shaped like Claude Code's Bash: Codex's, and Gemini
#: CLI's and Qwen's, Antigravity's (``CommandLine``), Cline's, OpenHands'.
SHELL_TOOLS = frozenset(
    {"bash", "shell", "shell_command", "exec_command", "local_shell", "container.exec",
     "run_shell_command", "run_command", "execute_command", "execute_bash"}
)  # fmt: skip


def command_of(tool: str, arguments: Mapping[str, Any]) -> str | None:
    """The shell command of a Bash-like call (Claude's Bash, Codex's and the other agents'
    shell tools), or None."""
    if tool.lower() not in SHELL_TOOLS:
        return None
    value = arguments.get("command", arguments.get("cmd", arguments.get("CommandLine")))
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


#: Tools that change files: what is read again after one of them is not a repeat.
MUTATING_TOOLS = frozenset({"Edit", "Write", "MultiEdit", "NotebookEdit", "apply_patch"})
# Calls that change nothing worth re-reading; never a repeat.
_NOT_FETCHES = MUTATING_TOOLS | {"TodoWrite", "Task", "Agent", "ExitPlanMode", "update_plan"}


def normal_path(value: object, cwd: str | None) -> str | None:
    if not isinstance(value, str) or not value:
        return None
    return _normal_path(value, cwd)


@functools.lru_cache(maxsize=8192)  # agents read and edit the same files again and again
def _normal_path(value: str, cwd: str | None) -> str:
    if cwd and not posixpath.isabs(value):
        value = posixpath.join(cwd, value)
    return posixpath.normpath(value)


def shape_and_target(call: CallRecord) -> tuple[str, str | None]:
    """:func:`shape_of` and :func:`target_of` of one call, its command found once."""
    command = command_of(call.tool, call.input)
    shape = shape_of_command(command) if command is not None else call.tool
    return shape, _target(call, command)


def target_of(call: CallRecord) -> str | None:
    """What a call fetched, normalised so that two identical fetches compare equal."""
    return _target(call, command_of(call.tool, call.input))


def _target(call: CallRecord, command: str | None) -> str | None:
    if call.tool in _NOT_FETCHES:
        return None
    arguments = call.input
    if command is not None:
        return " ".join(command.split())
    path = normal_path(arguments.get("file_path", arguments.get("notebook_path")), call.cwd)
    if call.tool in ("Read", "NotebookRead") and path:
        offset, limit = arguments.get("offset"), arguments.get("limit")
        return (
            path if offset is None and limit is None else f"{path} [{offset or 1}+{limit or '…'}]"
        )
    if call.tool in ("Grep", "Glob"):
        scope = normal_path(arguments.get("path"), call.cwd) or call.cwd or "."
        extras = [
            f"{key}={arguments[key]}" for key in ("glob", "type", "output_mode") if key in arguments
        ]
        return " ".join([str(arguments.get("pattern", "")), "in", scope, *extras])
    if isinstance(arguments.get("url"), str):
        return str(arguments["url"])
    if isinstance(arguments.get("query"), str):
        return str(arguments["query"])
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
