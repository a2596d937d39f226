"""Shared set-up for the transcript tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

BENCH_HISTORY = Path(__file__).resolve().parents[2] / "bench" / "history.py"


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small generated history (bench/history.py): both formats, subagents, a resumed
    session, most lines carrying no tool result."""
    spec = importlib.util.spec_from_file_location("bench_history", BENCH_HISTORY)
    assert spec is not None and spec.loader is not None
    module: Any = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    root = tmp_path_factory.mktemp("history")
    module.generate(root, 3.0, root / "texts.txt", seed=5, session_megabytes=0.15)
    (root / "texts.txt").unlink()
    return root


@pytest.fixture(autouse=True)
def _private_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test gets its own summary cache and no transcript roots from the environment."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("TOLL_TRANSCRIPTS", raising=False)
