"""The ``--toll-*`` settings as plain data: one row each, read by every door.

A :class:`Setting` row is all there is to a setting's outside: its pytest option
``--toll-<name>`` (a flag or a value) and the option's help, its ini twin ``toll_<name>``
(pytest's type and help), the parser of a given value, its default, the ledger's top-level
key that may carry it, whether giving it on the command line turns ``--toll`` on, and what
``toll merge`` does with it. The pytest adapter registers and reads its options from this
table (``plugin.pytest_addoption`` and the sources it hands the gate), the gate resolves
each row command line > ini > ledger > default (:mod:`pytest_toll.gate.settings`, whose
``Settings`` has a field per resolved row), and ``toll merge`` offers its flags and checks
its shards by it (:mod:`pytest_toll.cli.merge`, :mod:`pytest_toll.gate.merge`).

The report files are settings of their own, one row each of
:data:`pytest_toll.report.outputs.OUTPUTS`; ``--toll`` itself is the switch, not a setting.

Plain data and pure parsers: the plugin reads this table in every pytest run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.limits import DEFAULT_WINDOW


@dataclass(frozen=True)
class Setting:
    """One ``--toll-*`` setting besides the report files."""

    name: str
    #: The help of its ``--toll-<name>`` option.
    help: str
    #: The option's value as ``--help`` shows it (``PATH``); None: a flag, given or not.
    metavar: str | None = None
    #: The help of its ``toll_<name>`` ini twin; None: it has none.
    ini_help: str | None = None
    #: The ini twin's type as pytest names it: ``string``, ``bool`` or ``int`` (which pytest
    #: before 8.4 does not know: the plugin asks it for a string, and ``parse`` takes either).
    ini_type: str = "string"
    #: A given value (a string, or a bool or an int where pytest types the ini) as the
    #: setting, or ValueError saying why not. None: the gate resolves it on its own (the
    #: ledger's path, a shard) or, for a flag without an ini twin, it is whether it was given.
    parse: Callable[[Any], Any] | None = None
    default: Any = None
    #: The ledger's top-level key that may carry it, under the command line and the ini.
    ledger_key: str | None = None
    #: Given on the command line, it turns ``--toll`` on (an ini value never does: every
    #: run reads the ini file).
    implies_toll: bool = True
    #: The help of ``toll merge``'s flag of the same name (``--allow-increase``); None: the
    #: merge has no such flag.
    merge_help: str | None = None
    #: Every shard of a split suite must have run with the same value (``toll merge``
    #: checks it and judges with it).
    shards_agree: bool = False

    @property
    def flag(self) -> str:
        return f"--toll-{self.name.replace('_', '-')}"

    @property
    def ini_name(self) -> str:
        return f"toll_{self.name}"

    @property
    def merge_flag(self) -> str:
        return f"--{self.name.replace('_', '-')}"


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


def _window(value: Any) -> int:
    return _integer(value, 1, "must be a positive whole number of tokens")


def _tolerance(value: Any) -> int:
    return _integer(value, 0, "must be a whole number of tokens >= 0")


def _boolean(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"must be true or false, not {value!r}")


#: Every setting, in the order ``pytest --help`` lists their options (then the outputs').
SETTINGS: dict[str, Setting] = {
    setting.name: setting
    for setting in (
        Setting(
            "ledger",
            "the ledger (default: toll.yaml at the rootdir)",
            metavar="PATH",
            ini_help="path of the toll.yaml ledger, relative to the ini file",
        ),
        Setting(
            "update",
            "write new pins and lower improved ones (never raises a pin on its own)",
            default=False,
            merge_help="write new pins and lower improved ones, once, as --toll-update does",
        ),
        Setting(
            "allow_increase",
            "with --toll-update, also raise pins that regressed (shows in the diff)",
            default=False,
            merge_help="with --update, also raise regressed pins",
        ),
        Setting(
            "strict",
            "fail on stale entries (a pinned test that no longer exists) and on unpinned ones",
            ini_help="fail on stale ledger entries and unpinned ones (true/false)",
            ini_type="bool",
            parse=_boolean,
            default=False,
            merge_help="fail on stale ledger entries (as --toll-strict)",
        ),
        Setting(
            "shard",
            "this run is shard K of N (for `toll merge`); shard 1 measures the ledger's items",
            metavar="K/N",
            implies_toll=False,  # given alone, the gate stays off
        ),
        Setting(
            "window",
            f"context window for shares (default {DEFAULT_WINDOW:,})",
            metavar="TOKENS",
            ini_help="context window in tokens for window shares",
            ini_type="int",
            parse=_window,
            default=DEFAULT_WINDOW,
            ledger_key="window",
            shards_agree=True,
        ),
        Setting(
            "tolerance",
            "tokens allowed above a pin (default 0)",
            metavar="TOKENS",
            ini_help="tokens allowed above a pin",
            ini_type="int",
            parse=_tolerance,
            default=0,
            ledger_key="tolerance",
            shards_agree=True,
        ),
    )
}
