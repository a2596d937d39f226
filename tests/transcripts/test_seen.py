"""What a scan has counted: digests held exactly as a set would, and past the memory's bound
set aside on disk with the same totals in the end."""

from __future__ import annotations

import os
import tracemalloc
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.transcripts import report, seen
from pytest_toll.transcripts.report import build_report
from pytest_toll.transcripts.scan import select_files, summarize_files
from pytest_toll.transcripts.seen import DigestSet, FirstSeen
from pytest_toll.transcripts.summary import FileSummary, Repeat
from tests.transcripts.transcripts_data import FIXTURES


@settings(max_examples=200, deadline=None)
@given(st.lists(st.binary(max_size=12), max_size=300))
def test_digest_set_says_new_exactly_as_a_set_does(keys: list[bytes]) -> None:
    kept, plain = DigestSet(), set[bytes]()
    for key in keys:
        assert kept.add(key) == (key not in plain)
        plain.add(key)
    assert len(kept) == len(plain)


def test_digest_set_keeps_every_key_through_its_growth() -> None:
    kept = DigestSet()
    keys = [f"toolu_{number:08d}".encode() for number in range(50_000)]  # each table grows 5 times
    assert all(kept.add(key) for key in keys)
    assert not any(kept.add(key) for key in keys)
    assert len(kept) == 50_000


def test_digest_set_grows_without_holding_a_second_copy_of_itself() -> None:
    keys = [f"toolu_{number:08d}".encode() for number in range(70_000)]
    tracemalloc.start()
    try:
        kept = DigestSet()
        for key in keys:
            kept.add(key)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(kept) == 70_000
    # one flat table doubling at 65,537 keys held its old 1 MB beside the new 2 MB (a peak
    # 2.4× what is held, by this test); one of 256 tables doubling holds a 256th of that
    assert held > 70_000 * 16 and peak < 1.1 * held


def _first_payloads(pairs: list[tuple[bytes, int]]) -> list[int]:
    firsts: dict[bytes, int] = {}
    for key, payload in pairs:
        firsts.setdefault(key, payload)
    return sorted(firsts.values())


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(st.binary(max_size=3), st.integers(min_value=-(2**40), max_value=2**40)),
        max_size=200,
    ),
    st.integers(min_value=0, max_value=20),
)
def test_first_seen_counts_each_key_first_payload_once_past_its_bound(
    pairs: list[tuple[bytes, int]], in_memory: int
) -> None:
    # Keys repeat (3 bytes at most) and a repeated key may carry another payload: the first
    # one counts, whether it was answered at once or set aside.
    counted = []
    with FirstSeen("q", in_memory=in_memory) as kept:
        for key, payload in pairs:
            if kept.add(key, payload):
                counted.append(payload)
        counted.extend(payload for (payload,) in kept.later())
    assert sorted(counted) == _first_payloads(pairs)


def test_first_seen_sets_aside_past_its_bound_and_leaves_no_file_open() -> None:
    kept = FirstSeen("IIq", in_memory=100)
    answered = sum(kept.add(f"call-{number}".encode(), 1, 2, number) for number in range(1000))
    assert answered == 100 and kept.set_aside == 900
    files = list(kept._files)
    assert len(files) == 64 and not any(file.closed for file in files)
    later = list(kept.later())
    assert len(later) == 900 and {(shape, outcome) for shape, outcome, _ in later} == {(1, 2)}
    assert sorted(tokens for _, _, tokens in later) == list(range(100, 1000))
    assert all(file.closed for file in files)


def test_first_seen_memory_stops_growing_at_its_bound() -> None:
    def peak_while_adding(keys: int) -> int:
        tracemalloc.start()
        try:
            with FirstSeen("IIq", in_memory=5_000) as kept:
                for number in range(keys):
                    kept.add(f"toolu_{number:08d}".encode(), 3, 4, number)
                assert sum(1 for _ in kept.later()) == keys - 5_000
            return tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

    # four times the keys, past the bound, and the peak barely moves (file buffers, and one
    # 64th of what was set aside read back at a time)
    small, large = peak_while_adding(20_000), peak_while_adding(80_000)
    assert large < small + 300_000, (small, large)


def test_report_is_the_same_when_every_call_turn_and_repeat_is_set_aside(
    history: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the generated history: resumed sessions copy earlier calls, turns and repeats into new
    # files
    summaries, _ = summarize_files(select_files([FIXTURES, history]), workers=1)
    in_memory = build_report(summaries)
    assert in_memory.repeats_total == len(in_memory.repeats) > 10
    monkeypatch.setattr(seen, "IN_MEMORY_KEYS", 1)
    monkeypatch.setattr(report, "REPEATS_IN_MEMORY", 1)
    set_aside = build_report(summaries)
    copies = sum(len(summary.call_log) for summary in summaries) - in_memory.calls
    assert copies > 10 and set_aside.calls > 400 and set_aside.prompt_tokens > 0
    assert set_aside.as_dict() == in_memory.as_dict()
    assert set_aside.to_json() == in_memory.to_json()


_REPEATS = st.builds(
    Repeat,
    session=st.sampled_from(["s1", "s2"]),
    shape=st.sampled_from(["Read", "$ ls"]),
    target=st.sampled_from(["/a", "/b", "."]),
    times=st.integers(min_value=2, max_value=5),
    tokens_each=st.integers(min_value=0, max_value=3),
    first_call=st.sampled_from(["", "toolu_1", "toolu_2"]),
)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(_REPEATS, max_size=6), max_size=8),
    st.integers(min_value=0, max_value=4),
    st.integers(min_value=1, max_value=6),
)
def test_repeats_kept_and_totals_do_not_depend_on_memory_or_how_many_are_kept(
    files: list[list[Repeat]], in_memory: int, kept: int
) -> None:
    # Copies of one repeat (same first fetch, shape, target, size) across files are one, the
    # copy with the most times; the ranking, the waste and the count are those of the whole.
    summaries = [
        FileSummary(path=f"/f{number}.jsonl", format="claude", repeats=repeats)
        for number, repeats in enumerate(files)
    ]
    whole = build_report(summaries)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(report, "REPEATS_IN_MEMORY", in_memory)
        patch.setattr(report, "REPEATS_KEPT", kept)
        bounded = build_report(summaries)
    assert bounded.repeats == whole.repeats[:kept]
    assert (bounded.wasted_tokens, bounded.repeats_total) == (
        whole.wasted_tokens,
        whole.repeats_total,
    )
    assert whole.wasted_tokens == sum(repeat.wasted for repeat in whole.repeats)


_FILE_SIZE_LIMITED = """
import resource, signal, sys
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.transcripts.seen import FirstSeen

signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails with EFBIG instead
resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))
keys = int(sys.argv[1])
seen = FirstSeen("q", in_memory=0)
try:
    for number in range(keys):
        seen.add(str(number).encode(), number)
    print(sum(1 for _ in seen.later()))
except CouldNotJudge as error:
    print("could not judge:", error, "| files left open:", len(seen._files))
"""


@pytest.mark.parametrize(
    ("keys", "where"),
    [(100_000, "a write past the limit"), (7_000, "the flush before reading back")],
)
def test_a_temporary_folder_without_room_is_could_not_judge_naming_it(
    tmp_path: Path, keys: int, where: str
) -> None:
    """A real file-size limit (the kernel's EFBIG), in a process of its own: setting keys aside
    fails either while writing (each file's buffer spills past 1 KB) or when a file's buffered
    records are flushed before they are read back; either way the scan says why and where, and
    closes every file, rather than counting some keys and not others."""
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-c", _FILE_SIZE_LIMITED, str(keys)],
        capture_output=True,
        text=True,
        env={**os.environ, "TMPDIR": str(tmp_path)},
        check=True,
    )
    said = run.stdout.strip()
    assert said.startswith("could not judge: could not set aside"), (where, said, run.stderr)
    assert f"temporary folder {tmp_path} (File too large)" in said
    assert "TMPDIR" in said
    assert said.endswith("files left open: 0")
