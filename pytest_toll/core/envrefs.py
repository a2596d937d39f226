"""``${VAR}`` and ``${VAR:-default}`` in server settings, expanded as agent hosts expand them.

Claude Code expands these in an ``.mcp.json`` server's ``command``, ``args``, ``env``,
``url`` and ``headers``; a ledger entry copied from such a file must mean the same thing,
so the gate expands the same fields the same way. ``${VAR:-default}`` takes the default
when ``VAR`` is unset or empty (the shell's ``:-``); ``${VAR}`` with ``VAR`` unset is an
error naming the variable, and with ``VAR`` set to an empty string an error saying so —
sending ``Bearer `` with nothing after it only fails later with a message that names no
variable. Every value taken from the environment is handed to the scrubber under its
variable's name, so a secret passed as an argument or in a URL is masked like one in a
header.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from pytest_toll.core.errors import UsageError
from pytest_toll.core.secrets import remember_setting

#: ``${NAME}`` or ``${NAME:-default}``; the default runs to the first ``}``.
REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand(value: str, where: str, environ: Mapping[str, str] | None = None) -> str:
    """``value`` with every reference replaced; ``where`` names the setting in errors."""
    environ = os.environ if environ is None else environ

    def substitute(match: re.Match[str]) -> str:
        name, default = match.group(1), match.group(2)
        found = environ.get(name)
        if default is not None:
            # A default stands in for unset and for empty, as the shell's ${VAR:-default}.
            return found if found else default
        if found is None:
            raise UsageError(
                f"{where}: environment variable {name} is not set "
                f"(set it, or write ${{{name}:-default}})"
            )
        if not found:
            raise UsageError(f"{where}: environment variable {name} is set but empty")
        remember_setting(name, found, kind="env")
        return found

    return REFERENCE.sub(substitute, value)


def expand_all(
    values: Mapping[str, str], where: str, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A mapping's values expanded; each error names ``<where> <key>``."""
    return {key: expand(value, f"{where} {key}", environ) for key, value in values.items()}


def references(value: str) -> list[str]:
    """The variable names ``value`` refers to, in order."""
    return [match.group(1) for match in REFERENCE.finditer(value)]
