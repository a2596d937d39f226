"""Every console output in the docs, made by running the command on a copy of the demo.

    python docs/gen/examples.py                     # rerun every example, rewrite the docs
    python docs/gen/examples.py --check             # exit 1 and show the diff on any drift
    python docs/gen/examples.py --check --only weigh-demo --demo /tmp/demo-copy

A region in README.md or a page under docs/ reads

    <!-- gen:weigh-demo -->
    ```console
    $ toll weigh -- python3 notes_server.py
    …the output…
    ```
    <!-- /gen -->

and everything between the two markers belongs to this script. Commands run in a temporary
copy of examples/demo (or of a test fixture), as real processes, with the environment cleaned
of anything that would change their output (CI variables, the user's cache, git config).
What still varies between runs — the temporary path, a local server's port, pytest's timings
and the width of its separator lines — is normalised the same way every time, so the check
is exact. tests/test_docs.py runs ``--check``: a changed demo figure fails CI until this
script has rewritten the docs.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DEMO = ROOT / "examples" / "demo"
FIXTURES = ROOT / "tests" / "fixtures"
#: The files whose regions this script owns.
DOC_FILES = ("README.md", "examples/demo/README.md", "docs/**/*.md")
REGION = re.compile(
    r"^(?P<indent>[ \t]*)<!-- gen:(?P<name>[a-z0-9-]+) -->\n(?P<body>.*?)^(?P=indent)<!-- /gen -->",
    re.S | re.M,
)
#: pytest's terminal width in every run, so its separator lines are the same everywhere.
COLUMNS = 88
#: Fixed author and dates for the commits the trend example reads (same bytes, same SHAs).
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "demo",
    "GIT_AUTHOR_EMAIL": "demo@example.com",
    "GIT_COMMITTER_NAME": "demo",
    "GIT_COMMITTER_EMAIL": "demo@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@dataclass(frozen=True)
class Excerpt:
    """A region showing part of a command's output: one pytest section (by its title), or
    the run of lines starting with ``line`` and the indented lines under them."""

    region: str
    section: str | None = None
    line: str | None = None


@dataclass(frozen=True)
class Show:
    """A command whose output goes into the region ``region``."""

    region: str
    command: str
    #: The exit code the command must end with; anything else means the example broke.
    exit_code: int = 0
    #: Keep only the first N lines of the output (the rest becomes "…").
    head: int | None = None
    #: More regions from the same run, each showing a part of its output.
    excerpts: tuple[Excerpt, ...] = ()
    #: Keep only the lines starting with one of these (each run of others becomes "…").
    keep: tuple[str, ...] = ()


@dataclass(frozen=True)
class ShowFile:
    """Part of a file of the working copy as it is at this step: from the first line that
    starts with ``start`` to the first blank line after it (a section of the ledger)."""

    region: str
    path: str
    start: str


@dataclass(frozen=True)
class ShowJson:
    """Part of a JSON file a command wrote (``select`` picks it from the parsed document)."""

    region: str
    path: str
    select: Callable[[Any], Any]


@dataclass(frozen=True)
class Edit:
    """Change a file of the working copy (``old`` must be there: the edit never misses)."""

    path: str
    old: str
    new: str


@dataclass(frozen=True)
class Commit:
    """Commit ``paths`` in the working copy's git repository at a fixed date."""

    paths: tuple[str, ...]
    message: str
    date: str


Step = Show | ShowFile | ShowJson | Edit | Commit


@dataclass(frozen=True)
class Scenario:
    """Steps run in order in one fresh copy of ``source``."""

    source: str
    steps: tuple[Step, ...]
    copies: dict[str, str] = field(default_factory=dict)


SEARCH_SENTENCE = 'Returns up to "\n            "`limit` matches'
LONGER_SEARCH = (
    'Searches are case-insensitive and "\n            "every word must appear somewhere in '
    'the note. Returns up to "\n            "`limit` matches'
)
READ_SENTENCE = "Returns the note's Markdown body, its tags and when it was last edited."
SHORTER_READ = "Returns the note's Markdown body and tags."

SKILL_MD = "skills/release-notes/SKILL.md"
LAST_RULE = "Never invent a change that is not in the log or the changelog."
GLOSSARY_RULE = "\nName every product term as [the glossary](references/glossary.md) does."
DEBT = (
    "rules:\n"
    '  S106: {severity: warn, reason: "the glossary lands with 2.4", '
    "subjects: [release-notes], until: 2026-12-31}\n"
)


def _skill_results(sarif: Any) -> list[Any]:
    """The SARIF results about the skill (the regression and the finding), rules aside."""
    return [
        result
        for result in sarif["runs"][0]["results"]
        if "release-notes" in result["partialFingerprints"]["tollEntry"]
    ]


SCENARIOS = (
    Scenario(
        source="demo",
        steps=(
            Commit(("toll.yaml",), "the demo's ledger, as committed", "2026-11-30T09:00:00+00:00"),
            Show("weigh-demo", "toll weigh -- python3 notes_server.py"),
            ShowFile("results-ledger", "toll.yaml", "servers:"),
            Show(
                "results-demo",
                "toll results --server notes --tool search_notes "
                """--args '{"query": "deploy"}' --args '{"query": "rota"}' --args '{"query": "x"}'""",
            ),
            Show("skills-demo", "toll skills skills"),
            Show(
                "measure-demo",
                'toll measure --model claude-sonnet-4-5 --server "python3 notes_server.py" --skills skills',
            ),
            Show("scan-demo", "toll scan --root transcripts"),
            Show("repeats-demo", "toll repeats --root transcripts"),
            Show("usage-demo", "toll usage"),
            Show("usage-fix-demo", "toll usage --host codex --host gemini-cli --fix"),
            Show(
                "gate-demo",
                "python -m pytest --toll",
                excerpts=(
                    Excerpt("capture-demo", line="tests::tests/test_agent_capture.py::"),
                    Excerpt("results-gate", line="servers::notes: results."),
                ),
            ),
            Edit("notes_server.py", SEARCH_SENTENCE, LONGER_SEARCH),
            Show(
                "gate-regressed",
                "python -m pytest --toll",
                exit_code=1,
                excerpts=(Excerpt("readme-regressed", section="servers::notes"),),
            ),
            Edit("notes_server.py", LONGER_SEARCH, SEARCH_SENTENCE),
            Edit("notes_server.py", READ_SENTENCE, SHORTER_READ),
            Show("gate-improved", "python -m pytest --toll --toll-update"),
            Commit(("toll.yaml",), "ratchet: read_note trimmed", "2026-12-01T09:00:00+00:00"),
            Show("trend-demo", "toll trend"),
            Show("fix-surface-demo", "toll fix --surface --host claude-code --host codex"),
            Show("fix-surface-write", "toll fix --surface --host claude-code --write"),
            Show("fix-surface-skills", "toll skills .claude/skills"),
        ),
    ),
    # A SKILL.md line that grows and names a file that is not there (S106), as a pull
    # request on GitHub sees it; then the finding acknowledged as debt with a due day, judged
    # the day before and the day after it (TOLL_TODAY stands in for the clock).
    Scenario(
        source="demo",
        steps=(
            Edit(SKILL_MD, LAST_RULE, LAST_RULE + GLOSSARY_RULE),
            Show(
                "places-github",
                "GITHUB_ACTIONS=true python -m pytest --toll --toll-sarif toll.sarif",
                exit_code=1,
                keep=("::",),
            ),
            ShowJson("places-sarif", "toll.sarif", _skill_results),
            Show(
                "debt-accept",
                "python -m pytest --toll --toll-update --toll-allow-increase",
                exit_code=1,
                keep=("skills::release-notes: S106", "ledger updated", "  skills::", "  tests::"),
            ),
            Edit("toll.yaml", "\nskills:\n", "\n" + DEBT + "\nskills:\n"),
            ShowFile("debt-ledger", "toll.yaml", "rules:"),
            Show(
                "debt-held",
                "TOLL_TODAY=2026-12-31 python -m pytest --toll",
                keep=("skills::release-notes: S106", "8 entries"),
            ),
            Show(
                "debt-due",
                "TOLL_TODAY=2027-01-01 python -m pytest --toll",
                exit_code=1,
                keep=("skills::release-notes: S106", "8 entries", "FAILED"),
            ),
        ),
    ),
    Scenario(
        source="fixtures",
        copies={"tools/pydantic_server.json": "pydantic_server.json"},
        steps=(
            Show(
                "fix-pydantic", "toll fix --tools pydantic_server.json --write fixed.json", head=14
            ),
            Show("fix-weigh-fixed", "toll weigh --tools fixed.json", head=10),
            Show("models-one", "toll models claude-sonnet-4-5"),
        ),
    ),
)


class ExampleBroke(Exception):
    """A command ended with another exit code than its example says: the docs would lie."""


#: Variables that turn colour on whatever NO_COLOR says (pytest reads PY_COLORS first, then
#: NO_COLOR, then FORCE_COLOR; other tools read CLICOLOR_FORCE), or tell a tool what the
#: terminal can show: the outputs in the docs are the same whatever the caller's shell sets.
COLOUR_VARIABLES = ("PY_COLORS", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE", "COLORTERM", "TERM")


def clean_environment(work: Path) -> dict[str, str]:
    """The environment a newcomer's shell would have: no CI, no cache, no git config, no
    colour."""
    dropped = ("PYTEST_", "GITHUB_", "COV_CORE_", "TOLL_", "ANTHROPIC_", "OPENAI_", "GIT_")
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(dropped) and key not in COLOUR_VARIABLES
    }
    home = work.parent / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        XDG_CACHE_HOME=str(work.parent / "cache"),
        XDG_CONFIG_HOME=str(home / ".config"),
        COLUMNS=str(COLUMNS),
        TZ="UTC",
        NO_COLOR="1",
        PY_COLORS="0",
        TERM="dumb",
        PYTHONIOENCODING="utf-8",
        **GIT_IDENTITY,
    )
    return env


def argv_of(command: str) -> list[str]:
    """The shown command as run: ``toll``, ``pytest`` and ``python`` by this Python."""
    words = _split(command)
    if words[0] == "python":
        return [sys.executable, *words[1:]]
    if words[0] == "toll":
        return [sys.executable, "-m", "pytest_toll", *words[1:]]
    if words[0] == "pytest":
        return [sys.executable, "-m", "pytest", *words[1:]]
    return words


def _split(command: str) -> list[str]:
    import shlex

    return shlex.split(command)


def shlex_join(words: list[str]) -> str:
    import shlex

    return shlex.join(words)


def run_scenario(scenario: Scenario, demo: Path, wanted: set[str] | None) -> dict[str, str]:
    """Run the steps up to the last one ``wanted`` names; return the wanted regions' bodies."""
    bodies: dict[str, str] = {}
    last = _last_wanted_step(scenario, wanted)
    with tempfile.TemporaryDirectory(prefix="toll-docs-") as scratch:
        work = Path(scratch) / "work"
        _prepare(scenario, demo, work)
        env = clean_environment(work)
        for index, step in enumerate(scenario.steps):
            if index > last:
                break
            if isinstance(step, Edit):
                _edit(work / step.path, step.old, step.new)
            elif isinstance(step, Commit):
                _commit(work, step, env)
            elif isinstance(step, ShowFile | ShowJson):
                if not wanted or step.region in wanted:
                    bodies[step.region] = _show_file(step, work)
            else:
                # A command before the last wanted one still runs: a later example may read
                # what it wrote (fix --write, then weigh the written file).
                made = _show(step, work, env)
                bodies.update(
                    (region, body)
                    for region, body in made.items()
                    if not wanted or region in wanted
                )
    return bodies


def _last_wanted_step(scenario: Scenario, wanted: set[str] | None) -> int:
    if wanted is None:
        return len(scenario.steps) - 1
    indexes = [
        index
        for index, step in enumerate(scenario.steps)
        if isinstance(step, Show | ShowFile | ShowJson) and wanted & set(_regions_of(step))
    ]
    return max(indexes, default=-1)


def _prepare(scenario: Scenario, demo: Path, work: Path) -> None:
    if scenario.source == "demo":
        ignore = shutil.ignore_patterns("__pycache__", ".pytest_cache", "*.html")
        shutil.copytree(demo, work, ignore=ignore)
    else:
        work.mkdir(parents=True)
    for source, target in scenario.copies.items():
        shutil.copyfile(FIXTURES / source, work / target)


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    if old not in text:
        raise ExampleBroke(f"{path.name} no longer contains {old!r}: update docs/gen/examples.py")
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def _commit(work: Path, step: Commit, env: dict[str, str]) -> None:
    dated = {**env, "GIT_AUTHOR_DATE": step.date, "GIT_COMMITTER_DATE": step.date}
    git = ["git", "-c", "init.defaultBranch=main", "-c", "commit.gpgsign=false"]
    if not (work / ".git").exists():
        subprocess.run([*git, "init", "-q"], cwd=work, env=dated, check=True)
    subprocess.run([*git, "add", *step.paths], cwd=work, env=dated, check=True)
    subprocess.run([*git, "commit", "-q", "-m", step.message], cwd=work, env=dated, check=True)


def _regions_of(step: Show | ShowFile | ShowJson) -> list[str]:
    if isinstance(step, ShowFile | ShowJson):
        return [step.region]
    return [step.region, *(excerpt.region for excerpt in step.excerpts)]


def _show_file(step: ShowFile | ShowJson, work: Path) -> str:
    path = work / step.path
    if not path.is_file():
        raise ExampleBroke(f"{step.region}: {step.path} is not there")
    text = path.read_text(encoding="utf-8")
    if isinstance(step, ShowJson):
        try:
            picked = step.select(json.loads(text))
        except (LookupError, StopIteration, ValueError) as error:
            raise ExampleBroke(
                f"{step.region}: nothing to show in {step.path}: {error!r}"
            ) from None
        shown = json.dumps(picked, indent=2, ensure_ascii=False)
        return "```json\n" + normalise(shown, work) + "\n```\n"
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith(step.start)), None)
    if start is None:
        raise ExampleBroke(f"{step.region}: no line starting {step.start!r} in {step.path}")
    end = next((i for i in range(start, len(lines)) if not lines[i].strip()), len(lines))
    return "```yaml\n" + "\n".join(lines[start:end]) + "\n```\n"


def _assignments(words: list[str]) -> tuple[dict[str, str], list[str]]:
    """``NAME=value`` words before the command, as a shell reads them: its environment."""
    assigned: dict[str, str] = {}
    while words and re.fullmatch(r"[A-Z_][A-Z0-9_]*=.*", words[0]):
        name, _, value = words.pop(0).partition("=")
        assigned[name] = value
    return assigned, words


def _show(step: Show, work: Path, env: dict[str, str]) -> dict[str, str]:
    assigned, words = _assignments(_split(step.command))
    result = subprocess.run(
        argv_of(shlex_join(words)),
        cwd=work,
        env={**env, **assigned},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        encoding="utf-8",
        timeout=300,
    )
    output = normalise(result.stdout, work)
    if result.returncode != step.exit_code:
        raise ExampleBroke(
            f"{step.region}: `{step.command}` exited {result.returncode}, "
            f"the example expects {step.exit_code}:\n{output}"
        )
    lines = output.splitlines()
    shown = _kept(lines, step.keep) if step.keep else lines
    bodies = {step.region: _block(step.command, shown, step.head)}
    for excerpt in step.excerpts:
        part = (
            _section(lines, excerpt, step) if excerpt.section else _indented(lines, excerpt, step)
        )
        bodies[excerpt.region] = _block(step.command, ["…", *part, "…"], None)
    return bodies


def _kept(lines: list[str], prefixes: tuple[str, ...]) -> list[str]:
    """The lines starting with one of ``prefixes``; each run of the others is one "…"."""
    kept: list[str] = []
    for line in lines:
        if line.startswith(prefixes):
            kept.append(line)
        elif not kept or kept[-1] != "…":
            kept.append("…")
    return kept


def _block(command: str, lines: list[str], head: int | None) -> str:
    if head is not None and len(lines) > head:
        lines = [*lines[:head], "…"]
    return "```console\n$ " + command + "\n" + "\n".join(lines) + "\n```\n"


def _indented(lines: list[str], excerpt: Excerpt, step: Show) -> list[str]:
    """The first line starting with ``excerpt.line``, the lines right after it that start the
    same way (one entry's lines: a capturing test prints its run line, then its largest
    request) and the indented lines under them."""
    for start, line in enumerate(lines):
        if excerpt.line and line.startswith(excerpt.line):
            end = start + 1
            while end < len(lines) and lines[end].startswith((" ", "\t", excerpt.line)):
                end += 1
            return lines[start:end]
    raise ExampleBroke(f"{step.region}: no line starting {excerpt.line!r} in its output")


def _section(lines: list[str], excerpt: Excerpt, step: Show) -> list[str]:
    """The lines of the pytest section headed ``excerpt.section`` (its separator included)."""
    title = excerpt.section
    for start, line in enumerate(lines):
        separator = SEPARATOR.match(line)
        if separator and separator.group("title") == title:
            end = next(
                (i for i in range(start + 1, len(lines)) if SEPARATOR.match(lines[i])),
                len(lines),
            )
            return lines[start:end]
    raise ExampleBroke(f"{step.region}: no section {title!r} in the output of `{step.command}`")


PYTEST_HEADER = ("platform ", "rootdir:", "configfile:", "testpaths:", "plugins:", "cachedir:")
SEPARATOR = re.compile(r"^(?P<char>[=_-])(?P=char)+ (?P<title>.*?) (?P=char)+$")


def normalise(output: str, work: Path) -> str:
    """The same text for the same behaviour, whatever the machine, the port or the clock."""
    text = output.replace(f"{work}{os.sep}", "").replace(str(work), ".")
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r" in \d+\.\d+s( \(\d+:\d\d:\d\d\))?", " in N.NNs", text)
    lines: list[str] = []
    skipping = False
    for line in text.splitlines():
        line = line.rstrip()
        separator = SEPARATOR.match(line)
        if separator:
            # pytest's short summary repeats the failures above it, and its wording changed
            # between pytest versions; the docs leave it out.
            skipping = "short test summary info" in separator.group("title")
            if skipping:
                continue
            line = _separator(separator.group("char"), separator.group("title"))
        if skipping or line.startswith(PYTEST_HEADER):
            continue
        lines.append(line)
    return "\n".join(lines).strip("\n")


def _separator(char: str, title: str) -> str:
    """pytest's ``write_sep`` at COLUMNS, so a title of another length is centred the same."""
    fill = char * max((COLUMNS - len(title) - 2) // 2, 1)
    line = f"{fill} {title} {fill}"
    return line + char if len(line) + 1 <= COLUMNS else line


def doc_files() -> Iterator[Path]:
    seen: set[Path] = set()
    for pattern in DOC_FILES:
        for path in sorted(ROOT.glob(pattern)):
            if path not in seen and path.is_file():
                seen.add(path)
                yield path


def regions_in_docs() -> dict[str, list[Path]]:
    found: dict[str, list[Path]] = {}
    for path in doc_files():
        for match in REGION.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match.group("name"), []).append(path)
    return found


def known_regions() -> list[str]:
    return [
        region
        for scenario in SCENARIOS
        for step in scenario.steps
        if isinstance(step, Show | ShowFile | ShowJson)
        for region in _regions_of(step)
    ]


def rewrite(path: Path, bodies: dict[str, str]) -> tuple[str, str]:
    """The file's text now and with ``bodies`` in their regions."""
    current = path.read_text(encoding="utf-8")

    def replace(match: re.Match[str]) -> str:
        name = match.group("name")
        if name not in bodies:
            return match.group(0)
        indent = match.group("indent")
        body = "".join(
            indent + line if line.strip() else line for line in bodies[name].splitlines(True)
        )
        return f"{indent}<!-- gen:{name} -->\n{body}{indent}<!-- /gen -->"

    return current, REGION.sub(replace, current)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the docs' examples and write their output.")
    parser.add_argument("--check", action="store_true", help="fail on a difference, write nothing")
    parser.add_argument("--only", nargs="+", metavar="REGION", help="only these regions")
    parser.add_argument(
        "--demo", type=Path, default=DEMO, help="the demo to copy (default examples/demo)"
    )
    args = parser.parse_args(argv)

    in_docs = regions_in_docs()
    known = known_regions()
    problems = [
        f"{name}: a region in {', '.join(str(p.relative_to(ROOT)) for p in paths)} that no example makes"
        for name, paths in in_docs.items()
        if name not in known
    ]
    wanted = set(args.only) if args.only else None
    if wanted is not None:
        problems += [f"{name}: no such example" for name in sorted(wanted - set(known))]
    else:
        problems += [
            f"{name}: an example no page shows (add a <!-- gen:{name} --> region)"
            for name in known
            if name not in in_docs
        ]
    if problems:
        print("\n".join(problems), file=sys.stderr)
        return 1

    bodies: dict[str, str] = {}
    try:
        for scenario in SCENARIOS:
            bodies.update(run_scenario(scenario, args.demo.resolve(), wanted))
    except ExampleBroke as broke:
        print(f"an example broke: {broke}", file=sys.stderr)
        return 1

    drifted: list[str] = []
    for path in doc_files():
        current, wanted_text = rewrite(path, bodies)
        if current == wanted_text:
            continue
        name = str(path.relative_to(ROOT))
        drifted.append(name)
        if args.check:
            sys.stderr.writelines(
                difflib.unified_diff(
                    current.splitlines(keepends=True),
                    wanted_text.splitlines(keepends=True),
                    f"{name} (committed)",
                    f"{name} (as the commands print it now)",
                )
            )
        else:
            path.write_text(wanted_text, encoding="utf-8", newline="\n")
            print(f"wrote {name}")
    if args.check and drifted:
        print(
            f"the docs' examples drifted from what the commands print ({', '.join(drifted)}); "
            "run `python docs/gen/examples.py` and commit the result",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
