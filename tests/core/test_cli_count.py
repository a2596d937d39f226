"""``toll count`` and the exit-code contract, run as a real process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_toll._version import __version__
from pytest_toll.core import tokens
from tests.cli import run_toll as toll


def test_version() -> None:
    result = toll("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"toll {__version__}"


def test_count_files_json(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("hello world", encoding="utf-8")
    (tmp_path / "b.json").write_text('{"a": [1, 2, 3]}', encoding="utf-8")
    result = toll("count", "a.md", "b.json", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    a, b = tokens.count("hello world"), tokens.count('{"a": [1, 2, 3]}')
    assert json.loads(result.stdout) == {
        "files": [
            {"path": "a.md", "tokens": a, "method": "o200k"},
            {"path": "b.json", "tokens": b, "method": "o200k"},
        ],
        "total": a + b,
        "method": "o200k",
    }


def test_count_text_output_labels_method(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one two three", encoding="utf-8")
    result = toll("count", "a.txt", "-", stdin=b"four five", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "3  a.txt",
        "2  -",
        "5  total",
        "method: o200k (o200k_base via tiktoken, exact for OpenAI models)",
    ]


def test_count_estimate_is_labelled(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x" * 3459, encoding="utf-8")
    result = toll("count", "a.txt", "--estimate", "--json", cwd=tmp_path)
    assert json.loads(result.stdout)["files"][0] == {
        "path": "a.txt",
        "tokens": 1000,
        "method": "estimate",
    }
    text = toll("count", "a.txt", "--estimate", "--chars-per-token", "4", cwd=tmp_path)
    assert text.stdout.splitlines()[-1] == (
        "method: estimate (4 chars/token, an estimate, not a measurement)"
    )


def test_bom_is_not_counted(tmp_path: Path) -> None:
    (tmp_path / "bom.txt").write_bytes("\ufeffhello".encode())
    result = toll("count", "bom.txt", "--json", cwd=tmp_path)
    assert json.loads(result.stdout)["total"] == tokens.count("hello")


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda p: p.mkdir(), "is a directory, not a file"),
        (lambda p: None, "no such file"),
        (lambda p: p.write_bytes(b"\x89PNG\r\n\x1a\n\0\0"), "binary file (contains NUL bytes)"),
        (lambda p: p.write_bytes(b"caf\xe9"), "binary file (invalid UTF-8 at byte 3)"),
    ],
)
def test_unreadable_input_is_exit_2_with_one_line(
    tmp_path: Path, make: object, message: str
) -> None:
    target = tmp_path / "target"
    make(target)  # type: ignore[operator]
    result = toll("count", str(target))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"toll: error: {target}: {message}")
    assert result.stderr.count("\n") == 1


def test_usage_errors_are_exit_2() -> None:
    assert toll().returncode == 2
    assert toll("count").returncode == 2
    assert toll("frobnicate").returncode == 2
    result = toll("count", "-", "--chars-per-token", "4", stdin=b"x")
    assert result.returncode == 2
    assert "only applies with --estimate" in result.stderr
    result = toll("count", "-", "--estimate", "--chars-per-token", "0", stdin=b"x")
    assert result.returncode == 2
