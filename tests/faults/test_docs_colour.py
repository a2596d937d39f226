"""``docs/gen/examples.py --check`` gives the same result whatever colour variables the caller's
shell sets (issue #34, door 8): ``PY_COLORS=1`` outranks ``NO_COLOR`` in pytest, so the gate's
examples came out in ANSI colour and the check failed on an unchanged tree."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from tests.test_docs import GENERATORS, ROOT, environment

#: What a developer's or a CI runner's shell may set.
COLOURFUL = {
    "PY_COLORS": "1",
    "FORCE_COLOR": "1",
    "CLICOLOR": "1",
    "CLICOLOR_FORCE": "1",
    "COLORTERM": "truecolor",
    "TERM": "xterm-256color",
}


def _examples(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("docs_examples", GENERATORS / "examples.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    # Its dataclasses look their module up by name while the class is made.
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


def test_the_generators_environment_turns_every_colour_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in COLOURFUL.items():
        monkeypatch.setenv(name, value)
    (tmp_path / "work").mkdir()
    env = _examples(monkeypatch).clean_environment(tmp_path / "work")
    assert env["NO_COLOR"] == "1" and env["PY_COLORS"] == "0" and env["TERM"] == "dumb"
    assert not {"FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM"} & set(env)


@pytest.mark.slow
def test_the_check_passes_in_a_colourful_shell(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(GENERATORS / "examples.py"), "--check", "--only", "gate-demo"],
        cwd=ROOT, env={**environment(tmp_path), **COLOURFUL},
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "\x1b[" not in result.stdout + result.stderr
