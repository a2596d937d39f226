"""The terminal report of toll skills."""

from __future__ import annotations

from pathlib import Path

from pytest_toll.core import tokens
from pytest_toll.skills.measuring import measure_skills
from pytest_toll.skills.render import render_text
from tests.skills.skill_folders import meta, write_skill


def test_text_report(tmp_path: Path) -> None:
    folder = write_skill(
        tmp_path / "notes",
        body="Read references/a.md and assets/b.bin.\n",
        files={"references/a.md": "alpha beta", "assets/b.bin": b"\0\1"},
    )
    report = measure_skills(folder, window=1000)
    metadata, body = meta("notes"), tokens.count("Read references/a.md and assets/b.bin.\n")
    reference = tokens.count("alpha beta")
    text = render_text(report).splitlines()
    assert text == [
        "metadata  body  lines  references  skill",
        f"{metadata:>8}  {body:>4}      1  {reference:>10}  notes  ({folder.as_posix()})",
        " " * 37 + "assets/b.bin: binary, not counted",
        " " * 37 + f"references/a.md: {reference}",
        f"{metadata:>8}  {body:>4}         {reference:>10}  total (1 skill)",
        f"always loaded: {metadata} tokens of metadata, ~{100 * metadata / 1000:.2g}% of a "
        "1,000-token window; bodies load on activation, references on demand",
        "method: o200k (o200k_base)",
    ]
