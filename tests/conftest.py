from __future__ import annotations

import gzip
import hashlib
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

# Imported here, before any pytester run: an in-process run removes the modules it imported
# first, and a YAML library imported again beside its C parser (which keeps the first
# import's event and error classes) reads every ledger as empty. A real pytest process
# imports it once; so does the suite.
import ruamel.yaml  # noqa: F401
import yaml  # noqa: F401

from pytest_toll.core import tokens
from pytest_toll.definitions.mcp import stdio

# Other projects' skill folders, kept as test data: their test_*.py templates are not tests.
collect_ignore_glob = ["fixtures/real_repos/*"]

#: Every pytest run this suite starts (pytester's, in process or not, and subprocess ones that
#: inherit the environment) leaves out the plugins the test extras install that none of them
#: uses: langsmith's (installed with LangChain), respx's, pytest-recording's and hypothesis's.
#: Importing them cost every pytest process started here about 3 CPU-seconds (`pytest -q` on
#: one test: 3.6 s with them, 0.55 s without), a fifth of the whole suite's CPU time. A run
#: that needs one names it (``-p respx`` unblocks it).
INNER_PYTEST_ADDOPTS = "-p no:langsmith_plugin -p no:respx -p no:recording -p no:hypothesispytest"

# tiktoken caches a downloaded vocabulary under sha1(its URL); placing our shipped file there
# lets tiktoken build its own o200k_base with no network, to serve as the reference.
TIKTOKEN_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture(scope="session", autouse=True)
def _inner_runs_leave_out_unused_plugins() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PYTEST_ADDOPTS", INNER_PYTEST_ADDOPTS)
        yield


@pytest.fixture
def pytester(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """pytester itself, with ``PYTEST_ADDOPTS`` (which it clears) set to INNER_PYTEST_ADDOPTS."""
    monkeypatch.setenv("PYTEST_ADDOPTS", INNER_PYTEST_ADDOPTS)
    return pytester


@pytest.fixture(scope="session")
def reference_o200k(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """tiktoken's own ``o200k_base``, loaded through its cache with no network."""
    import os

    import tiktoken
    import tiktoken.registry

    cache_dir = tmp_path_factory.mktemp("tiktoken-cache")
    cache_name = hashlib.sha1(TIKTOKEN_O200K_URL.encode()).hexdigest()
    with gzip.open(tokens.VOCABULARY_PATH) as source, (cache_dir / cache_name).open("wb") as out:
        shutil.copyfileobj(source, out)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache_dir)
    tiktoken.registry.ENCODINGS.pop("o200k_base", None)
    try:
        yield tiktoken.get_encoding("o200k_base")
    finally:
        tiktoken.registry.ENCODINGS.pop("o200k_base", None)
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


@pytest.fixture
def altered_vocabulary(tmp_path: Path) -> Path:
    """A copy of the vocabulary with one rank changed: valid gzip, wrong hash."""
    data = gzip.decompress(tokens.VOCABULARY_PATH.read_bytes())
    altered = tmp_path / "o200k_base.tiktoken.gz"
    altered.write_bytes(gzip.compress(data.replace(b" 0\n", b" 1\n", 1)))
    return altered


@pytest.fixture(params=["select", "threads"])
def stdio_pump(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each stdio case through both pumps: the thread pump is the one Windows uses, tested
    here on every platform."""
    monkeypatch.setattr(stdio, "_PUMP", request.param)
    return str(request.param)
