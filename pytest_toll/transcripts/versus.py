"""Versus: which of two shell commands puts fewer tokens into an agent's context.

It reads no transcripts, yet it belongs to the transcripts job: a toll is what one tool call's
result adds to the context, and ``toll versus`` measures that toll *before* an agent pays it —
for the ``$ verb`` shapes ``toll scan`` ranks, in the same unit (o200k of stdout + stderr, as
an agent's shell tool returns both). It answers the question a heavy shape in the toll table
raises: would another command do the job for less?
"""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.limits import VERSUS_COMMAND_TIMEOUT
from pytest_toll.core.tokens import TOKENIZER_NAME
from pytest_toll.transcripts.counting import text_counter


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
        """B's tokens over A's, to four significant digits (a tiny ratio keeps its digits)."""
        if not self.first.tokens:
            return None
        return float(f"{self.second.tokens / self.first.tokens:.4g}")

    def ratio_text(self) -> str:
        """The ratio as a person reads it; never "0.00×" for a B that is small but not empty."""
        if not self.first.tokens:
            return "A prints nothing" if self.second.tokens else "both print nothing"
        if self.second.tokens == 0:
            return "B prints nothing"
        ratio = self.second.tokens / self.first.tokens
        if ratio < 0.01:
            return f"A is {self.first.tokens / self.second.tokens:,.0f}× B"
        return f"B is {ratio:,.2f}× A"

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
    return CommandToll(command, finished.returncode, text_counter()(output), len(output), seconds)


def versus(
    first: str, second: str, *, timeout: float = VERSUS_COMMAND_TIMEOUT, allow_failure: bool = False
) -> VersusReport:
    return VersusReport(
        run_command(first, timeout=timeout, allow_failure=allow_failure),
        run_command(second, timeout=timeout, allow_failure=allow_failure),
    )
