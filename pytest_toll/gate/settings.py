"""The ``--toll-*`` settings: one place decides each (command line > ini > ledger > default).

What the settings are (option, ini twin, parser, default, ledger key) is the table of
:mod:`pytest_toll.core.settings`, and of the report files
:data:`pytest_toll.report.outputs.OUTPUTS`; here they are resolved. A bad value is reported
with its source (the flag, the ini file and key, or the ledger's file and line). Also where
the ledger is, and opening it: :func:`open_ledger` finds its path (the one place that does),
and the opened :class:`Ledger`'s ``path`` is where it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.core.models import Catalogue, load_models
from pytest_toll.core.settings import SETTINGS
from pytest_toll.gate.ledger import DEFAULT_NAME, Ledger, load_ledger
from pytest_toll.gate.ratchet import Policy
from pytest_toll.report.outputs import OUTPUTS


@dataclass(frozen=True)
class Settings:
    """Every resolved ``--toll-*`` setting but the ledger's path (``Ledger.path``) and the
    shard (``TollState.shard``): a field per row of :data:`pytest_toll.core.settings.SETTINGS`
    with a parser or a flag, its default the row's."""

    window: int = SETTINGS["window"].default
    tolerance: int = SETTINGS["tolerance"].default
    strict: bool = SETTINGS["strict"].default
    update: bool = SETTINGS["update"].default
    allow_increase: bool = SETTINGS["allow_increase"].default
    #: The report files asked for: an output's name (a row of ``report.outputs.OUTPUTS``)
    #: and where to write it.
    outputs: Mapping[str, Path] = field(default_factory=dict)

    @property
    def policy(self) -> Policy:
        return Policy(self.tolerance, self.update, self.allow_increase, self.strict)


@dataclass(frozen=True)
class Sources:
    """Raw values as given, with where they came from, for error messages.

    ``cli`` holds command-line values (None when not given) keyed by setting name; ``ini``
    holds ini values ("" when not set; a string, or a bool or int where pytest types
    them); paths in ini are relative to ``ini_dir``, on the command line to
    ``invocation_dir``.
    """

    cli: Mapping[str, Any]
    ini: Mapping[str, Any]
    ini_name: str
    ini_dir: Path
    invocation_dir: Path
    rootdir: Path
    #: The paths given as arguments (``pytest --toll toll.yaml tests/``), node ids cut to
    #: their file, as typed: relative ones are relative to ``invocation_dir``.
    args: tuple[str, ...] = ()


def _flag(name: str) -> str:
    return SETTINGS[name].flag if name in SETTINGS else OUTPUTS[name].flag


def _pick(name: str, sources: Sources) -> tuple[Any, str, Path | None]:
    """The first given value of ``name`` (CLI, then ini) with its source and base dir."""
    value = sources.cli.get(name)
    if value is not None:
        return value, f"{_flag(name)} on the command line", sources.invocation_dir
    # Typed ini values (a bool, a whole number) arrive as such; "" or None is "not set".
    value = sources.ini.get(name, "")
    if value is not None and value != "":
        return value, f"toll_{name} in {sources.ini_name}", sources.ini_dir
    return None, "", None


def resolve_ledger_path(sources: Sources) -> tuple[Path, bool]:
    """Where the ledger is, and whether the user named it (a named ledger must exist)."""
    value, _, base = _pick("ledger", sources)
    if value is None:
        named = _ledger_argument(sources)
        return (named, True) if named is not None else (sources.rootdir / DEFAULT_NAME, False)
    path = Path(str(value)).expanduser()
    return (path if path.is_absolute() else (base or sources.rootdir) / path), True


def _ledger_argument(sources: Sources) -> Path | None:
    """A ledger named as an argument (``pytest --toll toll.yaml``, ``ci/toll.yaml::skills``),
    resolved from the invocation directory, where the user typed it.

    pytest widens its rootdir to the common ancestor of the paths in its arguments (an
    existing report file named by ``--toll-json /elsewhere/r.json`` among them), so the
    rootdir's ``toll.yaml`` need not be the one typed. Only a file named like the default
    ledger counts: another YAML argument may be a test file of another plugin.
    """
    for arg in sources.args:
        path = Path(arg.split("::")[0]).expanduser()
        if path.name == DEFAULT_NAME:
            return path if path.is_absolute() else sources.invocation_dir / path
    return None


def resolve_settings(
    sources: Sources, ledger: Ledger | None, *, update: bool, allow_increase: bool
) -> Settings:
    """CLI > ini > ledger > default, for every setting; a bad value names its source."""
    values: dict[str, Any] = {}
    for name, setting in SETTINGS.items():
        if setting.parse is None:
            continue
        value, source, _ = _pick(name, sources)
        key = setting.ledger_key
        if value is None and ledger is not None and key is not None and key in ledger.data:
            value = ledger.data[key]
            line = ledger.line_of((key,))
            source = f"{ledger.path}:{line}" if line else str(ledger.path)
        if value is None:
            continue
        try:
            values[name] = setting.parse(value)
        except ValueError as error:
            raise UsageError(f"{source}: {name} {error}") from None
    if "window" not in values and ledger is not None and ledger.data.get("model"):
        values["window"] = _model_window(ledger)
    outputs: dict[str, Path] = {}
    for name in OUTPUTS:
        value, _, base = _pick(name, sources)
        if value is not None:
            outputs[name] = (base or sources.invocation_dir) / Path(str(value))
    if allow_increase and not update:
        raise UsageError("--toll-allow-increase only applies with --toll-update")
    return Settings(**values, update=update, allow_increase=allow_increase, outputs=outputs)


def ledger_catalogue(ledger: Ledger) -> Catalogue:
    """The model catalogue with the ledger's ``models:`` overrides applied.

    Errors in the overrides name the ledger and the line of its ``models:`` section.
    """
    line = ledger.line_of(("models",)) or 1
    return load_models(ledger.data.get("models"), source=f"{ledger.path}:{line}")


def _model_window(ledger: Ledger) -> int:
    """The context window of the ledger's ``model:`` (with its ``models:`` overrides)."""
    catalogue = ledger_catalogue(ledger)
    try:
        model = catalogue.get(str(ledger.data["model"]))
    except UsageError as error:
        raise UsageError(f"{ledger.path}:{ledger.line_of(('model',))}: model: {error}") from None
    # A model with no known window leaves the default: the window is shown, never graded.
    return int(model.window) if model.window else DEFAULT_WINDOW


def open_ledger(sources: Sources, *, update: bool) -> Ledger:
    """Load the ledger; with ``--toll-update`` a missing one is empty (the update creates it).

    Without ``--toll-update`` a missing ledger is a usage error: a gate that found nothing
    to check must not pass (a wrong working directory in CI would be a green gate).
    """
    path, given = resolve_ledger_path(sources)
    if not update and not path.exists():
        raise UsageError(missing_ledger_message(path, given=given))
    return load_ledger(path, missing_ok=update, allow_duplicate_decisions=True)


#: Names a ledger is sometimes given by mistake, looked for beside the expected one.
_NEAR_MISSES = ("toll.yml", "Toll.yaml", "toll.yaml.yaml", ".toll.yaml")


def missing_ledger_message(path: Path, *, given: bool) -> str:
    """Where the ledger was looked for, what was found instead, and how to start one."""
    where = "named by --toll-ledger / toll_ledger" if given else "at the rootdir"
    lines = [f"--toll: no ledger at {path} ({where}); --toll needs a ledger to check against"]
    near = [path.parent / name for name in _NEAR_MISSES if name != path.name]
    for found in (candidate for candidate in near if candidate.is_file()):
        lines.append(
            f"  found {found.name} beside it: rename it to {path.name}, "
            f"or pass --toll-ledger {found.name}"
        )
    lines.append(
        f"  start one: `toll init` writes a starter {path.name} from what the repository "
        "declares (.mcp.json, skills folders),"
    )
    lines.append(
        "  or `pytest --toll --toll-update` seeds pins from what the ledger and the tests measure"
    )
    return "\n".join(lines)
