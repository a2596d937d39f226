"""``toll merge`` believes no forged shard: it reads only regular files under the input
limit, takes only whole non-negative figures, only entries a shard collected (under the
ledger's kind), only outcomes that agree with ``failed`` and only shards 1..N; and a ledger
it would write that does not load is never written. Each forged report leaves the ledger
byte for byte as it was, with a message naming the file."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.ratchet import Policy
from pytest_toll.gate.session import write_ratchet
from pytest_toll.gate.shards import Shard, ledger_sha256
from pytest_toll.report.data import EntryResult, SessionReport
from tests.cli import run_main, run_toll

LEDGER = """\
version: 1
servers:
  files:
    tools_file: tools.json
    pin: 120
tests:
  test_a.py::test_one: {pin: 10}
"""
Report = dict[str, Any]


def shard_report(ledger: Path, index: int) -> Report:
    """A shard report as ``pytest --toll --toll-shard K/2 --toll-json`` writes it."""
    if index == 1:
        entries = [
            EntryResult("servers", "files", "toll.yaml::servers::files", 3, 118, "o200k",
                        120, None, "improved", False, "improved by 2 tok"),
            EntryResult("tests", "test_a.py::test_one", "test_a.py::test_one", 7, 8, "o200k",
                        10, None, "improved", False, "improved by 2 tok"),
        ]  # fmt: skip
        collected = {
            "tests": ["test_a.py::test_one"],
            "ledger_items": ["toll.yaml::servers::files"],
        }
    else:
        entries = [
            EntryResult("tests", "test_b.py::test_two", "test_b.py::test_two", None, 5, "o200k",
                        None, None, "new", False, "new"),
        ]  # fmt: skip
        collected = {"tests": ["test_b.py::test_two"], "ledger_items": []}
    report = SessionReport(
        ledger="toll.yaml",
        window=1_000_000,
        tolerance=0,
        entries=entries,
        collected=collected,  # type: ignore[arg-type]
        ledger_sha256=ledger_sha256(ledger),
        shard=Shard(index, 2).as_dict(),
    )
    return dict(report.as_dict())


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def write_shards(project: Path, reports: list[Report]) -> list[str]:
    paths = []
    for number, report in enumerate(reports, 1):
        path = project / f"shard-{number}.json"
        path.write_text(json.dumps(report), encoding="utf-8")
        paths.append(str(path))
    return paths


def merge(
    capsys: pytest.CaptureFixture[str], project: Path, reports: list[Report]
) -> tuple[int, str]:
    code, out, err = run_main(capsys, "merge", *write_shards(project, reports), "--update")
    return code, out + err


def test_the_honest_shards_merge_and_update(
    capsys: pytest.CaptureFixture[str], project: Path
) -> None:
    """The control every forgery below is a change of."""
    ledger = project / "toll.yaml"
    code, said = merge(capsys, project, [shard_report(ledger, 1), shard_report(ledger, 2)])
    assert code == 0, said
    text = ledger.read_text(encoding="utf-8")
    assert "pin: 118" in text and "test_a.py::test_one: {pin: 8}" in text
    assert "test_b.py::test_two: {pin: 5}" in text


def _entry(report: Report, nodeid: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(e for e in report["entries"] if e["nodeid"] == nodeid)
    return entry


def _set(target: str, /, **fields: Any) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        _entry(report, target).update(fields)

    return change


def _top(**fields: Any) -> Callable[[Report], None]:
    return lambda report: report.update(fields)


def _part(**fields: Any) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        part = {"name": "read_file", "measured": 60, "pin": None, "delta": None, **fields}
        _entry(report, "toll.yaml::servers::files")["parts"] = [part]

    return change


def _add(entry: dict[str, Any], *, collect: str | None = None) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        base = copy.deepcopy(_entry(report, "test_a.py::test_one"))
        report["entries"].append({**base, **entry})
        if collect is not None:
            report["collected"]["tests"].append(collect)

    return change


def _capture(**fields: Any) -> Callable[[Report], None]:
    def change(report: Report) -> None:
        capture = {"count": 1, "largest": 8, "largest_number": 1, "sum": 8,
                   "could_not_judge": 0, "requests": [], **fields}  # fmt: skip
        _entry(report, "test_a.py::test_one")["capture"] = capture

    return change


TEST = "test_a.py::test_one"
SERVER = "toll.yaml::servers::files"
#: (what is forged, the change to shard 1's report, words the refusal must hold)
FORGERIES: list[tuple[str, Callable[[Report], None], str]] = [
    ("negative measured", _set(TEST, measured=-500), "measured: -500"),
    ("bool measured", _set(TEST, measured=True), "measured: True"),
    ("float measured", _set(TEST, measured=8.0), "measured: 8.0"),
    ("fractional measured", _set(SERVER, measured=117.5), "measured"),
    ("huge negative pin", _set(TEST, pin=-(10**30)), "pin"),
    ("float pin", _set(TEST, pin=10.0), "pin: 10.0"),
    ("negative budget", _set(TEST, budget=-1), "budget: -1"),
    ("float line", _set(TEST, line=7.0), "line: 7.0"),
    ("negative part", _part(measured=-60), "parts[0].measured: -60"),
    ("float part pin", _part(pin=59.0), "parts[0].pin: 59.0"),
    ("float tolerance", _top(tolerance=0.0), "tolerance: 0.0"),
    ("float window", _top(window=1e6), "window"),
    ("negative capture sum", _capture(sum=-8), "capture"),
    ("bool capture count", _capture(count=True), "capture"),
    ("NaN ratio", _set(TEST, other_pins=[{"key": "waste_ratio_pin", "measured": float("nan"), "pin": None}]), "nan"),
    ("negative ratio", _set(TEST, other_pins=[{"key": "waste_ratio_pin", "measured": -0.5, "pin": None}]), "-0.5"),
    # entries that are not the shard's to report
    ("a server not in the ledger", _add({"kind": "servers", "name": "evil", "nodeid": "toll.yaml::servers::evil", "pin": None, "outcome": "new"}), "no servers entry 'evil'"),
    ("a ledger server under another node id", _set(SERVER, nodeid="toll.yaml::servers::other"), "toll.yaml::servers::other"),
    ("a ledger server not collected", lambda r: r["collected"].update(ledger_items=[]), "toll.yaml::servers::files"),
    ("a test not collected", _add({"name": "test_x.py::test_never", "nodeid": "test_x.py::test_never", "pin": None, "outcome": "new"}), "did not collect"),
    ("a test named as a ledger item", _add({"name": "toll.yaml::servers::files", "nodeid": "toll.yaml::servers::files", "pin": None, "outcome": "new"}), "did not collect"),
    ("a ledger test under the servers kind", _add({"kind": "servers", "name": TEST, "nodeid": f"toll.yaml::servers::{TEST}", "pin": None, "outcome": "new"}), "no servers entry"),
    ("a test whose name and node id differ", _add({"name": "test_a.py::test_other", "outcome": "new", "pin": None}, collect="test_a.py::test_other"), "did not collect"),
    # outcomes that disagree with failed
    ("regressed that does not fail", _set(TEST, measured=20, outcome="regressed", failed=False), "disagree"),
    ("over budget that does not fail", _set(TEST, budget=5, outcome="over_budget", failed=False), "disagree"),
    ("error that does not fail", _set(TEST, measured=None, outcome="error", failed=False), "disagree"),
    ("passed with nothing measured", _set(TEST, measured=None, outcome="passed"), "only an entry that could not be measured"),
    ("error with a figure", _set(TEST, outcome="error", failed=True), "only an entry that could not be measured"),
    ("passed that fails for nothing", _set(TEST, failed=True), "disagree"),
]  # fmt: skip


@pytest.mark.parametrize(("forged", "change", "words"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_a_forged_shard_is_refused_and_writes_nothing(
    capsys: pytest.CaptureFixture[str],
    project: Path,
    forged: str,
    change: Callable[[Report], None],
    words: str,
) -> None:
    ledger = project / "toll.yaml"
    before = ledger.read_bytes()
    first, second = shard_report(ledger, 1), shard_report(ledger, 2)
    change(first)
    code, said = merge(capsys, project, [first, second])
    assert code != 0, said
    assert ledger.read_bytes() == before
    assert "shard-1.json" in said and words in said, said
    assert "Traceback" not in said


@pytest.mark.parametrize(
    "indices",
    [[(1, 2), (3, 2)], [(1, 2), (2, 2), (3, 2)], [(1, 2), (2, 2), (2, 2)], [(1, 1), (2, 1)]],
)
def test_shard_indices_are_exactly_one_to_n(
    capsys: pytest.CaptureFixture[str], project: Path, indices: list[tuple[int, int]]
) -> None:
    ledger = project / "toll.yaml"
    before = ledger.read_bytes()
    reports = []
    for index, count in indices:
        report = shard_report(ledger, 1 if index == 1 else 2)
        report["shard"] = Shard(index, count).as_dict()
        reports.append(report)
    code, said = merge(capsys, project, reports)
    assert code != 0, said
    assert ledger.read_bytes() == before
    assert "Traceback" not in said


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs and /dev/zero are POSIX")
def test_only_regular_files_under_the_limit_are_read(tmp_path: Path) -> None:
    (tmp_path / "toll.yaml").write_text(LEDGER, encoding="utf-8")
    fifo = tmp_path / "shard.fifo"
    os.mkfifo(fifo)
    big = tmp_path / "big.json"
    with big.open("wb") as out:
        out.truncate(40 * 1024 * 1024)  # sparse: costs no disk
    sources = {
        "a FIFO with no writer": str(fifo),
        "an endless device": "/dev/zero",
        "a file over the limit": str(big),
        "a folder": str(tmp_path),
    }
    for what, source in sources.items():
        done = run_toll("merge", source, "--ledger", str(tmp_path / "toll.yaml"), cwd=tmp_path)
        assert done.returncode != 0, what
        assert source in done.stderr and "Traceback" not in done.stderr, (what, done.stderr)
    assert "not a regular file" in run_toll("merge", "/dev/zero", cwd=tmp_path).stderr


def test_the_merge_never_writes_a_ledger_that_would_not_load(tmp_path: Path) -> None:
    """The last net: a report that got past every check (here one built by hand, bypassing
    them) and would make the update write a ledger the loader rejects writes nothing."""
    path = tmp_path / "toll.yaml"
    path.write_text(LEDGER, encoding="utf-8")
    before = path.read_bytes()
    ledger = load_ledger(path)
    report = SessionReport(
        ledger="toll.yaml",
        window=1_000_000,
        tolerance=0,
        update=True,
        entries=[
            EntryResult(
                "servers",
                "evil",
                "toll.yaml::servers::evil",
                None,
                5,
                "o200k",
                None,
                None,
                "new",
                False,
                "new",
            ),
        ],
    )
    error = write_ratchet(report, ledger, Policy(tolerance=0, update=True))
    assert error is not None and "would not load" in error
    assert path.read_bytes() == before


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_never_hangs_the_merge(tmp_path: Path) -> None:
    fifo = tmp_path / "shard.json"
    os.mkfifo(fifo)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_toll", "merge", str(fifo)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert done.returncode != 0 and "not a regular file" in done.stderr
