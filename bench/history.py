"""A synthetic agent history for the transcript benchmarks: Claude Code and Codex CLI.

    python bench/history.py OUT --megabytes 100

The mix follows real histories: most lines carry no tool result (thinking with its signature,
assistant text, user prompts, hook progress, file-history snapshots, turn timings; Codex
reasoning with its encrypted content, agent messages, token counts), Claude Code writes one
line per content block with the message's usage repeated and a ``toolUseResult`` copy beside
each result, result sizes run from a one-line edit confirmation to a 400-line file, a tenth of
the sessions start subagents (their own files under ``<session>/subagents/``), and some
sessions are resumed: the new file starts with a copy of the earlier one's messages.

Every tool-result text the scan must count is also written, one JSON string per line, to
``texts_out``: the floor's counter counts exactly those.
"""

from __future__ import annotations

import argparse
import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

SYLLABLES = "ka ri to mo na se lu vi po de an ex or im us et al in on ra".split()
IDENTIFIERS = [
    "".join(random.Random(i).choice(SYLLABLES) for _ in range(1 + i % 3)) for i in range(400)
]
PROSE = (
    "the request failed because the configuration file was missing a required field so the "
    "service fell back to its defaults and logged a warning for each retry of the handler"
).split()


def _prose(rng: random.Random, low: int, high: int) -> str:
    return " ".join(rng.choice(PROSE) for _ in range(rng.randint(low, high)))


def _code(rng: random.Random, lines: int) -> str:
    out = []
    for index in range(lines):
        name, other = rng.choice(IDENTIFIERS), rng.choice(IDENTIFIERS)
        kind = index % 5
        if kind == 0:
            out.append(f"def {name}_{other}({other}, limit={rng.randint(0, 999)}):")
        elif kind == 1:
            out.append(f"    {name} = {other}.get('{rng.choice(IDENTIFIERS)}', {rng.random():.4f})")
        elif kind == 2:
            out.append(f"    if {name} > {rng.randint(0, 99999)}: return {other}[{index % 9}]")
        elif kind == 3:
            out.append(f"    # {_prose(rng, 3, 12)}")
        else:
            out.append("")
    return "\n".join(f"{number:>6}\t{line}" for number, line in enumerate(out, 1))


def _log(rng: random.Random, lines: int) -> str:
    return "\n".join(f"{rng.getrandbits(28):07x} {_prose(rng, 4, 10)}" for _ in range(lines))


def _grep(rng: random.Random, lines: int) -> str:
    return "\n".join(
        f"src/{rng.choice(IDENTIFIERS)}/{rng.choice(IDENTIFIERS)}.py:{rng.randint(1, 2000)}:"
        f"    {rng.choice(IDENTIFIERS)}({rng.choice(IDENTIFIERS)})"
        for _ in range(lines)
    )


def _tests(rng: random.Random, lines: int) -> str:
    out = [
        f"tests/test_{rng.choice(IDENTIFIERS)}.py::test_{rng.choice(IDENTIFIERS)} PASSED "
        f"[{i % 100:>3}%]"
        for i in range(lines)
    ]
    out.append(f"===== {lines} passed in {rng.random() * 20:.2f}s =====")
    return "\n".join(out)


Call = tuple[str, dict[str, Any], str, bool]


def tool_call(rng: random.Random, cwd: str) -> Call:
    """A (tool, input, result text, is_error) drawn from a coding agent's usual mix."""
    roll = rng.random()
    path = f"{cwd}/src/{rng.choice(IDENTIFIERS)}/{rng.choice(IDENTIFIERS[:60])}.py"
    if roll < 0.30:
        # Most reads are a few dozen lines; some are whole files.
        lines = rng.randint(20, 400) if rng.random() < 0.12 else rng.randint(5, 60)
        return "Read", {"file_path": path}, _code(rng, lines), False
    if roll < 0.42:
        command = f"cd {cwd} && git log --oneline -n {rng.randint(5, 40)}"
        return "Bash", {"command": command}, _log(rng, rng.randint(5, 40)), False
    if roll < 0.50:
        command = "timeout 300 python -m pytest -q"
        return "Bash", {"command": command}, _tests(rng, rng.randint(10, 120)), False
    if roll < 0.62:
        arguments = {"pattern": rng.choice(IDENTIFIERS), "path": cwd}
        return "Grep", arguments, _grep(rng, rng.randint(1, 60)), False
    if roll < 0.68:
        listing = "\n".join(rng.choice(IDENTIFIERS) + ".py" for _ in range(rng.randint(3, 40)))
        return "Bash", {"command": f"ls -la {cwd}/src"}, listing, False
    if roll < 0.82:
        arguments = {"file_path": path, "old_string": _prose(rng, 2, 8), "new_string": "b"}
        return "Edit", arguments, f"The file {path} has been updated.", False
    if roll < 0.87:
        command = f"sudo env X=1 make {rng.choice(IDENTIFIERS)}"
        error = f"make: *** No rule to make target '{rng.choice(IDENTIFIERS)}'.  Stop."
        return "Bash", {"command": command}, error, True
    if roll < 0.90:
        query = {"query": _prose(rng, 3, 5)}
        return "mcp__docs__search", query, _prose(rng, 50, 500), False
    if roll < 0.95:
        todos = [{"content": _prose(rng, 3, 8), "status": "pending"} for _ in range(4)]
        return "TodoWrite", {"todos": todos}, "Todos have been modified successfully.", False
    return "Bash", {"command": f"mkdir -p {cwd}/build"}, "", False


def _dump(line: dict[str, Any]) -> str:
    return json.dumps(line, separators=(",", ":"), ensure_ascii=False) + "\n"


class _Writer:
    """Counts what it writes; the result texts go to the floor's list."""

    def __init__(self, out: TextIO, texts: TextIO) -> None:
        self.out, self.texts, self.bytes = out, texts, 0

    def line(self, value: dict[str, Any]) -> None:
        text = _dump(value)
        self.out.write(text)
        self.bytes += len(text.encode())

    def result_text(self, text: str) -> None:
        self.texts.write(json.dumps(text) + "\n")


def _claude_turns(
    rng: random.Random, session: str, cwd: str, tag: str, budget: int, agent: str | None = None
) -> list[dict[str, Any]]:
    """The lines of one Claude Code session (main or subagent) of about ``budget`` bytes."""
    lines: list[dict[str, Any]] = []
    base: dict[str, Any] = {
        "parentUuid": None,
        "isSidechain": agent is not None,
        "userType": "external",
        "cwd": cwd,
        "sessionId": session,
        "version": "2.1.0",
        "gitBranch": "main",
    }
    if agent is not None:
        base["agentId"] = agent
    size, turn, prompt = 0, 0, 14_000
    while size < budget:
        turn += 1
        if turn % 6 == 1:
            lines.append(
                {
                    **base,
                    "type": "user",
                    "uuid": f"{tag}-p{turn}",
                    "message": {"role": "user", "content": _prose(rng, 5, 60)},
                }
            )
        if turn % 9 == 1:
            snapshot = {
                f"{cwd}/src/{name}.py": {"backupFileName": None} for name in IDENTIFIERS[:8]
            }
            lines.append(
                {
                    "type": "file-history-snapshot",
                    "messageId": f"{tag}-{turn}",
                    "snapshot": snapshot,
                }
            )
        usage = {
            "input_tokens": 3,
            "cache_creation_input_tokens": rng.randint(100, 3000),
            "cache_read_input_tokens": prompt,
            "output_tokens": rng.randint(20, 900),
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 0},
            "service_tier": "standard",
        }
        message_id = f"msg_{tag}_{turn}"
        calls = [tool_call(rng, cwd) for _ in range(rng.choice((1, 1, 1, 2, 3)))]
        blocks: list[dict[str, Any]] = [
            {
                "type": "thinking",
                "thinking": _prose(rng, 20, 400),
                "signature": "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/", k=2000)),
            },
            {"type": "text", "text": _prose(rng, 5, 40)},
        ]
        blocks += [
            {"type": "tool_use", "id": f"toolu_{tag}_{turn}_{i}", "name": tool, "input": arguments}
            for i, (tool, arguments, _, _) in enumerate(calls)
        ]
        for index, block in enumerate(blocks):
            message = {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [block],
                "stop_reason": None,
                "usage": usage,
            }
            lines.append(
                {**base, "type": "assistant", "uuid": f"{tag}-a{turn}-{index}", "message": message}
            )
        for index, (tool, _, result, is_error) in enumerate(calls):
            call_id = f"toolu_{tag}_{turn}_{index}"
            for hook in range(rng.randint(1, 3)):
                lines.append(
                    {
                        **base,
                        "type": "progress",
                        "uuid": f"{tag}-h{turn}-{index}-{hook}",
                        "toolUseID": call_id,
                        "data": {"type": "hook_progress", "hookName": f"PostToolUse:{tool}"},
                    }
                )
            block = {
                "type": "tool_result",
                "tool_use_id": call_id,
                "content": result,
                "is_error": is_error,
            }
            lines.append(
                {
                    **base,
                    "type": "user",
                    "uuid": f"{tag}-r{turn}-{index}",
                    "message": {"role": "user", "content": [block]},
                    "toolUseResult": {"stdout": result, "stderr": "", "interrupted": False},
                }
            )
            prompt += len(result) // 4
        lines.append(
            {
                **base,
                "type": "system",
                "subtype": "turn_duration",
                "durationMs": rng.randint(1, 90_000),
            }
        )
        size += sum(len(_dump(line)) for line in lines[-(len(blocks) + 3 * len(calls) + 3) :])
    return lines


def _results_of(lines: list[dict[str, Any]]) -> list[str]:
    return [
        block["content"]
        for line in lines
        if line.get("type") == "user" and isinstance(line["message"]["content"], list)
        for block in line["message"]["content"]
        if block.get("type") == "tool_result"
    ]


def _codex_session(rng: random.Random, number: int, budget: int, write: _Writer) -> None:
    session = f"0199{number:04x}-0000-7000-8000-{rng.getrandbits(48):012x}"
    stamp = "2026-01-05T10:00:00.000Z"
    write.line(
        {
            "timestamp": stamp,
            "type": "session_meta",
            "payload": {"id": session, "cwd": "/home/dev/api", "cli_version": "0.80.0"},
        }
    )
    total = 0
    start = write.bytes
    turn = 0
    while write.bytes - start < budget:
        turn += 1
        write.line(
            {"timestamp": stamp, "type": "turn_context", "payload": {"model": "gpt-5-codex"}}
        )
        if turn % 5 == 1:
            write.line(
                {
                    "type": "response_item",
                    "payload": {
                        "type": "message",
                        "role": "user",
                        "content": [{"type": "input_text", "text": _prose(rng, 5, 60)}],
                    },
                }
            )
        encrypted = "".join(rng.choices("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdef0123456789", k=1500))
        write.line(
            {
                "type": "response_item",
                "payload": {
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": _prose(rng, 10, 60)}],
                    "encrypted_content": encrypted,
                },
            }
        )
        write.line({"type": "event_msg", "payload": {"type": "agent_reasoning", "text": "…"}})
        _, arguments, result, failed = tool_call(rng, "/home/dev/api")
        command = arguments.get("command") or f"cat {arguments.get('file_path', 'README.md')}"
        call_id = f"call_{number}_{turn}"
        write.line(
            {
                "type": "response_item",
                "payload": {
                    "type": "function_call",
                    "name": "shell",
                    "arguments": json.dumps({"command": ["bash", "-lc", command]}),
                    "call_id": call_id,
                },
            }
        )
        output = f"Exit code: {1 if failed else 0}\nWall time: 0.2 seconds\nOutput:\n{result}"
        write.line(
            {
                "type": "response_item",
                "payload": {"type": "function_call_output", "call_id": call_id, "output": output},
            }
        )
        write.result_text(output)
        total += len(output) // 4 + 200
        usage = {"input_tokens": 9000 + total, "cached_input_tokens": 8000, "output_tokens": 300}
        info = {"total_token_usage": {"total": total}, "last_token_usage": usage}
        write.line({"type": "event_msg", "payload": {"type": "token_count", "info": info}})
        write.line(
            {
                "type": "event_msg",
                "payload": {"type": "agent_message", "message": _prose(rng, 5, 40)},
            }
        )


def generate(
    root: Path,
    megabytes: float,
    texts_out: Path,
    seed: int = 11,
    session_megabytes: float = 2.0,
    first_session: int = 1,
) -> tuple[int, int]:
    """Write the history under ``root`` (a ``claude`` and a ``codex`` folder) and the result
    texts to ``texts_out``; sessions average ``session_megabytes``. Returns (bytes, files).

    Sessions are numbered from ``first_session`` (every id and file name holds the number):
    several processes given ranges apart write one bigger history side by side."""
    rng = random.Random(seed)
    root.mkdir(parents=True, exist_ok=True)
    target = int(megabytes * 1_000_000)
    session_bytes = int(session_megabytes * 1_000_000)
    written = files = 0
    resumable: list[tuple[Path, str, list[dict[str, Any]]]] = []
    with texts_out.open("w", encoding="utf-8") as texts:
        number = first_session - 1
        while written < target:
            number += 1
            budget = int(session_bytes * rng.uniform(0.1, 1.9))
            if number % 5 == 0:  # a fifth of the sessions are Codex rollouts
                folder = root / "codex" / "2026" / "01" / f"{number % 28 + 1:02d}"
                folder.mkdir(parents=True, exist_ok=True)
                path = folder / f"rollout-2026-01-05T10-00-00-{number:06d}.jsonl"
                with path.open("w", encoding="utf-8") as out:
                    writer = _Writer(out, texts)
                    _codex_session(rng, number, budget, writer)
                written, files = written + writer.bytes, files + 1
                continue
            project = root / "claude" / f"-home-dev-project{number % 7}"
            project.mkdir(parents=True, exist_ok=True)
            cwd = f"/home/dev/project{number % 7}"
            session = f"{number:08d}-0000-4000-8000-{rng.getrandbits(48):012x}"
            lines = _claude_turns(rng, session, cwd, f"s{number}", budget)
            if resumable and number % 7 == 0:
                # A resumed session: the earlier file's messages, copied under the new id.
                _, _, earlier = resumable.pop()
                lines = [
                    {**line, "sessionId": session} if "sessionId" in line else line
                    for line in earlier
                ] + lines
            emitted: list[tuple[Path, list[dict[str, Any]]]] = [
                (project / f"{session}.jsonl", lines)
            ]
            if number % 10 == 3:
                for agent_number in range(rng.randint(1, 3)):
                    agent = f"a{number}x{agent_number}"
                    agent_lines = _claude_turns(
                        rng, session, cwd, f"s{number}{agent}", budget // 4, agent
                    )
                    emitted.append(
                        (project / session / "subagents" / f"agent-{agent}.jsonl", agent_lines)
                    )
            for path, file_lines in emitted:
                path.parent.mkdir(parents=True, exist_ok=True)
                with path.open("w", encoding="utf-8") as out:
                    writer = _Writer(out, texts)
                    for line in file_lines:
                        writer.line(line)
                    for text in _results_of(file_lines):
                        writer.result_text(text)
                written, files = written + writer.bytes, files + 1
            resumable.append((project, session, lines[: len(lines) // 2]))
            resumable = resumable[-3:]
    return written, files


def main(argv: list[str] | None = None, echo: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--megabytes", type=float, default=100.0)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument(
        "--first-session",
        type=int,
        default=1,
        help="number sessions from here (texts go to texts-N.jsonl when not 1)",
    )
    args = parser.parse_args(argv)
    texts = "texts.jsonl" if args.first_session == 1 else f"texts-{args.first_session}.jsonl"
    size, files = generate(
        args.out, args.megabytes, args.out / texts, args.seed, first_session=args.first_session
    )
    echo(f"{size / 1e6:.0f} MB in {files} files under {args.out}")


if __name__ == "__main__":
    main()
