"""Bounded work (issue 34, door 6): the memory import scan is linear in the file, findings
are capped per file with a count of the rest, a marketplace's entries are deduplicated by
target and capped, and an SQLite source is read under a statement time limit and a row-size
cap."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest

from pytest_toll.core import database
from pytest_toll.surface.imports import find_imports
from pytest_toll.surface.memory import measure_memory
from pytest_toll.surface.plugins import marketplace_plugins
from pytest_toll.transcripts.formats import read_records
from pytest_toll.transcripts.records import BadLine

MEGABYTE = 1 << 20


def _runs_of_rising_length(size: int) -> str:
    """Backtick runs of lengths 1, 2, 3, … : none closes, and each used to scan the rest."""
    parts: list[str] = []
    total, length = 0, 1
    while total < size:
        parts.append("`" * length)
        total += length + 1
        length += 1
    return " ".join(parts)


def test_the_import_scan_of_a_megabyte_of_backtick_runs_is_linear() -> None:
    line = _runs_of_rising_length(MEGABYTE)
    started = time.perf_counter()
    assert list(find_imports(line)) == []
    assert time.perf_counter() - started < 1.0


def test_the_import_scan_of_many_spans_and_many_mentions_is_linear() -> None:
    line = "`a` @x/y " * (MEGABYTE // 9)
    started = time.perf_counter()
    found = list(find_imports(line))
    assert len(found) == MEGABYTE // 9
    # 116,508 imports between as many code spans: about a second here, where the search it
    # replaced took 87 s for a sixth of this line (quadratic: hours for all of it).
    assert time.perf_counter() - started < 10.0


def test_findings_of_one_file_are_capped_with_a_count_of_the_rest(tmp_path: Path) -> None:
    (tmp_path / "CLAUDE.md").write_text("".join(f"@missing/{i}.md\n" for i in range(5000)))
    report = measure_memory(tmp_path, "claude")
    broken = [f for f in report.findings if f.rule == "M101"]
    assert len(broken) <= 51
    assert any("4,950 more" in f.message for f in broken), [f.message for f in broken[-2:]]


def _marketplace(root: Path, plugins: list[dict[str, object]]) -> None:
    (root / ".claude-plugin").mkdir(parents=True, exist_ok=True)
    (root / ".claude-plugin" / "marketplace.json").write_text(json.dumps({"plugins": plugins}))


def test_duplicate_marketplace_entries_are_measured_once(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "a").mkdir(parents=True)
    entries: list[dict[str, object]] = [
        {"name": "a", "source": "./plugins/a"},
        {"name": "a2", "source": "plugins/a"},
        {"name": "a3", "source": "./plugins/../plugins/a/"},
    ]
    _marketplace(tmp_path, entries)
    listed, notes = marketplace_plugins(tmp_path)
    assert [name for name, _ in listed] == ["a"]
    assert any("a2" in note and "same" in note for note in notes)


def test_a_marketplace_of_many_entries_is_capped(tmp_path: Path) -> None:
    (tmp_path / "plugins" / "a").mkdir(parents=True)
    entries: list[dict[str, object]] = [{"name": f"p{i}", "source": "./x"} for i in range(50_000)]
    _marketplace(tmp_path, entries)
    started = time.perf_counter()
    _, notes = marketplace_plugins(tmp_path)
    assert time.perf_counter() - started < 5
    assert len(notes) < 1000
    assert any("more" in note for note in notes)


def _opencode_database(path: Path) -> sqlite3.Connection:
    connection = sqlite3.connect(path)
    connection.execute("create table session (id text, data text)")
    connection.execute("create table part (id text, message_id text, data text, time_created)")
    return connection


@pytest.mark.slow
def test_an_opencode_database_of_recursive_views_stops_at_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(database, "DATABASE_TIME_LIMIT", 1.0)
    path = tmp_path / "opencode.db"
    connection = _opencode_database(path)
    connection.execute(
        "create view message as with recursive n(i) as (select 1 union all select i + 1 from n) "
        "select i as id, 's' as session_id, '{}' as data, i as time_created from n"
    )
    connection.commit()
    connection.close()
    started = time.perf_counter()
    records = list(read_records(path))
    assert time.perf_counter() - started < 20  # (1 s, and the machine may be loaded)
    assert any(isinstance(r, BadLine) and "time limit" in r.reason for r in records)


def test_an_opencode_database_row_over_the_size_cap_is_a_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "opencode.db"
    connection = _opencode_database(path)
    connection.execute("create table message (id, session_id, data, time_created)")
    huge = json.dumps({"role": "assistant", "pad": "x" * (40 * MEGABYTE)})
    connection.execute("insert into message values ('m1', 's', ?, 1)", (huge,))
    connection.execute(
        "insert into message values ('m2', 's', ?, 2)", (json.dumps({"role": "assistant"}),)
    )
    connection.commit()
    connection.close()
    records = list(read_records(path))
    assert any(isinstance(r, BadLine) and "larger than" in r.reason for r in records), records
