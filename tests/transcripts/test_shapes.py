"""Shapes and targets: shell commands become `$ verb`, tools keep their name."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.transcripts import shapes
from pytest_toll.transcripts.shapes import shape_of, shape_of_command


@pytest.mark.parametrize(
    ("command", "shape"),
    [
        ("git log --oneline", "$ git log"),
        ("cd /repo && git log -p", "$ git log"),
        ("cd /repo; cd src && git -C x --no-pager diff HEAD", "$ git diff"),
        ("sudo -u root timeout 30 env X=1 Y=2 git status", "$ git status"),
        ("timeout -s KILL 5m npm test", "$ npm test"),
        ("X=1 FOO=bar pytest -q", "$ pytest"),
        ("uv run pytest tests", "$ pytest"),
        ("python3 -c 'print(1)'", "$ python -c"),
        ('python -c "import sys; print(sys.path)"', "$ python -c"),
        ("python3.12 - <<'EOF'\nprint(1)\nEOF", "$ python -c"),
        ("node -e 'console.log(1)'", "$ node -e"),
        ("python -m pytest -x", "$ python -m pytest"),
        ("bash -c 'cd /x && make test'", "$ make"),
        ("/usr/bin/grep -rn TODO .", "$ grep"),
        ("cat a.py | head -5", "$ cat"),
        ("ls", "$ ls"),
        ("cd /repo", "$ cd"),
        ("echo 'unbalanced", "$ echo"),
        ("", "$ (empty)"),
    ],
)
def test_bash_shapes(command: str, shape: str) -> None:
    assert shape_of_command(command) == shape


def test_tool_shapes() -> None:
    assert shape_of("Bash", {"command": "git log"}) == "$ git log"
    assert shape_of("shell", {"command": ["bash", "-lc", "sudo git status"]}) == "$ git status"
    assert shape_of("shell", {"command": ["rg", "-n", "x"]}) == "$ rg"
    assert shape_of("exec_command", {"cmd": "cargo build --release"}) == "$ cargo build"
    assert shape_of("Read", {"file_path": "/x"}) == "Read"
    assert shape_of("mcp__github__get_issue", {"n": 1}) == "mcp__github__get_issue"


@settings(max_examples=300, deadline=None)
@given(command=st.text(max_size=200))
def test_any_command_has_a_shape(command: str) -> None:
    shape = shape_of_command(command)
    assert shape.startswith("$ ") and len(shape) > 2


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "git",
                "log",
                " ",
                "  ",
                "\t",
                "\r",
                "\n",
                ";",
                "&",
                "|",
                "&&",
                "||",
                "|&",
                ">",
                "2>",
                "$(",
                ")",
                "x=1",
                "-C",
                "/usr/bin/",
                "~",
                "*",
                "#",
                "é",
                "日本",
                "sudo",
                "cd",
                ".",
            ]
        ),
        max_size=40,
    )
)
def test_unquoted_commands_split_as_shlex_splits_them(parts: list[str]) -> None:
    # The quote-free fast path must give shlex's words exactly, or shapes would change.
    command = "".join(parts)
    assert shapes._split_command(command) == shapes._shlex_words(command)
