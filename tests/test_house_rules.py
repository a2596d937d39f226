"""The rules of the house (ARCHITECTURE.md), checked on the package's source.

- no import cycle between the package's modules, imports inside functions included;
- no module over 600 lines;
- pytest imported only by the pytest adapter;
- the package's own modules imported at the top of a file, so the dependency graph is the one a
  reader (and a linter) sees; the exceptions are the plugin's entry module, which defers the
  gate until ``--toll`` is on so that a plain ``pytest`` run pays nothing for it, and the
  outputs table it reads, which defers each renderer until its file is written;
- ``import pytest_toll.plugin`` stays cheap: no tokenizer, no HTTP client, no YAML library;
- layers point down: ``core`` imports no sibling subpackage; the jobs and ``report`` never
  import ``gate``; ``report`` imports only ``core`` (read from its import statements); nothing
  below the adapters imports them; so rendering a report (``import
  pytest_toll.report.markdown``) loads no job and no gate module;
- ARCHITECTURE.md names every module of the package;
- one name per idea: no top-level function is written twice under one name (the same code in
  two modules is one idea, defined once and imported), and no two modules are one word with
  and without ``-ing`` (``diff``/``diffing``, ``measure``/``measuring``); a class's ``kind``
  is a ledger kind; a ``records.py`` holds no report.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pytest_toll"
ARCHITECTURE = PACKAGE.parent / "ARCHITECTURE.md"
MAX_LINES = 600
#: The pytest adapter: the only modules that may import pytest.
ADAPTER = frozenset(
    {"pytest_toll.plugin", "pytest_toll.items", "pytest_toll.fixture", "pytest_toll._keys"}
)
#: Every adapter: the pytest adapter, its httpx hook, the CLI, ``python -m pytest_toll`` and
#: the GitHub steps (network and git).
#: They depend on everything; nothing else depends on them.
ADAPTERS = ADAPTER | {
    "pytest_toll.capture_hook",
    "pytest_toll.cli",
    "pytest_toll.github",
    "pytest_toll.__main__",
}
#: The jobs: each turns a source into records and a measurement.
JOBS = ("definitions", "skills", "surface", "calls", "transcripts")
#: What the report may import besides itself: core, and the version it writes in every file.
REPORT_MAY_IMPORT = ("core", "_version")
#: Modules allowed to import the package's own modules inside functions, and why.
DEFERRED_OWN_IMPORTS = {
    "pytest_toll.plugin": "loaded by every pytest run: the gate loads only under --toll",
    "pytest_toll.report.outputs": "its table gives the plugin's options in every pytest run: "
    "a renderer loads only when its file is written",
}


#: The doors' calls (issue 34): outside ``core/`` no module opens, reads or parses a file
#: itself; it goes through ``core.textio`` (regular files, size caps, confinement, bounded
#: walks), ``core.parse`` (bounded JSON, YAML, TOML) and ``core.database`` (SQLite with a
#: time limit and a row-size cap). Calls by module attribute: ``json.loads`` and the like.
DOOR_CALLS: dict[str, frozenset[str]] = {
    "json": frozenset({"load", "loads"}),
    "orjson": frozenset({"loads"}),
    "yaml": frozenset(
        {"load", "safe_load", "full_load", "unsafe_load", "load_all", "safe_load_all",
         "compose", "compose_all", "parse", "scan"}
    ),
    "tomllib": frozenset({"load", "loads"}),
    "tomli": frozenset({"load", "loads"}),
    "sqlite3": frozenset({"connect"}),
    "os": frozenset({"open", "fdopen"}),
    "io": frozenset({"open"}),
}  # fmt: skip
#: Methods that open or read a file whatever they are called on (``Path.read_text``).
DOOR_METHODS = frozenset({"open", "read_text", "read_bytes"})
#: Modules outside ``core/`` that may make a door's call themselves, and why. Each is our own
#: file or a stream we write, never third-party input, or a parser with its own bounds.
DOOR_EXCEPTIONS: dict[str, str] = {
    "pytest_toll.gate.ledger.read": "the ledger's own event-by-event YAML reader: it bounds "
    "depth and alias nodes itself and keeps each value's line for its error messages",
    "pytest_toll.gate.ledger.lock": "creates and locks the ledger's lock file (a write)",
    "pytest_toll.gate.ledger": "loads the ledger schema shipped inside the package",
    "pytest_toll.transcripts.cache": "the scan's own cache database and lock file, which toll "
    "creates in the user's cache folder",
    "pytest_toll.report.github": "appends to the step-summary and output files GitHub "
    "gives the step (a write)",
    "pytest_toll.cli": "points stdout at os.devnull while a broken pipe closes (a write)",
    "pytest_toll.cli.init": "writes the new ledger with O_EXCL so it never overwrites one",
    "pytest_toll.gate.ledger.write": "checks the events of the YAML it is about to write "
    "(its own output, never input)",
    "pytest_toll.skills.references": "the skill file reader: an O_NOFOLLOW open of a path "
    "already resolved inside the skill folder, that sniffs a binary asset before reading it",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    top_level: bool
    type_checking: bool


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(importer: str, node: ast.ImportFrom, is_package: bool) -> str:
    if node.level == 0:
        return node.module or ""
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _imports(name: str, path: Path, modules: dict[str, Path]) -> Iterator[Import]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    is_package = path.name == "__init__.py"

    def targets(node: ast.Import | ast.ImportFrom) -> list[str]:
        if isinstance(node, ast.Import):
            return [alias.name for alias in node.names]
        base = _resolve(name, node, is_package)
        # ``from pytest_toll.core import tokens`` imports the submodule, not only the package.
        found = [
            f"{base}.{alias.name}" for alias in node.names if f"{base}.{alias.name}" in modules
        ]
        return found or [base]

    def visit(node: ast.AST, top_level: bool, type_checking: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.Import | ast.ImportFrom):
                for target in targets(child):
                    yield Import(name, target, child.lineno, top_level, type_checking)
            elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                yield from visit(child, False, type_checking)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for statement in child.body:
                    yield from visit(ast.Module(body=[statement], type_ignores=[]), top_level, True)
                for statement in child.orelse:
                    yield from visit(
                        ast.Module(body=[statement], type_ignores=[]), top_level, type_checking
                    )
            else:
                yield from visit(child, top_level, type_checking)

    yield from visit(tree, True, False)


def _all_imports() -> list[Import]:
    modules = _modules()
    return [found for name, path in modules.items() for found in _imports(name, path, modules)]


def _own(module: str) -> bool:
    return module == "pytest_toll" or module.startswith("pytest_toll.")


def test_no_module_is_over_the_line_limit() -> None:
    too_long = {
        name: count
        for name, path in _modules().items()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert too_long == {}


def test_only_the_adapter_imports_pytest() -> None:
    offenders = sorted(
        f"{found.importer}:{found.line}"
        for found in _all_imports()
        if found.imported.split(".")[0] in {"pytest", "_pytest"}
        and found.importer not in ADAPTER
        and not found.type_checking
    )
    assert offenders == []


def test_own_modules_are_imported_at_the_top() -> None:
    offenders = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in _all_imports()
        if _own(found.imported)
        and not found.top_level
        and found.importer not in DEFERRED_OWN_IMPORTS
    )
    assert offenders == []


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle in ``graph``, as the path that closes it, or None."""
    state: dict[str, int] = {}  # 1 visiting, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for neighbour in sorted(graph.get(node, ())):
            if state.get(neighbour) == 1:
                return [*stack[stack.index(neighbour) :], neighbour]
            if neighbour not in state and (found := visit(neighbour)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_cycles_between_the_package_modules() -> None:
    modules = _modules()
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for found in _all_imports():
        if found.type_checking or not _own(found.imported) or found.imported not in modules:
            continue
        # A package's __init__ re-exporting its own modules is not a cycle with them.
        if found.importer != found.imported and not found.imported.startswith(found.importer + "."):
            graph[found.importer].add(found.imported)
    assert _cycle(graph) is None


def test_the_cycle_finder_finds_a_cycle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_importing_the_plugin_loads_no_heavy_library() -> None:
    heavy = ["tiktoken", "httpx", "yaml", "ruamel", "jsonschema", "orjson", "msgspec"]
    script = (
        "import sys, pytest, pytest_toll.plugin\n"
        f"print(','.join(name for name in {heavy!r} if name in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.strip() == ""


def _layer(module: str) -> str:
    """A subpackage's name (``core``, ``gate``, a job…), or a top module's whole name."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and (PACKAGE / parts[1]).is_dir() else module


def _in(module: str, package: str) -> bool:
    return module == f"pytest_toll.{package}" or module.startswith(f"pytest_toll.{package}.")


def _own_imports_of(importers: Callable[[str], bool]) -> list[Import]:
    """The package's own imports made by the modules ``importers`` accepts."""
    return [found for found in _all_imports() if _own(found.imported) and importers(found.importer)]


def test_core_imports_no_sibling_subpackage() -> None:
    offenders = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in _own_imports_of(lambda module: _in(module, "core"))
        if not _in(found.imported, "core")
    )
    assert offenders == []


def test_the_jobs_and_the_report_never_import_the_gate() -> None:
    offenders = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in _own_imports_of(
            lambda module: any(_in(module, layer) for layer in (*JOBS, "report"))
        )
        if _in(found.imported, "gate")
    )
    assert offenders == []


def test_the_jobs_never_import_the_report() -> None:
    offenders = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in _own_imports_of(lambda module: any(_in(module, job) for job in JOBS))
        if _in(found.imported, "report")
    )
    assert offenders == []


def test_the_report_imports_only_core() -> None:
    """Read from the import statements, inside functions and under TYPE_CHECKING too: the
    subprocess check below sees only what one import happens to load."""
    offenders = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in _own_imports_of(lambda module: _in(module, "report"))
        if not any(_in(found.imported, layer) for layer in ("report", *REPORT_MAY_IMPORT))
    )
    assert offenders == []


def test_the_jobs_are_every_subpackage_that_is_a_job() -> None:
    """A new job folder must join ``JOBS`` (surface once did not), so the layer checks above
    cover it: every subpackage is a job or one of the named layers."""
    layers = {path.name for path in PACKAGE.iterdir() if (path / "__init__.py").is_file()}
    assert layers - {"core", "report", "gate", "cli", "github"} == set(JOBS)


def test_nothing_below_the_adapters_imports_them() -> None:
    def adapter(module: str) -> bool:
        return any(module == name or module.startswith(name + ".") for name in ADAPTERS)

    offenders = sorted(
        f"{found.importer}:{found.line} imports {found.imported}"
        for found in _own_imports_of(lambda module: not adapter(module))
        if adapter(found.imported) and not found.type_checking
    )
    assert offenders == []


def test_the_layer_checks_see_real_imports() -> None:
    """The direction tests above pass vacuously if the import finder finds nothing: the
    gate must be seen importing a job, and the report importing core."""
    edges = {(_layer(found.importer), _layer(found.imported)) for found in _all_imports()}
    assert ("gate", "definitions") in edges
    assert ("surface", "skills") in edges
    assert ("report", "core") in edges
    assert ("pytest_toll.items", "gate") in edges


def test_rendering_markdown_loads_no_job_and_no_gate_module() -> None:
    script = (
        "import sys, pytest_toll.report.markdown\n"
        "print('\\n'.join(sorted(name for name in sys.modules if name.startswith('pytest_toll'))))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    loaded = done.stdout.split()
    assert "pytest_toll.report.markdown" in loaded  # the script really imported it
    forbidden = [name for name in loaded if any(_in(name, layer) for layer in (*JOBS, "gate"))]
    assert forbidden == []


def _named_in_the_map(path: Path, text: str) -> bool:
    """A module is named by its path under ``pytest_toll/`` in backticks (``gate/ledger/lock.py``);
    a package's ``__init__.py`` by that path too, or by its folder (``gate/ledger/``)."""
    relative = path.relative_to(PACKAGE).as_posix()
    names = {f"`{relative}`"}
    if path.name == "__init__.py" and path.parent != PACKAGE:
        names.add(f"`{path.parent.relative_to(PACKAGE).as_posix()}/`")
    return any(name in text for name in names)


def test_the_architecture_map_names_every_module() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    missing = sorted(
        path.relative_to(PACKAGE).as_posix()
        for path in PACKAGE.rglob("*.py")
        if not _named_in_the_map(path, text)
    )
    assert missing == []


def test_the_map_check_misses_an_unnamed_module() -> None:
    text = "`gate/ledger/` holds `gate/ledger/lock.py`"
    assert _named_in_the_map(PACKAGE / "gate" / "ledger" / "lock.py", text)
    assert _named_in_the_map(PACKAGE / "gate" / "ledger" / "__init__.py", text)
    assert not _named_in_the_map(PACKAGE / "gate" / "ledger" / "read.py", text)
    # A path inside another path is no name: `ledger/lock.py` alone does not map gate's.
    assert not _named_in_the_map(PACKAGE / "gate" / "ledger" / "lock.py", "`ledger/lock.py`")


def _code_of(function: ast.FunctionDef | ast.AsyncFunctionDef) -> str:
    """What a function does, docstring aside: its arguments, return type and body."""
    body = function.body
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        body = body[1:]
    parts = [function.args, *body] + ([function.returns] if function.returns else [])
    return "\n".join(ast.dump(part) for part in parts)


def _written_twice(sources: dict[str, str]) -> list[str]:
    """Top-level functions of one name and the same code in more than one module."""
    where: dict[tuple[str, str], list[str]] = {}
    for module, source in sources.items():
        for node in ast.parse(source).body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                where.setdefault((node.name, _code_of(node)), []).append(module)
    return sorted(
        f"{name} in {', '.join(modules)}"
        for (name, _), modules in where.items()
        if len(modules) > 1
    )


def test_no_function_is_written_twice_under_one_name() -> None:
    """A copy of a function under its own name is one idea with two homes (``metadata_text``
    was in skills' and surface's records): it is defined once and imported."""
    sources = {name: path.read_text(encoding="utf-8") for name, path in _modules().items()}
    assert _written_twice(sources) == []


def test_the_copy_finder_finds_a_copy() -> None:
    text = 'def label(a: str) -> str:\n    """A label."""\n    return a + ":"\n'
    other = 'def label(a: str) -> str:\n    return a + ":"\n'
    changed = 'def label(a: str) -> str:\n    return a + "::"\n'
    assert _written_twice({"one": text, "two": other}) == ["label in one, two"]
    assert _written_twice({"one": text, "two": changed}) == []


def test_records_modules_hold_no_report() -> None:
    """Records are what a source becomes; a report is a measurement of them (SkillsReport,
    MemoryReport… once lived in ``records.py``), so it lives in the job's ``report.py``."""
    offenders = sorted(
        f"{name}.{node.name}"
        for name, path in _modules().items()
        if name.rsplit(".", 1)[-1] == "records"
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.ClassDef) and node.name.endswith("Report")
    )
    assert offenders == []


def _ing_forms(word: str) -> set[str]:
    """``measure`` -> ``measuring``, ``diff`` -> ``diffing``, ``load`` -> ``loading``."""
    forms = {word + "ing", word + word[-1:] + "ing"}
    if word.endswith("e"):
        forms.add(word[:-1] + "ing")
    return forms


def _one_word_twice(modules: list[str]) -> list[str]:
    """Pairs of modules named by one word with and without ``-ing``, wherever they live."""
    by_word: dict[str, list[str]] = {}
    for module in modules:
        by_word.setdefault(module.rsplit(".", 1)[-1], []).append(module)
    return sorted(
        f"{first} / {second}"
        for word, firsts in by_word.items()
        for form in _ing_forms(word)
        for first in firsts
        for second in by_word.get(form, [])
    )


def test_no_two_modules_are_one_word_with_and_without_ing() -> None:
    """``definitions/diff.py`` beside ``calls/diffing.py`` made a reader ask whether they were
    two ideas; a job's module is named by the noun of its work (``measuring``, ``diffing``).
    A verb's module in ``cli/`` is named by the verb the user types (``toll measure``), so the
    CLI is left out."""
    modules = [name for name in _modules() if not _in(name, "cli")]
    assert _one_word_twice(modules) == []


def test_the_ing_finder_finds_a_pair() -> None:
    modules = ["p.a.diff", "p.b.diffing", "p.a.measure", "p.c.measuring", "p.d.loading"]
    assert _one_word_twice(modules) == ["p.a.diff / p.b.diffing", "p.a.measure / p.c.measuring"]


#: Classes whose ``kind`` is a ledger kind (``servers``, ``skills``, ``tests``…), the only
#: meaning the name has: a report entry and its dict, and the pytest items of a ledger section.
LEDGER_KIND_HOLDERS = frozenset(
    {
        "pytest_toll.report.data.EntryResult",
        "pytest_toll.report.data._EntryFields",
        "pytest_toll.items.LedgerSection",
        "pytest_toll.items.LedgerItem",
    }
)


def _kind_holders(sources: dict[str, str]) -> set[str]:
    """Classes that declare a ``kind`` field or set ``self.kind``."""
    found: set[str] = set()
    for module, source in sources.items():
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, ast.ClassDef):
                continue
            for inner in ast.walk(node):
                if isinstance(inner, ast.AnnAssign) and isinstance(inner.target, ast.Name):
                    named = inner.target.id
                elif (
                    isinstance(inner, ast.Attribute)
                    and isinstance(inner.ctx, ast.Store)
                    and isinstance(inner.value, ast.Name)
                    and inner.value.id == "self"
                ):
                    named = inner.attr
                else:
                    continue
                if named == "kind":
                    found.add(f"{module}.{node.name}")
    return found


def test_a_class_kind_is_a_ledger_kind() -> None:
    """``kind`` named a ledger kind, the fixture's record source, a broken reference's reason
    and a message block's type; each of the others has its own name now."""
    sources = {name: path.read_text(encoding="utf-8") for name, path in _modules().items()}
    assert _kind_holders(sources) <= LEDGER_KIND_HOLDERS
    assert _kind_holders(sources) & LEDGER_KIND_HOLDERS  # the finder sees the real ones


def test_the_kind_finder_finds_a_field_and_an_attribute() -> None:
    source = (
        "class Record:\n    kind: str\n"
        "class Item:\n    def __init__(self) -> None:\n        self.kind = 1\n"
        "class Other:\n    name: str\n"
    )
    assert _kind_holders({"m": source}) == {"m.Record", "m.Item"}


def _door_calls(tree: ast.AST) -> Iterator[tuple[int, str]]:
    """(line, call) of every call in ``tree`` that opens, reads or parses a file itself."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Name) and func.id == "open":
            yield node.lineno, "open"
        elif isinstance(func, ast.Attribute):
            owner = func.value.id if isinstance(func.value, ast.Name) else None
            if owner in DOOR_CALLS:
                if func.attr in DOOR_CALLS[owner]:
                    yield node.lineno, f"{owner}.{func.attr}"
            elif func.attr in DOOR_METHODS:
                yield node.lineno, f".{func.attr}"


def test_only_the_doors_open_read_or_parse_files() -> None:
    found = []
    for name, path in _modules().items():
        if _in(name, "core") or name in DOOR_EXCEPTIONS:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{name}:{line}: {call}" for line, call in _door_calls(tree)]
    assert found == [], "use core.textio / core.parse / core.database:\n" + "\n".join(found)


def test_every_door_exception_still_needs_its_call() -> None:
    modules = _modules()
    stale = [
        name
        for name in DOOR_EXCEPTIONS
        if not list(_door_calls(ast.parse(modules[name].read_text(encoding="utf-8"))))
    ]
    assert stale == []


def test_the_door_finder_finds_each_kind_of_call() -> None:
    source = (
        "open(p)\nPath(p).read_text()\np.read_bytes()\nwith p.open('rb'): pass\n"
        "json.loads(t)\nyaml.safe_load(t)\ntomllib.loads(t)\nsqlite3.connect(p)\n"
        "os.open(p, 0)\nrender(t)\nos.path.join(a)\n"
    )
    calls = [call for _, call in sorted(_door_calls(ast.parse(source)))]
    assert calls == [
        "open", ".read_text", ".read_bytes", ".open", "json.loads", "yaml.safe_load",
        "tomllib.loads", "sqlite3.connect", "os.open",
    ]  # fmt: skip


# --- the doors of issue #34: git, printed names ---------------------------------------------

#: The one module that runs git (issue #34, door 5): every call with none of the programs a
#: repository's config names (pytest_toll/core/git.py).
GIT_RUNNER = "pytest_toll.core.git"
#: Modules that may hold a list or tuple starting with ``"git"`` without running git, and why.
GIT_WORD_EXCEPTIONS = {
    "pytest_toll.transcripts.shapes": "a table of program names that shape a transcript's shell "
    "commands (git, gh, npm…), read from transcripts, never run",
}
#: The functions that start a process from an argument list or a command string.
_PROCESS_STARTERS = frozenset(
    {"run", "Popen", "call", "check_call", "check_output", "system", "popen", "spawnlp",
     "spawnvp", "execlp", "execvp", "create_subprocess_exec", "create_subprocess_shell"}
)  # fmt: skip


def _is_git_word(node: ast.AST | None) -> bool:
    return (
        isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and (node.value == "git" or node.value.startswith("git "))
    )


def _git_runs(source: str) -> list[int]:
    """Lines that start git: an argument list whose first item is ``"git"`` (built anywhere,
    since a list is what a process is started from), or a command string starting with it
    given to a function that starts a process."""
    lines: list[int] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.List | ast.Tuple) and node.elts and _is_git_word(node.elts[0]):
            lines.append(node.lineno)
        elif isinstance(node, ast.Call) and node.args:
            name = node.func.attr if isinstance(node.func, ast.Attribute) else None
            name = node.func.id if isinstance(node.func, ast.Name) else name
            if name in _PROCESS_STARTERS and _is_git_word(node.args[0]):
                lines.append(node.lineno)
    return sorted(set(lines))


def test_only_the_git_runner_runs_git() -> None:
    """Outside core/git.py no module runs git: each would have to repeat every setting that
    keeps a repository's programs from running, and the next one would forget one."""
    found = {
        name: lines
        for name, path in _modules().items()
        if name != GIT_RUNNER and (lines := _git_runs(path.read_text(encoding="utf-8")))
    }
    assert set(found) <= set(GIT_WORD_EXCEPTIONS), {
        name: lines for name, lines in found.items() if name not in GIT_WORD_EXCEPTIONS
    }
    assert _git_runs(_modules()[GIT_RUNNER].read_text(encoding="utf-8"))  # it sees the runner


def test_the_git_finder_finds_every_form() -> None:
    source = (
        "import subprocess, os\n"
        "subprocess.run(['git', 'log'])\n"
        "command = ('git', '-C', 'x')\n"
        "os.system('git status')\n"
        "subprocess.run(['python', 'git'])\n"
        "print('git')\n"
    )
    assert _git_runs(source) == [2, 3, 4]


#: The printed-names rule (issue #34, door 3) is a behaviour test: hostile names through every
#: kind and every output, in tests/faults/test_hostile_names.py (which asserts that the kinds
#: it names are the ones it says). Kinds and outputs it leaves out, and why.
KINDS_WITHOUT_HOSTILE_NAMES = {
    "calls": "a call's name is the ledger's own key and its parts fixed words, written by the "
    "user, not a third party",
    "transcripts": "one whole section with no names of its own; the tool names its shapes "
    "quote are fed by tests/faults/test_inert_text.py's transcript",
}
OUTPUTS_WITHOUT_HOSTILE_NAMES = {"badge": "a total and a label, no name"}


def test_the_hostile_names_test_covers_every_kind_and_output() -> None:
    from pytest_toll.core.kinds import KINDS
    from pytest_toll.report.outputs import OUTPUTS
    from tests.faults.test_hostile_names import KINDS_FED, OUTPUTS_FED

    assert set(KINDS) - set(KINDS_FED) == set(KINDS_WITHOUT_HOSTILE_NAMES)
    assert set(OUTPUTS) - set(OUTPUTS_FED) == set(OUTPUTS_WITHOUT_HOSTILE_NAMES)
