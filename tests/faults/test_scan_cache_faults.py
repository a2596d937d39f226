"""The scan cache is trusted only as far as its owner, and no row of it can fail a scan.

Another user's cache (or one anyone may write) could serve made-up facts as this user's
history: it is not used, with one notice line. And whatever a row holds — bad JSON, the wrong
shape, a value of the wrong type, a column of another type — the scan's result is the one a
fresh scan gives: a malformed row is a miss, its file is read again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import stat
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.cli import main
from pytest_toll.transcripts import scan as tolls
from pytest_toll.transcripts.report import ScanReport
from tests.cli import run_toll
from tests.transcripts.transcripts_data import FIXTURES, MAIN

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX owners and modes")

CODEX = FIXTURES / "codex" / "2026" / "11" / "01" / "rollout-2026-11-01-codex-1.jsonl"
DATABASE = "transcripts.sqlite"


def history(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "a.jsonl").write_bytes(MAIN.read_bytes())
    (root / "b.jsonl").write_bytes(CODEX.read_bytes())
    return root


def scan(root: Path, cache: Path | None) -> ScanReport:
    return tolls.scan([root], tolls.ReadOptions(workers=1, cache=cache))


# --- whose cache ------------------------------------------------------------------------


def scan_cli(
    capsys: pytest.CaptureFixture[str], root: Path, cache_home: Path
) -> tuple[dict[str, Any], str]:
    os.environ["XDG_CACHE_HOME"] = str(cache_home)
    try:
        assert main(["scan", "--root", str(root), "--json"]) == 0
    finally:
        del os.environ["XDG_CACHE_HOME"]
    captured = capsys.readouterr()
    return json.loads(captured.out), captured.err


def _world_writable_folder(cache: Path) -> None:
    cache.mkdir()
    cache.chmod(0o777)


def _group_writable_database(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    (cache / DATABASE).write_bytes(b"")
    (cache / DATABASE).chmod(0o664)


def _world_writable_journal(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    (cache / f"{DATABASE}-wal").write_bytes(b"")
    (cache / f"{DATABASE}-wal").chmod(0o666)


def _linked_folder(cache: Path) -> None:
    elsewhere = cache.parent / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    cache.symlink_to(elsewhere)


def _linked_database(cache: Path) -> None:
    cache.mkdir(mode=0o700)
    (cache.parent / "planted.sqlite").write_bytes(b"")
    (cache / DATABASE).symlink_to(cache.parent / "planted.sqlite")


def _another_users_folder(cache: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root")
    cache.mkdir(mode=0o755)
    os.chown(cache, 65534, 65534)


UNTRUSTED: dict[str, Callable[[Path], None]] = {
    "a world-writable folder": _world_writable_folder,
    "a group-writable database": _group_writable_database,
    "a world-writable journal": _world_writable_journal,
    "a folder that is a link": _linked_folder,
    "a database that is a link": _linked_database,
    "another user's folder": _another_users_folder,
}


@pytest.mark.parametrize("case", UNTRUSTED, ids=list(UNTRUSTED))
def test_an_untrusted_cache_is_ignored_with_one_notice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, case: str
) -> None:
    root = history(tmp_path / "history")
    cache = tmp_path / "home" / "pytest-toll"
    cache.parent.mkdir()
    UNTRUSTED[case](cache)
    before = sorted(p.name for p in cache.iterdir())
    fresh = scan(root, None).as_dict()
    report, said = scan_cli(capsys, root, tmp_path / "home")
    assert report == fresh
    notices = [line for line in said.splitlines() if "scan cache" in line]
    assert len(notices) == 1, said
    assert str(cache) in notices[0] and "not used" in notices[0]
    assert sorted(p.name for p in cache.iterdir()) == before  # nothing written into it


def test_doctor_names_an_untrusted_cache(tmp_path: Path) -> None:
    cache = tmp_path / "home" / "pytest-toll"
    cache.parent.mkdir()
    _world_writable_folder(cache)
    done = run_toll("doctor", "--json", cwd=tmp_path, env={"XDG_CACHE_HOME": str(cache.parent)})
    checks = {check["check"]: check for check in json.loads(done.stdout)["checks"]}
    assert checks["cache folder"]["status"] == "problem"
    assert "writable by others (mode 777)" in checks["cache folder"]["detail"]
    cache.chmod(0o700)
    done = run_toll("doctor", "--json", cwd=tmp_path, env={"XDG_CACHE_HOME": str(cache.parent)})
    checks = {check["check"]: check for check in json.loads(done.stdout)["checks"]}
    assert checks["cache folder"]["status"] == "ok"


def test_a_new_cache_is_private(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    root = history(tmp_path / "history")
    old = os.umask(0o022)
    try:
        _, said = scan_cli(capsys, root, tmp_path / "home")
    finally:
        os.umask(old)
    cache = tmp_path / "home" / "pytest-toll"
    assert "scan cache" not in said
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    files = [p for p in cache.iterdir() if p.name.startswith(DATABASE)]
    assert files and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in files), [
        (p.name, oct(p.stat().st_mode)) for p in files
    ]
    # and it is used: a second scan is served from it, quietly
    _, again = scan_cli(capsys, root, tmp_path / "home")
    assert "scan cache" not in again


# --- any malformed row is a miss ----------------------------------------------------------

#: Per table, the columns and which rows a scan reaches (reports first; without a report,
#: summaries; without a summary, segment facts).
TABLES = {
    "reports": ("key", "used", "data"),
    "summaries": ("path", "scope", "size", "mtime", "tokenizer", "version", "data"),
    "segments": ("path", "scope", "segment", "tokenizer", "version", "data"),
}
#: Rows removed so that the scan reaches the corrupted table.
HIDING = {"reports": (), "summaries": ("reports",), "segments": ("reports", "summaries")}

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(max_size=20),
    st.binary(max_size=20),
)


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [leaf for key, item in value.items() for leaf in _leaves(item, (*path, key))]
    if isinstance(value, list):
        return [leaf for index, item in enumerate(value) for leaf in _leaves(item, (*path, index))]
    return [path]


def _at(value: Any, path: tuple[Any, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


@st.composite
def wrong_type_for(draw: st.DrawFn, original: Any) -> Any:
    """A JSON value of another type than ``original``. Never None, and never a string in
    place of a None: a field that may be None may hold a string, and those are values of
    the field, not wrong types. Lists and mappings are never empty (an empty one is the
    empty value of any list or mapping field)."""
    value = draw(
        st.one_of(
            st.booleans(),
            st.integers(),
            st.floats(allow_nan=False),
            st.text(max_size=8),
            st.lists(st.integers(), min_size=1, max_size=2),
            st.dictionaries(st.text(max_size=3), st.integers(), min_size=1, max_size=2),
        ).filter(
            lambda value: (
                type(value) is not type(original)
                and not (original is None and isinstance(value, str))
            )
        )
    )
    return value


@st.composite
def corrupted_data(draw: st.DrawFn, data: Any) -> Any:
    """``data`` (a row's BLOB) made malformed: bad JSON, the wrong shape, or one value of the
    wrong type anywhere in it; or not a BLOB of JSON at all."""
    decoded = json.loads(data)
    way = draw(st.sampled_from(["truncated", "garbage", "leaf", "scalar", "extra", "missing"]))
    if way == "truncated":
        cut = draw(st.integers(min_value=0, max_value=max(0, len(data) - 1)))
        return bytes(data[:cut])
    if way == "garbage":
        return b"\xff" + draw(st.binary(max_size=30))
    if way == "scalar":
        return draw(_scalars)
    if way == "leaf":
        leaves = [leaf for leaf in _leaves(decoded) if leaf]
        if leaves:
            path = draw(st.sampled_from(leaves))
            parent = _at(decoded, path[:-1])
            parent[path[-1]] = draw(wrong_type_for(parent[path[-1]]))
    elif way == "extra":
        if isinstance(decoded, dict):
            decoded["unexpected"] = 1
        else:
            decoded.append(None)
    elif isinstance(decoded, dict) and decoded:  # missing
        del decoded[draw(st.sampled_from(sorted(decoded)))]
    elif isinstance(decoded, list) and decoded:
        decoded.pop()
    return json.dumps(decoded).encode()


@pytest.fixture(scope="module", autouse=True)
def small_segments() -> Iterator[None]:
    """Segments of 1 KiB, so the small fixture files are cut and their facts cached."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(tolls, "SEGMENT_BYTES", 1024)
        yield


@pytest.fixture(scope="module")
def warm(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, ScanReport]:
    """A history, a cache holding its report, summaries and segment facts, and a fresh scan."""
    base = tmp_path_factory.mktemp("warm")
    root = history(base / "history")
    cache = base / "cache"
    scan(root, cache)
    with sqlite3.connect(cache / DATABASE) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for table in TABLES:
            assert db.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] > 0, table
    return root, cache, scan(root, None)


@settings(
    max_examples=200,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(data=st.data())
def test_any_malformed_row_is_a_miss_never_a_failure(
    warm: tuple[Path, Path, ScanReport],
    tmp_path_factory: pytest.TempPathFactory,
    data: st.DataObject,
) -> None:
    root, pristine, fresh = warm
    cache = tmp_path_factory.mktemp("corrupt") / "cache"
    cache.mkdir(mode=0o700)
    shutil.copy(pristine / DATABASE, cache / DATABASE)
    (cache / DATABASE).chmod(0o600)
    table = data.draw(st.sampled_from(sorted(TABLES)), label="table")
    column = data.draw(st.sampled_from(TABLES[table]), label="column")
    with sqlite3.connect(cache / DATABASE) as db:
        for hidden in HIDING[table]:
            db.execute(f"DELETE FROM {hidden}")
        rows = db.execute(f"SELECT rowid, {column} FROM {table}").fetchall()
        rowid, value = data.draw(st.sampled_from(rows), label="row")
        if column == "data":
            replacement = data.draw(corrupted_data(value), label="data")
        else:
            replacement = data.draw(_scalars.filter(lambda v: v != value), label=column)
        db.execute(f"UPDATE {table} SET {column}=? WHERE rowid=?", (replacement, rowid))
    assert scan(root, cache) == fresh
