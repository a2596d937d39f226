"""``toll usage --fix --write`` writes a host's settings into the repository: a link on the
way (a hostile repository's ``.codex -> /elsewhere``) must never take the write outside it,
and a settings file that links out is not read."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_toll.core.errors import CouldNotJudge, UsageError
from pytest_toll.definitions.host_config import CODEX_CONFIG, Proposal, _codex, write_proposals

CODEX_TABLE = '[mcp_servers.files]\ncommand = "python3"\n'


def _proposal(path: str) -> Proposal:
    return Proposal("codex", Path(path), "[mcp_servers.files] enabled = false", 10, "x = 1\n")


@pytest.mark.parametrize("linked", [".codex", ".codex/config.toml"])
def test_a_link_on_the_way_writes_nothing_anywhere(tmp_path: Path, linked: str) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    root.mkdir()
    (outside / ".codex").mkdir(parents=True)
    (outside / ".codex" / "config.toml").write_text(CODEX_TABLE, encoding="utf-8")
    if linked == ".codex":
        os.symlink(outside / ".codex", root / ".codex")
    else:
        (root / ".codex").mkdir()
        os.symlink(outside / ".codex" / "config.toml", root / ".codex" / "config.toml")
    # The good proposal comes first: every path is checked before anything is written.
    proposals = [_proposal(".gemini/settings.json"), _proposal(str(CODEX_CONFIG))]
    with pytest.raises(UsageError, match="nothing written"):
        write_proposals(root, proposals)
    assert (outside / ".codex" / "config.toml").read_text(encoding="utf-8") == CODEX_TABLE
    assert not (root / ".gemini").exists()


def test_a_path_that_climbs_out_is_refused(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="outside"):
        write_proposals(tmp_path, [_proposal("../settings.json")])


def test_a_settings_file_that_links_out_is_not_read(tmp_path: Path) -> None:
    root, outside = tmp_path / "repo", tmp_path / "outside"
    (root / ".codex").mkdir(parents=True)
    outside.mkdir()
    (outside / "config.toml").write_text(CODEX_TABLE, encoding="utf-8")
    os.symlink(outside / "config.toml", root / ".codex" / "config.toml")
    with pytest.raises(CouldNotJudge, match="outside"):
        _codex(root, "files", None, 10)
