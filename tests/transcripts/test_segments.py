"""Work split by bytes: segments, their facts, the fold, and the cache of an appended file.

Whatever the cut, the pool or the cache, a scan's report must be the one a whole-file read in
one process gives.
"""

from __future__ import annotations

import itertools
import shutil
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.transcripts import scan as tolls
from pytest_toll.transcripts.formats.base import iter_lines, segment_bounds
from pytest_toll.transcripts.report import build_report
from pytest_toll.transcripts.scan import select_files, summarize_files
from pytest_toll.transcripts.summary import FileSummary
from tests.transcripts.transcripts_data import FIXTURES, MAIN


def _as_json(summaries: list[FileSummary]) -> list[dict[str, Any]]:
    return [summary.to_json() for summary in summaries]


def test_cuts_fall_on_line_starts_and_stay_put_when_a_file_grows(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(
        b"".join(b'{"n": %d, "pad": "%s"}\n' % (i, b"x" * (i % 37)) for i in range(400))
    )
    size = path.stat().st_size
    bounds = segment_bounds(path, size, 1000)
    assert bounds[0][0] == 0 and bounds[-1][1] == size and len(bounds) > 5
    data = path.read_bytes()
    for (_, end), (start, _) in itertools.pairwise(bounds):
        assert end == start and data[start - 1 : start] == b"\n"
    with path.open("ab") as out:
        out.write(b'{"appended": true}\n' * 50)
    grown = segment_bounds(path, path.stat().st_size, 1000)
    assert grown[: len(bounds) - 1] == bounds[:-1]  # only the last segment changes
    # the lines of the segments are the lines of the file
    lines = [raw for start, end in grown for _, raw in iter_lines(path, start=start, end=end)]
    assert lines == [raw for _, raw in iter_lines(path)]


def test_a_file_cut_into_many_segments_summarizes_as_a_whole_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole, _ = summarize_files(select_files([FIXTURES]), workers=1)
    # Every line its own segment: pairing, duplicates, repeats and bad-line numbers all cross.
    monkeypatch.setattr(tolls, "SEGMENT_BYTES", 1)
    split, _ = summarize_files(select_files([FIXTURES]), workers=1)
    assert _as_json(split) == _as_json(whole)
    assert any(summary.problems for summary in split)  # the corrupt file's lines, numbered


def test_workers_segments_and_cache_never_change_the_report(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = select_files([history])
    assert any("subagents" in str(path) for path, _ in files)
    one, _ = summarize_files(files, workers=1)
    reference = build_report(one).as_dict()
    assert reference["calls"] > 300
    monkeypatch.setattr(tolls, "POOL_MIN_BYTES", 0)
    monkeypatch.setattr(tolls, "SEGMENT_BYTES", 64 * 1024)
    two, stats = summarize_files(files, workers=2, cache=tmp_path / "cache")
    assert stats.workers == 2 and _as_json(two) == _as_json(one)
    warm, stats = summarize_files(files, workers=2, cache=tmp_path / "cache")
    assert stats.cached == len(files) and stats.read_bytes == 0
    assert build_report(warm).as_dict() == reference
    # scan() streams summaries into the report, in the files' order, cold and warm alike
    for cache in (tmp_path / "fresh", tmp_path / "fresh"):
        options = tolls.ReadOptions(workers=2, cache=cache)
        assert tolls.scan([history], options).as_dict() == reference


def test_an_appended_session_rereads_only_what_was_appended(
    history: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tolls, "SEGMENT_BYTES", 32 * 1024)
    root = tmp_path / "projects"
    biggest = max(history.rglob("*.jsonl"), key=lambda path: path.stat().st_size)
    assert "codex" not in str(biggest)
    path = root / biggest.name
    root.mkdir()
    shutil.copyfile(biggest, path)
    cache = tmp_path / "cache"
    summarize_files(select_files([root]), cache=cache, workers=1)
    before = path.stat().st_size
    with path.open("ab") as out:
        out.write(MAIN.read_bytes())  # another session's calls, results and turns
        out.write(b"{broken\n")
    again, stats = summarize_files(select_files([root]), cache=cache, workers=1)
    assert stats.cached == 0 and stats.cached_segments > 0
    assert stats.read_bytes < path.stat().st_size - before + 2 * 32 * 1024
    cold, _ = summarize_files(select_files([root]), workers=1)
    assert _as_json(again) == _as_json(cold)
    assert cold[0].unreadable_lines == 1 and cold[0].problems[0].startswith("line ")
