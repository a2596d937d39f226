"""Gemini CLI's memory as its own loader reads it: gemini-cli-core's ``memoryDiscovery`` run
under node on the same fixture, compared with ``measure_memory(root, "gemini")``.

The loader's outputs for version 0.61.0 are recorded in
``tests/fixtures/surface/gemini-cli-core-0.61.0.json`` and always compared. With node and an
unpacked gemini-cli-core whose dependencies are installed (``TOLL_GEMINI_CORE=DIR``; made by
``npm pack @google/gemini-cli-core`` and ``npm install --omit=dev --ignore-scripts`` in the
unpacked folder) the loader itself is run as well; without them that comparison is skipped,
saying why.

What the loader sends is each chain file with its imports in place of their ``@path``
mentions, framed by ``<!-- Imported from: … -->`` comments and ``--- Context from: … ---``
lines (the host's framing: left out, as everywhere in pytest-toll) and trimmed. Counts agree
within one token per file.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core import tokens
from pytest_toll.surface.memory import measure_memory
from pytest_toll.surface.records import ALWAYS_ON, ON_DEMAND

ORACLE = Path(__file__).with_name("gemini_oracle.mjs")
RECORDED = Path(__file__).resolve().parents[1] / "fixtures/surface/gemini-cli-core-0.61.0.json"
_FRAMING = re.compile(r"<!-- Imported from: [^>]*-->\n|\n<!-- End of import from: [^>]*-->")
#: The fixtures: (name, context.fileName names or none, the file a tool touches).
CASES = (("default", (), "web/app.ts"), ("renamed", ("AGENTS.md", "CONTEXT.md"), "web/app.ts"))


def build(root: Path, names: tuple[str, ...]) -> None:
    """A repository whose memory exercises the chain, imports past the depth, a subfolder
    file loaded just in time, and (``names``) context.fileName."""

    def write(relative: str, text: str) -> None:
        (root / relative).parent.mkdir(parents=True, exist_ok=True)
        (root / relative).write_text(text, encoding="utf-8")

    (root / ".git").mkdir(parents=True)
    write("GEMINI.md", "# Shop\nConventions live in @docs/h1.md and nowhere else.\n")
    for hop in range(1, 8):
        write(f"docs/h{hop}.md", f"Rule {hop}: keep it short.\n@h{hop + 1}.md\n")
    write("web/GEMINI.md", "Web rules: components are small.\n")
    write("AGENTS.md", "Shared rules for every agent.\n")
    write("CONTEXT.md", "Context: the shop sells tea.\n")
    write("web/CONTEXT.md", "Web context.\n")
    if names:
        write(".gemini/settings.json", json.dumps({"context": {"fileName": list(names)}}))


def normalise(loaded: dict[str, Any], root: Path) -> dict[str, list[list[Any]]]:
    """The loader's output as (file relative to the root, tokens of its text unframed)."""
    counter = tokens.O200kCounter()
    real = os.path.realpath(root)

    def rows(items: list[dict[str, Any]]) -> list[list[Any]]:
        return [
            [
                Path(os.path.relpath(os.path.realpath(item["path"]), real)).as_posix(),
                counter.count(_FRAMING.sub("", item["content"]).strip()),
            ]
            for item in items
            if item["content"] is not None and item["content"].strip()
        ]

    return {"at_start": rows(loaded["at_start"]), "just_in_time": rows(loaded["just_in_time"])}


def ours(root: Path) -> dict[str, list[list[Any]]]:
    """measure_memory's files folded as the loader sends them: each chain file with the
    files it imports."""
    report = measure_memory(root, "gemini")
    at_start: list[list[Any]] = []
    for file in report.files:
        if file.loaded == ALWAYS_ON and file.via == "chain":
            at_start.append([file.path, file.tokens])
        elif file.loaded == ALWAYS_ON:
            at_start[-1][1] += file.tokens
    below = [[f.path, f.tokens] for f in report.files if f.loaded == ON_DEMAND]
    return {"at_start": at_start, "just_in_time": below}


def agree(measured: dict[str, list[list[Any]]], loader: dict[str, list[list[Any]]]) -> None:
    for key in ("at_start", "just_in_time"):
        assert [row[0] for row in measured[key]] == [row[0] for row in loader[key]], key
        for (name, counted), (_, expected) in zip(measured[key], loader[key]):
            files_folded = 1 + (6 if name == "GEMINI.md" else 0)
            assert abs(counted - expected) <= files_folded, (key, name, counted, expected)


@pytest.mark.parametrize(("case", "names", "touched"), CASES)
def test_measured_as_the_recorded_loader_read_it(
    tmp_path: Path, case: str, names: tuple[str, ...], touched: str
) -> None:
    build(tmp_path, names)
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert recorded["version"] == "0.61.0"
    agree(ours(tmp_path), recorded["cases"][case])


@pytest.mark.slow
@pytest.mark.parametrize(("case", "names", "touched"), CASES)
def test_measured_as_the_loader_itself_reads_it(
    tmp_path: Path, case: str, names: tuple[str, ...], touched: str
) -> None:
    core = os.environ.get("TOLL_GEMINI_CORE", "")
    if shutil.which("node") is None:
        pytest.skip("needs node to run gemini-cli-core's memory loader")
    if not core or not (Path(core) / "dist/src/utils/memoryDiscovery.js").is_file():
        pytest.skip("set TOLL_GEMINI_CORE to an unpacked @google/gemini-cli-core with its deps")
    build(tmp_path, names)
    done = subprocess.run(
        ["node", str(ORACLE), core, str(tmp_path), str(tmp_path / touched), *names],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    loaded = json.loads(done.stdout.strip().splitlines()[-1])
    agree(ours(tmp_path), normalise(loaded, tmp_path))
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    if loaded["version"] == recorded["version"]:
        assert normalise(loaded, tmp_path) == recorded["cases"][case]


def record(core: str, out: Path) -> None:
    """Write the recording: ``python -m tests.surface.test_gemini_oracle CORE``."""
    import tempfile

    cases: dict[str, Any] = {}
    version = ""
    for case, names, touched in CASES:
        with tempfile.TemporaryDirectory() as folder:
            root = Path(folder)
            build(root, names)
            done = subprocess.run(
                ["node", str(ORACLE), core, str(root), str(root / touched), *names],
                capture_output=True, text=True, timeout=60, check=True,
            )  # fmt: skip
            loaded = json.loads(done.stdout.strip().splitlines()[-1])
            version = loaded["version"]
            cases[case] = normalise(loaded, root)
    data = {"loader": "@google/gemini-cli-core memoryDiscovery", "version": version}
    out.write_text(json.dumps({**data, "cases": cases}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    import sys

    record(sys.argv[1], RECORDED)
