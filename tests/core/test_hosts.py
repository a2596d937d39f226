"""The hosts table: every fact has its source and the version it was read for."""

from __future__ import annotations

import pytest

from pytest_toll.core.hosts import BY_MEMORY, HOSTS, host_named


@pytest.mark.parametrize("name", sorted(HOSTS))
def test_every_fact_of_a_host_names_its_source(name: str) -> None:
    host = HOSTS[name]
    assert set(host.sources) == set(host.facts), name
    assert all(text.strip() for text in host.sources.values())
    assert host.versions.strip()


def test_hosts_are_found_by_name_and_by_memory_name() -> None:
    assert host_named("claude") is host_named("claude-code") is HOSTS["claude-code"]
    assert host_named("nobody") is None
    assert sorted(BY_MEMORY) == ["claude", "codex", "copilot", "cursor", "gemini"]


def test_claude_codes_import_chain_is_five_files_counting_the_root() -> None:
    assert HOSTS["claude-code"].import_hops == 4
    assert HOSTS["gemini-cli"].import_hops == 5  # maxDepth 5 below the root file
    assert HOSTS["codex"].import_hops == 0
