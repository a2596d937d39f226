"""What the pytest plugin costs a test suite, against the same suite without it.

    python bench/plugin.py [--tests 500] [--rounds 7]

A generated suite of N trivial tests runs in fresh processes (plugin autoload off, so only
what is named loads), alternating:

- baseline: ``pytest`` with no pytest-toll at all;
- plugin: ``pytest -p pytest_toll.plugin`` without ``--toll`` (goal: ratio <= 1.02 — the
  option group, marker and fixture only, no tokenizer, no ledger read);
- gate: ``pytest -p pytest_toll.plugin --toll`` on a 20-entry ledger (10 servers from tools
  files, 5 skills, 5 pinned tests measuring text), reported as a ratio to the baseline and
  as milliseconds per ledger entry.

Runs use cached bytecode, as an installed package does (PYTHONDONTWRITEBYTECODE is dropped
for the child processes). Each run is timed by the CPU seconds its process used (wall time on a shared machine mostly
measures the neighbours). The overhead ratio comes from the median difference of paired,
alternating runs; best-of and median ratios are printed beside it, and a profiled
in-process run gives the share of time spent in pytest_toll's own functions.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TEST_FILE = """
import pytest

@pytest.mark.parametrize("n", range({count}))
def test_value(n):
    assert n * 2 == n + n
"""

MEASURING_TEST = """
def test_prompt_{n}(toll):
    toll.text("system", "You are assistant number {n}. " * {size})
"""


def make_suite(root: Path, tests: int) -> None:
    """``tests`` trivial tests in files of 50."""
    (root / "tests").mkdir()
    remaining = tests
    number = 0
    while remaining > 0:
        count = min(50, remaining)
        (root / "tests" / f"test_generated_{number}.py").write_text(TEST_FILE.format(count=count))
        remaining -= count
        number += 1
    (root / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")


def make_ledger(root: Path) -> int:
    """A 20-entry ledger beside the suite; returns the number of entries."""
    lines = ["version: 1", "servers:"]
    for server in range(10):
        tools = [
            {
                "name": f"tool_{server}_{index}",
                "description": f"Tool {index} of server {server}: reads records and returns them. "
                * 3,
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "id": {"type": "string", "description": "record id"},
                        "limit": {"type": "integer", "description": "most records to return"},
                    },
                },
            }
            for index in range(12)
        ]
        (root / f"tools_{server}.json").write_text(json.dumps(tools))
        lines.append(f"  server{server}: {{tools_file: tools_{server}.json}}")
    lines.append("skills:")
    for skill in range(5):
        folder = root / "skills" / f"skill-{skill}"
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{skill}\ndescription: Summarise reports of kind {skill}. "
            "Use when the user asks for a summary of a report.\n---\n\n"
            + "Read the report, then write five bullet points.\n"
            * 20
        )
        lines.append(f"  skill-{skill}: {{path: skills/skill-{skill}}}")
    lines.append("tests:")
    measuring = []
    for n in range(5):
        measuring.append(MEASURING_TEST.format(n=n, size=20 + n))
        lines.append(f"  tests/test_measuring.py::test_prompt_{n}: {{}}")
    (root / "tests" / "test_measuring.py").write_text("".join(measuring))
    (root / "toll.yaml").write_text("\n".join(lines) + "\n")
    return 20


def bytecode_cached_environ() -> dict[str, str]:
    """The environment without PYTHONDONTWRITEBYTECODE.

    An installed package runs from cached bytecode; with that variable set (as on some CI
    images) every run would recompile pytest_toll's modules and time the compiler instead.
    """
    return {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def run(root: Path, *args: str) -> float:
    """The CPU seconds (user + system) of one pytest process.

    CPU time rather than wall time: on a shared machine the wall clock mostly measures the
    neighbours, while the CPU a run burns is its own.
    """
    env = {**bytecode_cached_environ(), "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stdout}\n{done.stderr}")
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


PROFILE_SCRIPT = """
import contextlib, cProfile, io, pstats, sys
import pytest
args = ["-q", "-p", "no:cacheprovider", "-p", "pytest_toll.plugin"]
with contextlib.redirect_stdout(io.StringIO()):
    pytest.main(args)  # warm: imports and the test modules
profile = cProfile.Profile()
with contextlib.redirect_stdout(io.StringIO()):
    profile.enable()
    pytest.main(args)
    profile.disable()
stats = pstats.Stats(profile)
own = sum(row[2] for key, row in stats.stats.items() if "pytest_toll" in key[0])
print(own / stats.total_tt)
"""


def profiled_share(root: Path) -> float:
    """The share of a profiled in-process run spent inside pytest_toll's own functions.

    A second, noise-free view of the overhead: the wall-clock ratio on a busy machine
    swings by more than the 2% it is meant to resolve.
    """
    env = {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
    done = subprocess.run(
        [sys.executable, "-c", PROFILE_SCRIPT], cwd=root, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"profiling failed:\n{done.stdout}\n{done.stderr}")
    return float(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        plain = Path(directory) / "plain"
        plain.mkdir()
        make_suite(plain, args.tests)
        gated = Path(directory) / "gated"
        gated.mkdir()
        make_suite(gated, args.tests)
        entries = make_ledger(gated)
        # Pin the gated suite once, so the timed runs judge rather than seed.
        run(gated, "-p", "pytest_toll.plugin", "--toll", "--toll-update")
        configurations = {
            "baseline (no pytest-toll)": (plain, ()),
            "plugin, no --toll": (plain, ("-p", "pytest_toll.plugin")),
            "baseline, gated suite": (gated, ("-k", "not test_prompt")),
            f"--toll, {entries}-entry ledger": (gated, ("-p", "pytest_toll.plugin", "--toll")),
        }
        share = profiled_share(plain)
        times: dict[str, list[float]] = {name: [] for name in configurations}
        for _ in range(args.rounds):
            for name, (root, extra) in configurations.items():
                times[name].append(run(root, *extra))
    best = {name: min(values) for name, values in times.items()}
    median = {name: statistics.median(values) for name, values in times.items()}
    names = list(configurations)
    print(f"{args.tests} trivial tests, {args.rounds} rounds, fresh process per run, CPU seconds")
    for name in names:
        print(f"  {name:34} best {best[name]:6.3f} s   median {median[name]:6.3f} s")
    # Runs alternate, so each round's pair shares the machine's load at that moment: the
    # median of the paired differences is the steadiest estimate of what the plugin adds.
    paired = [with_ - without for without, with_ in zip(times[names[0]], times[names[1]])]
    overhead = 1 + statistics.median(paired) / median[names[0]]
    print(
        f"plugin without --toll / baseline: {overhead:.3f} from paired runs "
        f"(best {best[names[1]] / best[names[0]]:.3f}, median "
        f"{median[names[1]] / median[names[0]]:.3f}; goal <= 1.02)"
    )
    print(
        f"profiled, in process: pytest_toll's own functions take {share:.3%} of the run "
        f"(ratio {1 + share:.4f})"
    )
    gate = best[names[3]] / best[names[2]]
    per_entry = (best[names[3]] - best[names[2]]) / entries * 1000
    print(
        f"--toll on {entries} entries / baseline: {gate:.3f} "
        f"(median {median[names[3]] / median[names[2]]:.3f}); "
        f"{per_entry:.1f} ms per entry, vocabulary load included"
    )


if __name__ == "__main__":
    main()
