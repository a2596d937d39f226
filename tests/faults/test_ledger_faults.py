"""Faults against the ledger: SIGKILL during updates, concurrent updates, hostile bytes.

Each test counts its attempts; none may crash (anything but a clean UsageError or a valid
ledger) or lose data (a truncated ledger, a lost pin, a stray temporary file).
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import UsageError
from pytest_toll.gate.ledger import load_ledger, update_ledger

ENTRIES = 200
WRITER = """
import sys
from pytest_toll.gate.ledger import update_ledger
path, round_ = sys.argv[1], int(sys.argv[2])
for step in range(10_000):
    update_ledger(path, {("tests", f"t.py::case_{n}", "pin"): 1000 - (step + n) % 7
                         for n in range(COUNT)})
""".replace("COUNT", str(ENTRIES))


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="SIGKILL is POSIX")
def test_sigkill_during_updates_never_truncates_or_leaves_a_temporary(tmp_path: Path) -> None:
    path = tmp_path / "toll.yaml"
    update_ledger(path, {("tests", f"t.py::case_{n}", "pin"): 1000 for n in range(ENTRIES)})
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    rng = random.Random(13)
    attempts = crashes = lost = 0
    for kill in range(30):
        attempts += 1
        writer = subprocess.Popen([sys.executable, str(script), str(path), str(kill)])
        time.sleep(rng.uniform(0.3, 1.5))
        writer.send_signal(signal.SIGKILL)
        writer.wait()
        try:
            tests = load_ledger(path).data["tests"]
        except UsageError:
            crashes += 1
            continue
        lost += len(tests) != ENTRIES
        # The next run cleans whatever the killed one left.
        update_ledger(path, {("tests", "t.py::case_0", "pin"): rng.randrange(900, 1000)})
        leftovers = sorted(p.name for p in tmp_path.iterdir() if p.name != "writer.py")
        lost += leftovers != ["toll.yaml"]
    assert (attempts, crashes, lost) == (30, 0, 0)


PROJECT_TESTS = """
import time

def test_a(toll):
    time.sleep(2)
    toll.text("a", "one two three four")

def test_b(toll):
    time.sleep(2)
    toll.text("b", "one two")
"""


@pytest.mark.slow
def test_two_concurrent_updates_both_survive(tmp_path: Path) -> None:
    (tmp_path / "toll.yaml").write_text(
        "version: 1\n# pins\ntests:\n  test_project.py::test_a: {pin: 50}\n"
        "  test_project.py::test_b: {pin: 50}\n"
    )
    (tmp_path / "test_project.py").write_text(textwrap.dedent(PROJECT_TESTS))
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    runs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "pytest",
                "--toll",
                "--toll-update",
                "-k",
                name,
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:xdist",
            ],
            cwd=tmp_path,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for name in ("test_a", "test_b")
    ]
    outputs = [run.communicate(timeout=300)[0].decode() for run in runs]
    assert [run.returncode for run in runs] == [0, 0], outputs
    tests = load_ledger(tmp_path / "toll.yaml").data["tests"]
    # Both lowered pins survive (neither run lost the other's change).
    assert tests["test_project.py::test_a"]["pin"] < 50, outputs
    assert tests["test_project.py::test_b"]["pin"] < 50, outputs
    assert "# pins\n" in (tmp_path / "toll.yaml").read_text()


def test_a_deeply_nested_ledger_is_a_usage_error_in_pytest(tmp_path: Path) -> None:
    (tmp_path / "toll.yaml").write_text("version: 1\ntests: " + "[" * 50_000 + "\n")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--toll", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "INTERNALERROR" not in done.stdout + done.stderr
    assert "toll.yaml:2" in done.stdout + done.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_ledger_is_a_usage_error_in_pytest(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "toll.yaml")
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "--toll", "-q", "-p", "no:cacheprovider"],
        cwd=tmp_path, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert done.returncode == 4, done.stdout + done.stderr
    assert "not a regular file" in done.stdout + done.stderr


YAMLISH = st.lists(
    st.sampled_from(
        [b"tests:", b"servers:", b"pin:", b" 10", b" 1e1", b" .nan", b" &a", b" *a", b" <<:",
         b"\n", b"\n  ", b"- ", b"{", b"}", b"[", b"]", b", ", b"'", b'"', b"#", b"!!int",
         b"!x", b"\xef\xbb\xbf", b"\xff", b"\x00", b"\t", b"---\n", b"? ", b"|\n", b"%YAML 1.2"]
    ),
    max_size=40,
)  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(YAMLISH.map(b"".join))
def test_random_yamlish_bytes_never_crash_the_loader_or_the_writer(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "toll.yaml"
        path.write_bytes(data)
        try:
            ledger = load_ledger(path)
        except UsageError as error:
            assert str(error).startswith(str(path))
            return
        assert isinstance(ledger.data, dict)
        try:
            update_ledger(path, {("tests", "t.py::a", "pin"): 1})
        except UsageError:
            return
        assert load_ledger(path).data["tests"]["t.py::a"] == {"pin": 1}


def test_a_ledger_with_two_byte_order_marks_is_refused_not_read_two_ways(tmp_path: Path) -> None:
    # Found by the fuzz test above: the reader skipped both marks, the rewriter kept the second
    # inside the first key, so an update wrote a ledger every later run refused.
    path = tmp_path / "toll.yaml"
    path.write_bytes("\ufeff\ufefftests:\n".encode())
    with pytest.raises(UsageError, match=r"toll\.yaml:1: more than one byte-order mark"):
        load_ledger(path)
    path.write_bytes("\ufefftests:\n".encode())
    update_ledger(path, {("tests", "t.py::a", "pin"): 1})
    assert load_ledger(path).data["tests"]["t.py::a"] == {"pin": 1}


def test_a_ledger_the_rewriter_cannot_read_is_a_usage_error_naming_its_line(
    tmp_path: Path,
) -> None:
    # Found by the fuzz test above: a tab after "tests:" at a line's end loads, but the
    # round-trip writer refused it with a scanner traceback; now the update names the line and
    # leaves the file as it was.
    path = tmp_path / "toll.yaml"
    path.write_bytes(b"version: 1\ntests:\t\n")
    assert load_ledger(path).data["tests"] is None
    with pytest.raises(UsageError, match=r"toll\.yaml:2: the ledger cannot be rewritten"):
        update_ledger(path, {("tests", "t.py::a", "pin"): 1})
    assert path.read_bytes() == b"version: 1\ntests:\t\n"
