"""The session-level gate, without pytest: settings, per-session state, and the finish.

``resolve_settings`` is the one place where every ``--toll-*`` value is decided (command
line > ini > ledger > default) and where a bad value is reported with its source.
``finish`` turns the collected results into the session report: it adds stale entries on a
full run, plans and writes the ratchet (the controller alone calls it), and writes the JSON.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import DEFAULT_WINDOW
from pytest_toll.gate.ledger import DEFAULT_NAME, Ledger, load_ledger, update_ledger
from pytest_toll.gate.ratchet import Policy, plan_update, stale_result
from pytest_toll.report.model import KINDS, EntryResult, SessionReport

DEFAULT_TOLERANCE = 0

#: Report files the CI outputs render from the report (the CI engineer's ``outputs``).
OUTPUT_FILES = ("markdown", "badge", "sarif", "html")


@dataclass(frozen=True)
class Settings:
    """Every resolved ``--toll-*`` setting."""

    ledger: Path
    ledger_given: bool = False
    window: int = DEFAULT_WINDOW
    tolerance: int = DEFAULT_TOLERANCE
    strict: bool = False
    update: bool = False
    allow_increase: bool = False
    json: Path | None = None
    markdown: Path | None = None
    badge: Path | None = None
    sarif: Path | None = None
    html: Path | None = None

    @property
    def policy(self) -> Policy:
        return Policy(self.tolerance, self.update, self.allow_increase, self.strict)


@dataclass(frozen=True)
class Sources:
    """Raw values as given, with where they came from, for error messages.

    ``cli`` holds command-line values (None when not given) keyed by setting name; ``ini``
    holds ini strings ("" when not set); paths in ini are relative to ``ini_dir``, on the
    command line to ``invocation_dir``.
    """

    cli: Mapping[str, Any]
    ini: Mapping[str, str]
    ini_name: str
    ini_dir: Path
    invocation_dir: Path
    rootdir: Path


def _integer(value: Any, minimum: int, what: str) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{what}, not {value!r}")
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip().replace("_", "").replace(",", "")
        if not text.lstrip("-").isdigit():
            raise ValueError(f"{what}, not {value!r}")
        number = int(text)
    if number < minimum:
        raise ValueError(f"{what}, not {value!r}")
    return number


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be true or false, not {value!r}")


_PARSERS: dict[str, Callable[[Any], Any]] = {
    "window": lambda value: _integer(value, 1, "must be a positive whole number of tokens"),
    "tolerance": lambda value: _integer(value, 0, "must be a whole number of tokens >= 0"),
    "strict": _boolean,
}
_FLAGS = {
    "ledger": "--toll-ledger",
    "window": "--toll-window",
    "tolerance": "--toll-tolerance",
    "strict": "--toll-strict",
    "json": "--toll-json",
    "markdown": "--toll-markdown",
    "badge": "--toll-badge",
    "sarif": "--toll-sarif",
    "html": "--toll-html",
}
#: Settings a ledger may carry at its top level.
LEDGER_KEYS = ("window", "tolerance")


def _pick(name: str, sources: Sources) -> tuple[Any, str, Path | None]:
    """The first given value of ``name`` (CLI, then ini) with its source and base dir."""
    value = sources.cli.get(name)
    if value is not None:
        return value, f"{_FLAGS[name]} on the command line", sources.invocation_dir
    text = sources.ini.get(name, "")
    if text:
        return text, f"toll_{name} in {sources.ini_name}", sources.ini_dir
    return None, "", None


def resolve_ledger_path(sources: Sources) -> tuple[Path, bool]:
    """Where the ledger is, and whether the user named it (a named ledger must exist)."""
    value, _, base = _pick("ledger", sources)
    if value is None:
        return sources.rootdir / DEFAULT_NAME, False
    path = Path(str(value)).expanduser()
    return (path if path.is_absolute() else (base or sources.rootdir) / path), True


def resolve_settings(
    sources: Sources, ledger: Ledger | None, *, update: bool, allow_increase: bool
) -> Settings:
    """CLI > ini > ledger > default, for every setting; a bad value names its source."""
    path, given = resolve_ledger_path(sources)
    values: dict[str, Any] = {}
    for name, parse in _PARSERS.items():
        value, source, _ = _pick(name, sources)
        if value is None and ledger is not None and name in LEDGER_KEYS and name in ledger.data:
            value = ledger.data[name]
            line = ledger.line_of((name,))
            source = f"{ledger.path}:{line}" if line else str(ledger.path)
        if value is None:
            continue
        try:
            values[name] = parse(value)
        except ValueError as error:
            raise UsageError(f"{source}: {name} {error}") from None
    if "window" not in values and ledger is not None and ledger.data.get("model"):
        values["window"] = _model_window(ledger)
    paths: dict[str, Path | None] = {}
    for name in ("json", *OUTPUT_FILES):
        value, _, base = _pick(name, sources)
        paths[name] = None if value is None else (base or sources.invocation_dir) / Path(str(value))
    if allow_increase and not update:
        raise UsageError("--toll-allow-increase only applies with --toll-update")
    return Settings(
        ledger=path,
        ledger_given=given,
        window=values.get("window", DEFAULT_WINDOW),
        tolerance=values.get("tolerance", DEFAULT_TOLERANCE),
        strict=values.get("strict", False),
        update=update,
        allow_increase=allow_increase,
        json=paths["json"],
        markdown=paths["markdown"],
        badge=paths["badge"],
        sarif=paths["sarif"],
        html=paths["html"],
    )


def ledger_catalogue(ledger: Ledger) -> Any:
    """The model catalogue with the ledger's ``models:`` overrides applied.

    Errors in the overrides name the ledger and the line of its ``models:`` section.
    """
    from pytest_toll.core.models import load_models

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
    """Load the ledger; a missing default ledger is empty (``--toll-update`` creates it)."""
    path, given = resolve_ledger_path(sources)
    return load_ledger(path, missing_ok=update or not given, allow_duplicate_decisions=True)


# --- the session ------------------------------------------------------------------------


@dataclass
class TollState:
    """What one ``--toll`` session holds: settings, ledger, and (controller) the results."""

    settings: Settings
    ledger: Ledger
    worker: bool = False
    results: dict[str, EntryResult] = field(default_factory=dict)
    deselected: int = 0
    warnings: list[str] = field(default_factory=list)
    report: SessionReport | None = None

    @property
    def policy(self) -> Policy:
        return self.settings.policy

    @cached_property
    def catalogue(self) -> Any:
        """The ledger's model catalogue, for ``toll.call``; None when it adds no models."""
        if not self.ledger.data.get("models"):
            return None
        return ledger_catalogue(self.ledger)

    def entry_context(self) -> Any:
        from pytest_toll.gate.measurers import EntryContext

        data = self.ledger.data
        return EntryContext(
            root=self.ledger.path.parent,
            window=self.settings.window,
            rules=data.get("rules") or {},
            limits=data.get("limits") or {},
            duplicate_decisions=tuple(self.ledger.duplicate_decisions),
            source=str(self.ledger.path),
            model=data.get("model"),
            catalogue=self.catalogue,
        )

    def add_result(self, data: Mapping[str, Any]) -> None:
        result = EntryResult.from_dict(data)
        self.results[result.nodeid] = result


def stale_entries(state: TollState) -> list[EntryResult]:
    """Ledger entries no result covers (only meaningful on a full run)."""
    measured = {(result.kind, result.name) for result in state.results.values()}
    ledger = state.ledger
    stale = []
    for kind in KINDS:
        section = ledger.data.get(kind)
        if not isinstance(section, Mapping):
            continue
        if kind == "transcripts":
            names: list[str] = ["transcripts"]
        else:
            names = [str(name) for name in section]
        for name in names:
            if (kind, name) in measured:
                continue
            keys = (kind,) if kind == "transcripts" else (kind, name)
            entry = section if kind == "transcripts" else section.get(name) or {}
            nodeid = name if kind == "tests" else "::".join((ledger.path.name, *keys))
            stale.append(
                stale_result(kind, name, nodeid, ledger.line_of(keys), entry, state.policy)
            )
    return stale


def finish(state: TollState, *, partial: bool, ledger_name: str) -> SessionReport:
    """Build the report; with ``--toll-update``, write the ratchet (controller only)."""
    settings = state.settings
    results = list(state.results.values())
    if not partial:
        results.extend(stale_entries(state))
    report = SessionReport(
        ledger=ledger_name,
        window=settings.window,
        tolerance=settings.tolerance,
        update=settings.update,
        allow_increase=settings.allow_increase,
        strict=settings.strict,
        partial=partial,
        entries=results,
    )
    if settings.update:
        updates = plan_update(
            report.entries,
            settings.policy,
            ledger_tests=state.ledger.section("tests"),
            full_run=not partial,
        )
        if updates:
            try:
                report.ledger_written = update_ledger(settings.ledger, updates)
            except (UsageError, OSError) as error:
                state.warnings.append(f"the ledger was not updated: {error}")
                for entry in report.entries:
                    entry.ratchet = None
    state.report = report
    if settings.json is not None:
        try:
            write_json(report, settings.json)
        except OSError as error:
            state.warnings.append(f"could not write the JSON report {settings.json}: {error}")
    return report


def write_json(report: SessionReport, path: Path) -> None:
    from pytest_toll.gate.ledger import write_atomically

    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report.as_dict(), indent=2, ensure_ascii=False) + "\n"
    write_atomically(path, text)
