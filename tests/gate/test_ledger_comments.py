"""Property: every rewrite keeps each comment and blank line right before the key it preceded."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.gate.ledger import DELETE, load_ledger, rewrite_ledger

COMMENTS = st.lists(
    st.sampled_from(["", "# --- section ---", "# why this pin", "#", "# owned by docs"]),
    max_size=2,
)


@st.composite
def ledgers(draw: st.DrawFn) -> tuple[list[tuple[str, list[str]]], dict[tuple[str, ...], object]]:
    """(lines of a ledger, each with the comment lines before it) and an update plan."""
    servers = draw(st.lists(st.sampled_from(["files", "web", "db"]), unique=True, max_size=3))
    tests = draw(st.lists(st.sampled_from(["t.py::a", "t.py::b", "t.py::c"]), unique=True))
    lines: list[tuple[str, str]] = [("version: 1", "")]
    if servers:
        lines.append(("servers:", ""))
        for number, name in enumerate(servers):
            lines.append((f"  {name}:", "  "))
            lines.append((f"    tools_file: {name}.json", "    "))
            if draw(st.booleans()):
                lines.append((f"    pin: {50 + number}", "    "))
            if draw(st.booleans()):
                lines.append(("    tools:", "    "))
                lines.append((f"      {name}_one: 20", "      "))
                lines.append((f"      {name}_two: 30", "      "))
    if tests:
        lines.append(("tests:", ""))
        lines.extend((f"  {name}: {{pin: 7}}", "  ") for name in tests)
    decorated = [
        (line, [f"{indent}{c}" if c else "" for c in draw(COMMENTS)]) for line, indent in lines
    ]
    trailing = [f"{c}" for c in draw(COMMENTS)]
    decorated.append(("", trailing))
    keys: list[tuple[str, ...]] = [("servers", name, "pin") for name in servers]
    keys += [
        ("servers", name, "tools", f"{name}_{tool}") for name in servers for tool in ("one", "two")
    ]
    keys += [("tests", name) for name in tests]
    keys += [("tests", "t.py::new", "pin")]
    keys += [("servers", name, "budget") for name in servers]
    plan: dict[tuple[str, ...], object] = {}
    for key in draw(st.lists(st.sampled_from(keys), unique=True, max_size=5)):
        plan[key] = DELETE if key[0] == "tests" and key[-1] != "pin" else draw(st.integers(0, 99))
        if draw(st.booleans()):
            plan[key] = DELETE
    return decorated, plan


def _key_of(line: str) -> str:
    return (
        line.split(":", 1)[0].strip() if line.strip() and not line.lstrip().startswith("#") else ""
    )


def _key_paths(lines: list[str]) -> list[tuple[str, ...] | None]:
    """Each line's path of keys from the top (None for comments and blank lines)."""
    paths: list[tuple[str, ...] | None] = []
    stack: list[tuple[int, str]] = []
    for line in lines:
        key = re.match(r"(\s*)(.+?):(\s|$)", line)
        if not _key_of(line) or key is None:
            paths.append(None)
            continue
        indent = len(key.group(1))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        stack.append((indent, key.group(2)))
        paths.append(tuple(name for _, name in stack))
    return paths


@settings(max_examples=50, deadline=None)
@given(ledgers())
def test_comments_stay_before_their_key(
    case: tuple[list[tuple[str, list[str]]], dict[tuple[str, ...], object]],
) -> None:
    decorated, plan = case
    text = "".join(
        "".join(f"{c}\n" for c in before) + (f"{line}\n" if line else "")
        for line, before in decorated
    )
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "toll.yaml"
        path.write_text(text)
        load_ledger(path)
        rewrite_ledger(path, plan)
        new = path.read_text()
        load_ledger(path)
    new_lines = new.split("\n")[:-1]
    old_comments = [c for _, before in decorated for c in before]
    new_comments = [line for line in new_lines if not _key_of(line)]
    # Nothing lost and nothing added: the same comment and blank lines, in the same order.
    assert new_comments == old_comments
    # Each surviving key, found by its path (a line such as "tools:" repeats under each
    # server, and one may vanish or change while a later twin survives), is preceded by
    # exactly the comment lines that preceded it.
    old_paths = _key_paths([line for line, _ in decorated])
    new_paths = _key_paths(new_lines)
    for (line, before), key_path in zip(decorated, old_paths):
        if not line or not before or key_path not in new_paths:
            continue  # no comments to keep, or removed by the plan
        at = new_paths.index(key_path)
        assert new_lines[at - len(before) : at] == before, (text, new)
