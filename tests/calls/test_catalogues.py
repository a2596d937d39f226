"""The skills catalogue a call advertises, from text, records or a folder."""

from __future__ import annotations

from typing import Any

from pytest_toll.calls.catalogues import skills_catalogue
from pytest_toll.calls.measuring import measure
from tests.calls.calls_data import count


def test_skills_from_a_folder_are_their_metadata_lines(tmp_path: Any) -> None:
    for name, description in (
        ("alpha", "Does alpha things. Use it for alpha."),
        ("beta", "Beta helper."),
    ):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "SKILL.md").write_text(
            f"---\nname: {name}\ndescription: {description}\n---\n# {name}\nBody.\n",
            encoding="utf-8",
        )
    catalogue = skills_catalogue(str(tmp_path))
    assert catalogue == "alpha: Does alpha things. Use it for alpha.\nbeta: Beta helper."
    assert skills_catalogue("plain catalogue text") == "plain catalogue text"
    result = measure(
        "gpt-6.2-sol", messages=[{"role": "user", "content": "hi"}], skills=str(tmp_path)
    )
    assert result.parts["skills"].tokens == count(f"{catalogue}\n\nhi") - count("hi")
