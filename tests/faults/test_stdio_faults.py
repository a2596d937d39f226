"""Hostile stdio servers, as real processes: every one ends at the deadline, in bounded
memory, with one clean line and nothing left running."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.faults.hostile import (
    DEADLINE,
    NO_DEADLINE,
    TOKEN,
    assert_could_not_judge,
    assert_no_leftover,
    run_toll,
    write_server,
)

# A grandchild that leaves the process group (setsid) and keeps the server's stdout open;
# the server itself then exits without answering.
SETSID_GRANDCHILD = """
child = subprocess.Popen(
    [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(60)"],
    stdout=sys.stdout, stderr=subprocess.DEVNULL,
)
note(child.pid)
sys.exit(0)
"""

# The same grandchild, but the server stays and never answers.
SETSID_AND_SILENT = """
child = subprocess.Popen(
    [sys.executable, "-c", "import os, time; os.setsid(); time.sleep(60)"],
    stdout=sys.stdout, stderr=sys.stderr,
)
note(child.pid)
time.sleep(60)
"""

ENDLESS_STDOUT_LINE = """
chunk = b"x" * (1 << 20)
while True:
    sys.stdout.buffer.write(chunk)
"""

ENDLESS_STDERR = """
chunk = b"e" * (1 << 20)
for _ in range(200):
    sys.stderr.buffer.write(chunk)
    sys.stderr.buffer.flush()
time.sleep(60)
"""

NEVER_READS_STDIN_PINGS_FOREVER = """
for n in range(10**9):
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": n, "method": "ping"}) + "\\n")
    sys.stdout.flush()
"""

DEEP_ANSWER = """
sys.stdin.readline()
sys.stdout.write('{"jsonrpc": "2.0", "id": 1, "result": ' + "[" * 100000 + "]" * 100000 + "}\\n")
sys.stdout.flush()
time.sleep(60)
"""

ECHOES_ITS_ENV = """
sys.stdin.readline()
answer = {"jsonrpc": "2.0", "id": 1,
          "error": {"code": -32000, "message": "bad key " + os.environ["API_TOKEN"]}}
sys.stdout.write(json.dumps(answer) + "\\n")
sys.stdout.flush()
"""

# Each case with the deadline it runs under: the silent servers must hit it (their message
# names the deadline, and their whole process group must be gone after); the others get one
# no load can reach before their own fault (an exit, a read limit).
CASES: dict[str, tuple[str, float, str]] = {
    "setsid grandchild holds stdout, server exits": (
        SETSID_GRANDCHILD,
        NO_DEADLINE,
        "exited with code 0",
    ),
    "setsid grandchild holds stdout, server silent": (SETSID_AND_SILENT, DEADLINE, "no answer to"),
    "stdout without a newline": (ENDLESS_STDOUT_LINE, NO_DEADLINE, "read limit"),
    "stderr without a newline, never answers": (ENDLESS_STDERR, DEADLINE, "no answer to"),
    "never reads stdin, pings forever": (
        NEVER_READS_STDIN_PINGS_FOREVER,
        DEADLINE,
        "stopped reading its stdin; gave up at the 2s",
    ),
    "an answer nested 100,000 deep": (DEEP_ANSWER, DEADLINE, "no answer to initialize"),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_stdio_server_ends_at_the_deadline(
    case: str, tmp_path: Path, stdio_pump: str
) -> None:
    body, timeout, expected = CASES[case]
    argv, pids = write_server(tmp_path, "server", body)
    outcome = run_toll("weigh", "--timeout", f"{timeout:g}", "--", *argv, pump=stdio_pump)
    try:
        if case.startswith("stderr"):
            # The stderr tail rides along (bounded): the first line is the verdict.
            assert outcome.code == 2
            first = outcome.stderr.splitlines()[0]
            assert first.startswith("toll: error: ") and expected in first
            assert len(outcome.stderr) < 10_000
        else:
            assert_could_not_judge(outcome, expected)
    finally:
        # The mechanism, not the wall time: every process the server started is gone.
        assert_no_leftover(pids)


def test_a_setsid_grandchild_is_found_and_named(tmp_path: Path, stdio_pump: str) -> None:
    argv, pids = write_server(tmp_path, "server", SETSID_GRANDCHILD)
    outcome = run_toll("weigh", "--timeout", f"{NO_DEADLINE:g}", "--", *argv, pump=stdio_pump)
    try:
        assert_could_not_judge(outcome, "outside its process group")
    finally:
        assert_no_leftover(pids)


def test_a_server_echoing_its_secret_env_is_scrubbed(tmp_path: Path, stdio_pump: str) -> None:
    argv, pids = write_server(tmp_path, "server", ECHOES_ITS_ENV)
    outcome = run_toll(
        "weigh", "--timeout", "10", "--env", f"API_TOKEN={TOKEN}", "--", *argv, pump=stdio_pump
    )
    try:
        assert outcome.code == 2
        assert "bad key [secret]" in outcome.stderr
        assert TOKEN not in outcome.output
    finally:
        assert_no_leftover(pids)
