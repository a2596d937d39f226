"""Hostile inputs: devices, FIFOs, oversized and deeply nested files, impossible timeouts.
Each is exit 2 with one clean line, in bounded memory, never a hang or a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.faults.hostile import assert_could_not_judge, run_toll

DEEP = "[" * 100_000 + "]" * 100_000
OVER_32_MIB = 32 * 1024 * 1024 + 1


def test_count_refuses_dev_zero() -> None:
    outcome = run_toll("count", "/dev/zero")
    assert_could_not_judge(outcome, "/dev/zero: not a regular file")


def test_count_refuses_a_fifo_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    outcome = run_toll("count", str(fifo))
    assert_could_not_judge(outcome, "pipe: not a regular file")


def test_weigh_refuses_a_fifo_as_tools_file(tmp_path: Path) -> None:
    fifo = tmp_path / "tools.json"
    os.mkfifo(fifo)
    outcome = run_toll("weigh", "--tools", str(fifo))
    assert_could_not_judge(outcome, "tools.json: not a regular file")


def test_count_stdin_past_the_limit_is_cut_and_said() -> None:
    outcome = run_toll("count", "-", stdin=b"a" * OVER_32_MIB)
    assert_could_not_judge(outcome, "<stdin>: larger than the 32 MiB read limit")


def test_a_tools_file_past_the_limit_is_not_read(tmp_path: Path) -> None:
    tools = tmp_path / "tools.json"
    with tools.open("wb") as file:
        file.truncate(10 * 1024**3)  # 10 GiB, sparse: refused by its size, never read
    outcome = run_toll("weigh", "--tools", str(tools))
    assert_could_not_judge(outcome, "tools.json: larger than the 32 MiB read limit")


@pytest.mark.parametrize("suffix", [".json", ".yaml"])
def test_deeply_nested_tools_file(tmp_path: Path, suffix: str) -> None:
    tools = tmp_path / f"tools{suffix}"
    tools.write_text(DEEP)
    outcome = run_toll("weigh", "--tools", str(tools))
    assert_could_not_judge(outcome, f"tools{suffix}: ", "not read")


def test_yaml_alias_bomb_in_tools_file(tmp_path: Path) -> None:
    lines = ['a0: &a0 ["x", "x", "x", "x", "x", "x", "x", "x", "x", "x"]']
    lines += [f"a{n}: &a{n} [{', '.join(f'*a{n - 1}' for _ in range(10))}]" for n in range(1, 9)]
    tools = tmp_path / "tools.yaml"
    tools.write_text("\n".join(lines) + "\ntools: *a8\n")
    outcome = run_toll("weigh", "--tools", str(tools))
    # The Parsing door refuses it before it is built: by what its aliases would add.
    assert_could_not_judge(outcome, "tools.yaml: aliases expand to more than")


def test_deeply_nested_messages(tmp_path: Path) -> None:
    messages = tmp_path / "messages.json"
    messages.write_text(DEEP)
    outcome = run_toll("measure", "--model", "claude-sonnet-5", "--messages", str(messages))
    assert_could_not_judge(outcome, "messages.json: nests deeper than 200 levels")


def test_deeply_nested_diff_report(tmp_path: Path) -> None:
    report = tmp_path / "before.json"
    report.write_text('{"kind": "tools", "tools": ' + DEEP + "}")
    outcome = run_toll("diff", str(report), str(report))
    assert_could_not_judge(outcome, "before.json: nests deeper than 200 levels")


@pytest.mark.parametrize("timeout", ["inf", "1e300", "nan", "-1", "0"])
def test_impossible_timeouts_are_usage_errors(timeout: str) -> None:
    outcome = run_toll("weigh", "--timeout", timeout, "--", "true")
    assert_could_not_judge(outcome, "timeout must be a positive number of seconds up to 86400")


def test_a_skill_reference_past_the_limit_fails_the_skill(tmp_path: Path) -> None:
    skill = tmp_path / "big"
    (skill / "references").mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: big\ndescription: A skill with a huge reference.\n---\n"
        "See [the guide](references/guide.md).\n"
    )
    with (skill / "references" / "guide.md").open("wb") as file:
        file.write(b"word " * (17 * 1024 * 1024 // 5))
    outcome = run_toll("skills", str(skill))
    assert_could_not_judge(outcome, "guide.md: larger than the 16 MiB read limit")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["weigh", "--url", "http://[::1/"], "http://[::1/: not a valid URL"),
        (
            ["measure", "--model", "claude-sonnet-5", "--server", 'python "x'],
            "--server: cannot split the command: No closing quotation",
        ),
    ],
)
def test_malformed_sources_are_usage_errors(argv: list[str], message: str) -> None:
    assert_could_not_judge(run_toll(*argv), message)
