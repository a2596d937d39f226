"""Property tests of the Files and Parsing doors (issue 34): on arbitrary bytes each loader
gives a value or its own error, never another exception; a value holds no lone surrogate;
a third-party id joins under its root or not at all; the import scan's code spans are those
of the search it replaced."""

from __future__ import annotations

import os
import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core.parse import ParseError, load_json, load_toml, load_yaml
from pytest_toll.core.textio import join_inside, walk_inside
from pytest_toll.surface.imports import _code_span_ranges

_SURROGATE = re.compile("[\ud800-\udfff]")

#: Bytes that look like documents more often than plain noise does.
_PIECES = st.sampled_from(
    [b"{", b"}", b"[", b"]", b'"', b":", b",", b"1", b"-", b"e999", b"&a", b"*a", b"\n", b"  ",
     b"- ", b"a", b"\\ud800", b"\\u0000", b"\xff", b"\xed\xa0\x80", b"=", b"true", b"null",
     b"9" * 70, b"!!python/object", b"---", b"'"]
)  # fmt: skip
DOCUMENTS = st.one_of(st.binary(max_size=300), st.lists(_PIECES, max_size=60).map(b"".join))


def _strings(value: object) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            found.append(item)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return found


@settings(max_examples=300, deadline=None)
@given(DOCUMENTS)
def test_each_loader_gives_a_value_or_its_own_error(data: bytes) -> None:
    for load in (load_json, load_yaml, load_toml):
        try:
            value = load(data, "doc")
        except ParseError as error:
            assert str(error).startswith("doc")
            continue
        assert not any(_SURROGATE.search(text) for text in _strings(value))


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40))
def test_a_joined_id_never_leaves_its_root(name: str) -> None:
    root = Path("/srv/store")
    joined = join_inside(root, name)
    if joined is not None:
        assert joined.parent == root
        assert os.path.normpath(joined) == str(joined)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(["`", "``", "```", "a", " ", "@x/y"]), max_size=40).map("".join))
def test_code_spans_are_those_of_a_search_for_each_closing_run(line: str) -> None:
    expected: list[tuple[int, int]] = []
    runs = [(m.start(), m.end()) for m in re.finditer("`+", line)]
    index = 0
    while index < len(runs):
        length = runs[index][1] - runs[index][0]
        closer = next(
            (j for j in range(index + 1, len(runs)) if runs[j][1] - runs[j][0] == length), None
        )
        if closer is None:
            index += 1
            continue
        expected.append((runs[index][0], runs[closer][1]))
        index = closer + 1
    assert _code_span_ranges(line) == expected


@settings(max_examples=50, deadline=None)
@given(st.lists(st.sampled_from(["a", "b", "c.md", "d.md"]), min_size=1, max_size=6))
def test_a_walk_lists_only_files_inside_its_root(parts: list[str]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "root"
        outside = Path(folder) / "outside"
        outside.mkdir()
        (outside / "x.md").write_text("x")
        deep = root.joinpath(*[p for p in parts if not p.endswith(".md")])
        deep.mkdir(parents=True)
        for name in parts:
            if name.endswith(".md"):
                (deep / name).write_text("x")
        (deep / "link").symlink_to(outside, target_is_directory=True)
        (deep / "file-link.md").symlink_to(outside / "x.md")
        for path in walk_inside(root, root, suffix=".md"):
            assert os.path.realpath(path).startswith(os.path.realpath(root) + os.sep)
