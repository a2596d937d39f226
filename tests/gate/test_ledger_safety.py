"""The ledger cannot switch the gate off or be damaged: numbers, limits, files, rewrites."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import pytest

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import LEDGER_MAX_BYTES
from pytest_toll.gate.ledger import DELETE, load_ledger, rewrite_ledger, update_ledger
from pytest_toll.gate.ledger.read import load_yaml
from pytest_toll.gate.ledger.write import _plain, _yaml


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "toll.yaml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ("budget: 10.0", r"toll\.yaml:4: tests\.t\.py::a\.budget: must be integer, .*write 10"),
        ("pin: 1e1", r"toll\.yaml:4: tests\.t\.py::a\.pin: must be integer, .*write 10"),
        ("pin: 10.5", r"toll\.yaml:4: tests\.t\.py::a\.pin: must be integer, not a number 10\.5"),
        ("pin: true", r"toll\.yaml:4: tests\.t\.py::a\.pin: must be integer, not a boolean"),
    ],
)
def test_a_pin_that_is_not_an_integer_is_refused(tmp_path: Path, entry: str, message: str) -> None:
    path = write(tmp_path, f"version: 1\ntests:\n  t.py::a:\n    {entry}\n")
    with pytest.raises(UsageError, match=message):
        load_ledger(path)
    # The rewrite reads the same way: an update never raises a pin it could not read.
    path.write_text(f"version: 1\nservers:\n  s:\n    tools_file: t.json\n    {entry}\n")
    with pytest.raises(UsageError, match=r"toll\.yaml:5: servers\.s\.(pin|budget): must be"):
        load_ledger(path)


@pytest.mark.parametrize("value", [".inf", ".nan", "-.inf"])
def test_no_number_is_infinite_or_nan(tmp_path: Path, value: str) -> None:
    path = write(tmp_path, f"servers:\n  s:\n    tools_file: t.json\n    timeout: {value}\n")
    with pytest.raises(UsageError, match=r"toll\.yaml:4: servers\.s\.timeout: must be"):
        load_ledger(path)


def test_an_alias_bomb_is_refused_by_its_node_count(tmp_path: Path) -> None:
    # 9**9 nodes expanded: the limit refuses it at LEDGER_MAX_ALIAS_NODES, long before
    # (no wall time is asserted: the limit in the message is the mechanism).
    levels = ["a0: &a0 [x, x, x, x, x, x, x, x, x]"]
    for level in range(1, 9):
        previous = f"*a{level - 1}"
        levels.append(f"a{level}: &a{level} [{', '.join([previous] * 9)}]")
    path = write(tmp_path, "\n".join(levels) + "\n")
    with pytest.raises(UsageError, match=r"toll\.yaml:\d+: .*LEDGER_MAX_ALIAS_NODES"):
        load_ledger(path)
    with pytest.raises(UsageError, match="LEDGER_MAX_ALIAS_NODES"):
        update_ledger(path, {("tests", "a", "pin"): 1})


def test_small_anchors_and_merge_keys_still_work(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "servers:\n"
        "  a: &base\n    tools_file: a.json\n    env: &env {A: '1'}\n"
        "  b:\n    <<: *base\n    tools_file: b.json\n    headers: *env\n",
    )
    servers = load_ledger(path).data["servers"]
    assert servers["b"] == {"tools_file": "b.json", "env": {"A": "1"}, "headers": {"A": "1"}}


@pytest.mark.parametrize("text", ["a: " + "[" * 40 + "]" * 40, "a: " + "[" * 100_000])
def test_deep_nesting_is_a_usage_error(tmp_path: Path, text: str) -> None:
    path = write(tmp_path, text + "\n")
    with pytest.raises(UsageError, match=r"toll\.yaml:1: .*(LEDGER_MAX_DEPTH|nesting)"):
        load_ledger(path)


def test_a_ledger_past_the_size_limit_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "toll.yaml"
    with path.open("wb") as out:
        out.truncate(LEDGER_MAX_BYTES + 1)  # sparse: no time, no disk
    with pytest.raises(UsageError, match="LEDGER_MAX_BYTES"):
        load_ledger(path)


def _within(seconds: float, call: object) -> BaseException | None:
    """Run ``call``; fail the test if it does not return in time (a blocked read)."""
    outcome: list[BaseException | None] = []

    def target() -> None:
        try:
            call()  # type: ignore[operator]
        except BaseException as error:
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    assert outcome, f"still blocked after {seconds} s"
    return outcome[0]


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_ledger_is_refused_without_blocking(tmp_path: Path) -> None:
    fifo = tmp_path / "toll.yaml"
    os.mkfifo(fifo)
    error = _within(5, lambda: load_ledger(fifo))
    assert isinstance(error, UsageError) and "not a regular file" in str(error)
    error = _within(5, lambda: update_ledger(fifo, {("tests", "a", "pin"): 1}))
    assert isinstance(error, UsageError) and "not a regular file" in str(error)


@pytest.mark.skipif(not Path("/dev/zero").exists(), reason="no /dev/zero")
def test_dev_zero_is_refused() -> None:
    error = _within(5, lambda: load_ledger("/dev/zero"))
    assert isinstance(error, UsageError) and "not a regular file" in str(error)


def test_a_symlinked_ledger_is_written_through(tmp_path: Path) -> None:
    target = tmp_path / "shared" / "toll.yaml"
    target.parent.mkdir()
    target.write_text("version: 1\ntests:\n  t.py::a: {pin: 9}\n")
    link = tmp_path / "toll.yaml"
    link.symlink_to(target)
    assert update_ledger(link, {("tests", "t.py::a", "pin"): 5})
    assert link.is_symlink()
    assert target.read_text() == "version: 1\ntests:\n  t.py::a: {pin: 5}\n"


def test_a_bom_survives_an_update(tmp_path: Path) -> None:
    path = tmp_path / "toll.yaml"
    path.write_bytes(b"\xef\xbb\xbfversion: 1\ntests:\n  t.py::a: {pin: 9}\n")
    assert update_ledger(path, {("tests", "t.py::a", "pin"): 5})
    assert path.read_bytes() == b"\xef\xbb\xbfversion: 1\ntests:\n  t.py::a: {pin: 5}\n"


def test_a_read_only_ledger_is_not_overwritten(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\ntests:\n  t.py::a: {pin: 9}\n")
    path.chmod(0o444)
    with pytest.raises(UsageError, match=r"toll\.yaml: the ledger is read-only \(mode 444\)"):
        update_ledger(path, {("tests", "t.py::a", "pin"): 5})
    assert "pin: 9" in path.read_text()
    assert stat.S_IMODE(path.stat().st_mode) == 0o444


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders"
)
def test_a_read_only_folder_is_an_error(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    path = write(folder, "version: 1\ntests:\n  t.py::a: {pin: 9}\n")
    folder.chmod(0o555)
    try:
        with pytest.raises(UsageError, match=r"toll\.yaml"):
            update_ledger(path, {("tests", "t.py::a", "pin"): 5})
    finally:
        folder.chmod(0o755)


def test_stale_temporary_files_are_cleaned(tmp_path: Path) -> None:
    path = write(tmp_path, "version: 1\ntests:\n  t.py::a: {pin: 9}\n")
    (tmp_path / ".toll.yaml.k1ll3d.tmp").write_text("version: 1\ntes")
    (tmp_path / ".other.json.abc.tmp").write_text("not ours")
    assert update_ledger(path, {("tests", "t.py::a", "pin"): 5})
    assert sorted(p.name for p in tmp_path.iterdir()) == [".other.json.abc.tmp", "toll.yaml"]


def test_removed_entries_are_reported_and_comments_stay(tmp_path: Path) -> None:
    text = (
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        "    tools_file: t.json\n"
        "    tools:\n"
        "      # the reader\n"
        "      read_file: 10\n"
        "      # gone soon\n"
        "      old_tool: 20\n"
        "\n"
        "# --- tests: owned by QA ---\n"
        "tests:\n"
        "  # flaky, see the tracker\n"
        "  t.py::gone: {pin: 3}\n"
        "  t.py::kept: {pin: 4}\n"
    )
    path = write(tmp_path, text)
    rewrite = rewrite_ledger(
        path,
        {
            ("servers", "files", "tools", "old_tool"): DELETE,
            ("tests", "t.py::gone"): DELETE,
            ("tests", "t.py::kept", "pin"): 2,
        },
    )
    assert rewrite.written
    assert rewrite.removed == [("servers", "files", "tools", "old_tool"), ("tests", "t.py::gone")]
    assert path.read_text() == (
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        "    tools_file: t.json\n"
        "    tools:\n"
        "      # the reader\n"
        "      read_file: 10\n"
        "      # gone soon\n"
        "\n"
        "# --- tests: owned by QA ---\n"
        "tests:\n"
        "  # flaky, see the tracker\n"
        "  t.py::kept: {pin: 2}\n"
    )


def test_seeding_pins_keeps_section_comments_and_blank_lines(tmp_path: Path) -> None:
    text = (
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        "    tools_file: t.json\n"
        "\n"
        "# --- skills: owned by the docs team ---\n"
        "skills:\n"
        "  pdf:\n"
        "    path: skills/pdf\n"
    )
    path = write(tmp_path, text)
    assert update_ledger(
        path,
        {
            ("servers", "files", "pin"): 100,
            ("skills", "pdf", "pin"): {"metadata": 1, "body": 2, "references": 3},
        },
    )
    assert path.read_text() == (
        "version: 1\n"
        "servers:\n"
        "  files:\n"
        "    tools_file: t.json\n"
        "    pin: 100\n"
        "\n"
        "# --- skills: owned by the docs team ---\n"
        "skills:\n"
        "  pdf:\n"
        "    path: skills/pdf\n"
        "    pin: {metadata: 1, body: 2, references: 3}\n"
    )


def test_a_concurrent_change_is_kept_unless_ours_is_lower(tmp_path: Path) -> None:
    base = {"tests": {"a": {"pin": 10}, "b": {"pin": 10}, "c": {"pin": 10}}}
    # Meanwhile another run lowered a to 5, b to 9, and removed c.
    path = write(tmp_path, "tests:\n  a: {pin: 5}\n  b: {pin: 9}\n  d: {pin: 1}\n")
    rewrite_ledger(
        path,
        {("tests", "a", "pin"): 8, ("tests", "b", "pin"): 7, ("tests", "c"): DELETE},
        base=base,
    )
    assert load_ledger(path).data["tests"] == {"a": {"pin": 5}, "b": {"pin": 7}, "d": {"pin": 1}}


@pytest.mark.parametrize(
    "scalar",
    ["12", "-3", "0x1f", "0o17", "1_000", "1.5", "1e3", ".5", "true", "False", "yes", "no",
     "on", "null", "~", "", "2025-01-02", "'12'", '"true"', "x # c", "a:b", "<<x"],
)  # fmt: skip
def test_the_loader_reads_scalars_as_the_rewriter_does(tmp_path: Path, scalar: str) -> None:
    text = f"key: {scalar}\n"
    ours = load_yaml(text, tmp_path / "toll.yaml").value["key"]
    theirs = _plain(_yaml().load(text))["key"]
    if scalar == "2025-01-02":
        assert ours == "2025-01-02"  # a date stays text (JSON has no dates)
    else:
        assert (ours, type(ours)) == (theirs, type(theirs))
