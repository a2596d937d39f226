"""The docs teach what the code does: generated pages and outputs match it, snippets run.

- the CLI reference (docs/cli/) is what ``docs/gen/cli_reference.py`` makes from the parsers;
- every console output in README.md and docs/ is what ``docs/gen/examples.py`` gets by running
  the command on the demo, and a changed demo figure fails that check;
- every ``python`` block runs (in a copy of the demo: as a script, or as a test file under
  ``pytest --toll`` when marked ``<!-- example: pytest in the demo -->``);
- no hand-pasted output outside the generated regions; every include exists; the README
  stays one screen to green.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEMO = ROOT / "examples" / "demo"
GENERATORS = ROOT / "docs" / "gen"
FENCE = re.compile(
    r"^(?P<indent>[ \t]*)```(?P<lang>[a-z]*)\n(?P<body>.*?)^(?P=indent)```$", re.S | re.M
)
REGION = re.compile(r"<!-- gen:[a-z0-9-]+ -->\n.*?<!-- /gen -->", re.S)
PYTEST_MARKER = "<!-- example: pytest in the demo -->"
SCRIPT_MARKER = "<!-- example: script in the demo -->"


def doc_files() -> list[Path]:
    return [ROOT / "README.md", DEMO / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def environment(tmp_path: Path) -> dict[str, str]:
    """Without the outer run's pytest, xdist and CI variables, and with a cache of its own.
    ``PYTEST_ADDOPTS`` stays: it leaves out plugins no run here uses (tests/conftest.py)."""
    dropped = ("PYTEST_", "GITHUB_", "COV_CORE_", "TOLL_")
    env = {
        key: value
        for key, value in os.environ.items()
        if key == "PYTEST_ADDOPTS" or not key.startswith(dropped)
    }
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    return env


def generator(tmp_path: Path, script: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(GENERATORS / script), *args],
        cwd=ROOT,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_the_cli_reference_is_what_the_parsers_say(tmp_path: Path) -> None:
    result = generator(tmp_path, "cli_reference.py", "--check")
    assert result.returncode == 0, result.stderr


def test_a_page_edited_by_hand_fails_the_cli_check(tmp_path: Path) -> None:
    pages = tmp_path / "cli"
    shutil.copytree(ROOT / "docs" / "cli", pages)
    page = pages / "definitions.md"
    text = page.read_text(encoding="utf-8")
    assert "| `--window` | `N` | `1000000` |" in text
    page.write_text(text.replace("`1000000`", "`200000`"), encoding="utf-8")
    result = generator(tmp_path, "cli_reference.py", "--check", "--pages", str(pages))
    assert result.returncode == 1
    assert "+| `--window` | `N` | `1000000` |" in result.stderr
    assert "run `python docs/gen/cli_reference.py`" in result.stderr


@pytest.mark.slow
def test_every_output_in_the_docs_is_what_the_command_prints(tmp_path: Path) -> None:
    result = generator(tmp_path, "examples.py", "--check")
    assert result.returncode == 0, result.stderr


def test_a_changed_demo_figure_fails_the_check_until_the_docs_are_regenerated(
    tmp_path: Path,
) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    server = demo / "notes_server.py"
    text = server.read_text(encoding="utf-8")
    sentence = "Returns the note's Markdown body, its tags and when it was last edited."
    assert sentence in text
    server.write_text(text.replace(sentence, "Returns the note's Markdown body."), encoding="utf-8")
    result = generator(
        tmp_path, "examples.py", "--check", "--only", "weigh-demo", "--demo", str(demo)
    )
    assert result.returncode == 1, result.stdout + result.stderr
    # The diff names the file and shows the committed figure against the new one.
    assert "docs/definitions.md (committed)" in result.stderr
    assert re.search(r"^-\s+84\s+33\s+37\s+-\s+read_note$", result.stderr, re.M), result.stderr
    assert re.search(r"^\+\s+\d+\s+\d+\s+37\s+-\s+read_note$", result.stderr, re.M), result.stderr
    assert "run `python docs/gen/examples.py`" in result.stderr


@dataclass(frozen=True)
class Snippet:
    path: Path
    line: int
    code: str
    as_test: bool

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def python_snippets() -> list[Snippet]:
    snippets = []
    for path in doc_files():
        text = path.read_text(encoding="utf-8")
        for fence in FENCE.finditer(text):
            if fence.group("lang") != "python":
                continue
            before = text[: fence.start()].rstrip().splitlines()
            marker = before[-1].strip() if before else ""
            code = "\n".join(
                line.removeprefix(fence.group("indent"))
                for line in fence.group("body").splitlines()
            )
            line = text.count("\n", 0, fence.start()) + 1
            snippets.append(Snippet(path, line, code, marker == PYTEST_MARKER))
    return snippets


SNIPPETS = python_snippets()


def test_the_docs_hold_python_snippets_of_both_kinds() -> None:
    assert any(snippet.as_test for snippet in SNIPPETS)
    assert any(not snippet.as_test for snippet in SNIPPETS)


@pytest.mark.parametrize("snippet", SNIPPETS, ids=str)
def test_every_python_snippet_runs(snippet: Snippet, tmp_path: Path) -> None:
    demo = tmp_path / "demo"
    shutil.copytree(DEMO, demo, ignore=shutil.ignore_patterns("__pycache__", ".pytest_cache"))
    if snippet.as_test:
        (demo / "tests" / "test_from_the_docs.py").write_text(snippet.code, encoding="utf-8")
        argv = ["-m", "pytest", "-p", "no:cacheprovider", "--toll", "tests/test_from_the_docs.py"]
    else:
        (demo / "from_the_docs.py").write_text(snippet.code, encoding="utf-8")
        argv = ["from_the_docs.py"]
    result = subprocess.run(
        [sys.executable, *argv],
        cwd=demo,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, f"{snippet}:\n{result.stdout}\n{result.stderr}"
    if snippet.as_test:
        assert re.search(r"\b[1-9]\d* passed\b", result.stdout), result.stdout


def test_no_output_is_pasted_by_hand() -> None:
    """A console or text block outside a generated region may show commands, not output."""
    pasted = []
    for path in doc_files():
        if path.parent.name == "cli":  # generated whole by cli_reference.py (usage lines)
            continue
        text = REGION.sub("", path.read_text(encoding="utf-8"))
        for fence in FENCE.finditer(text):
            if fence.group("lang") not in ("console", "text", ""):
                continue
            for line in fence.group("body").splitlines():
                stripped = line.strip()
                if stripped and not stripped.startswith(("$ ", "#")):
                    pasted.append(f"{path.relative_to(ROOT)}: {stripped[:80]}")
                    break
    assert not pasted, "output not made by docs/gen/examples.py:\n" + "\n".join(pasted)


def test_every_included_file_exists() -> None:
    included = []
    for path in doc_files():
        included += re.findall(r'^\s*-+8<-+\s+"([^"]+)"', path.read_text(encoding="utf-8"), re.M)
    assert "toll.yaml.example" in included
    assert "CHANGELOG.md" in included
    assert [name for name in included if not (ROOT / name).is_file()] == []


def test_the_readme_is_one_screen_to_green() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) <= 200
    first_screen = "\n".join(lines[:60])
    for command in ("pip install pytest-toll", "toll init", "pytest --toll toll.yaml"):
        assert command in first_screen, command
    assert "pipx install pytest-toll" in "\n".join(lines)
    assert "](docs/html-report.png)" in first_screen or "docs/html-report.png" in "\n".join(lines)


def test_a_verb_without_a_page_fails_the_cli_check(tmp_path: Path) -> None:
    """A new verb must be given a group (its page) and a row in the overview."""
    probe = (
        "import sys; sys.path.insert(0, sys.argv[1]); import cli_reference as reference; "
        "reference.VERBS.append(('brand-new', 'pytest_toll.cli.count', 'a verb nobody documented')); "
        "print('\\n'.join(reference.problems_with_groups()))"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(GENERATORS)],
        cwd=ROOT,
        env=environment(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines() == [
        "verb 'brand-new' is in no group of docs/gen/cli_reference.py: add it to GROUPS",
        "docs/cli/index.md: no row for `toll brand-new` in 'What each verb counts'",
    ]


def test_the_site_is_published_on_a_release_and_built_strictly() -> None:
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "docs.yml").read_text("utf-8"))
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as true
    assert triggers["push"]["tags"] == ["v*"]
    assert triggers["release"]["types"] == ["published"]
    assert workflow["permissions"] == {"contents": "read"}
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"] == {"contents": "write"}  # gh-deploy pushes gh-pages
    runs = [step.get("run", "") for step in publish["steps"]]
    assert any("mkdocs gh-deploy --strict --force" in run for run in runs)
    build = workflow["jobs"]["build"]
    assert any("mkdocs build --strict" in step.get("run", "") for step in build["steps"])
    # .ci/run builds the site strictly too, before the README's test command (the last line).
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert ".venv/bin/mkdocs build --strict" in ci
    assert ci.index(".venv/bin/mkdocs build --strict") < len(ci) - 1
    assert "site/" in (ROOT / ".gitignore").read_text(encoding="utf-8").splitlines()


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    """No broken link or anchor, no page left out of the nav, no missing include."""
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env={**environment(tmp_path), "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "site" / "cli" / "definitions" / "index.html").is_file()


@pytest.mark.parametrize(
    ("module", "page"),
    [
        ("pytest_toll.definitions.rules", "definitions.md"),
        ("pytest_toll.skills.rules", "skills.md"),
        ("pytest_toll.surface.rules", "surfaces.md"),
        ("pytest_toll.definitions.results", "results.md"),
    ],
)
def test_every_rule_and_threshold_is_on_its_page(module: str, page: str) -> None:
    """A new rule id or `limits:` name shows up in the docs, or this fails."""
    import importlib

    rules = importlib.import_module(module)
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    missing = [rule for rule in rules.RULE_IDS if f"| {rule} |" not in text]
    missing += [name for name in rules.DEFAULT_THRESHOLDS if f"`{name}`" not in text]
    assert not missing, f"docs/{page} does not name {missing}"
