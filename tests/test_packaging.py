"""The release files: `python -m build` makes an sdist and a wheel from it, `twine check`
passes, the wheel holds every file of the package (the vocabulary, the schemas, every data
file in every subfolder), and the sdist holds the tests and the examples.

Built once per module, from a copy of this tree (the build writes ``*.egg-info`` and
``build/`` where it runs), with no network: ``--no-isolation`` uses the setuptools the test
extra installs. That the wheel measures when installed alone is .ci/run's job: it installs
the wheel into a fresh venv and runs the demo gate there.
"""

from __future__ import annotations

import gzip
import hashlib
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from email.parser import Parser
from pathlib import Path

import pytest

from pytest_toll._version import __version__
from pytest_toll.core.tokens import VOCABULARY_SHA256

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
NOT_SOURCE = (
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".pytest_cache",
    ".hypothesis", ".mypy_cache", ".ruff_cache", "node_modules",
)  # fmt: skip


def source_files(folder: str) -> set[str]:
    """The files under ``folder`` of this tree, relative to the root, caches left out."""
    found = set()
    for path in (ROOT / folder).rglob("*"):
        relative = path.relative_to(ROOT)
        if path.is_file() and not any(relative.match(f"{p}") or p in relative.parts for p in NOT_SOURCE):  # fmt: skip
            found.add(relative.as_posix())
    return found


class Built:
    def __init__(self, sdist: Path, wheel: Path) -> None:
        self.sdist, self.wheel = sdist, wheel
        with tarfile.open(sdist) as archive:
            prefix = f"pytest_toll-{__version__}/"
            self.sdist_files = {
                member.name.removeprefix(prefix)
                for member in archive.getmembers()
                if member.isfile()
            }
            pkg_info = archive.extractfile(prefix + "PKG-INFO")
            assert pkg_info is not None
            self.sdist_metadata = Parser().parsestr(pkg_info.read().decode("utf-8"))
        with zipfile.ZipFile(wheel) as archive:
            self.wheel_files = set(archive.namelist())
            info = f"pytest_toll-{__version__}.dist-info/"
            self.wheel_metadata = Parser().parsestr(archive.read(info + "METADATA").decode())
            self.entry_points = archive.read(info + "entry_points.txt").decode()
            self.vocabulary = archive.read("pytest_toll/data/o200k_base.tiktoken.gz")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    tree = tmp_path_factory.mktemp("source") / "pytest-toll"
    shutil.copytree(ROOT, tree, ignore=shutil.ignore_patterns(*NOT_SOURCE), symlinks=True)
    out = tree.parent / "dist"
    result = subprocess.run(
        [sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(tree)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    yield Built(sdist, wheel)


def test_build_names_both_files_by_the_version(built: Built) -> None:
    assert built.sdist.name == f"pytest_toll-{__version__}.tar.gz"
    assert built.wheel.name == f"pytest_toll-{__version__}-py3-none-any.whl"
    assert built.wheel_metadata["Version"] == built.sdist_metadata["Version"] == __version__


def test_twine_check_passes(built: Built) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "twine", "check", "--strict", str(built.sdist), str(built.wheel)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("PASSED") == 2


def test_the_wheel_holds_every_file_of_the_package(built: Built) -> None:
    package = source_files("pytest_toll")
    assert package - built.wheel_files == set()
    # Named, so a reader sees what a missing glob would cost a user.
    for data in ("o200k_base.tiktoken.gz", "o200k_probe.json", "ledger.schema.json",
                 "report.schema.json", "models.yaml", "VOCABULARY.md"):  # fmt: skip
        assert f"pytest_toll/data/{data}" in built.wheel_files
    assert "pytest_toll/py.typed" in built.wheel_files
    # Only the package and its metadata: no tests, examples or build droppings.
    assert {name.split("/")[0] for name in built.wheel_files} == {
        "pytest_toll",
        f"pytest_toll-{__version__}.dist-info",
    }


def test_the_wheel_vocabulary_is_the_pinned_one(built: Built) -> None:
    digest = hashlib.sha256(gzip.decompress(built.vocabulary)).hexdigest()
    assert digest == VOCABULARY_SHA256


def test_the_wheel_declares_the_plugin_the_command_and_the_dependencies(built: Built) -> None:
    assert "[pytest11]\ntoll = pytest_toll.plugin" in built.entry_points
    assert "[console_scripts]\ntoll = pytest_toll.cli:main" in built.entry_points
    requires = built.wheel_metadata.get_all("Requires-Dist") or []
    for dependency in ("pytest>=7.4", "tiktoken>=0.7", "PyYAML>=6.0", "ruamel.yaml>=0.18"):
        assert dependency in requires
    assert built.wheel_metadata["Requires-Python"] == ">=3.10"
    assert built.wheel_metadata["License-Expression"] == "MIT"
    # The long description is the README, rendered by the index as Markdown.
    assert built.wheel_metadata["Description-Content-Type"] == "text/markdown"


def test_the_sdist_holds_the_tests_examples_and_docs(built: Built) -> None:
    expected = set()
    for folder in ("pytest_toll", "tests", "examples", "docs", "bench", ".github"):
        expected |= source_files(folder)
    expected |= {"README.md", "LICENSE", "CHANGELOG.md", "pyproject.toml", "toll.yaml.example",
                 "ci/lowest.txt", ".ci/run"}  # fmt: skip
    assert expected - built.sdist_files == set()
    assert not {
        name for name in built.sdist_files if "__pycache__" in name or name.endswith(".pyc")
    }
