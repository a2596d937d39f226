"""The two ways a measurement can end without a verdict.

A failed measurement is never a pass: every layer turns these into "could not judge"
(CLI exit 2, an error outcome for a ledger item, a usage error for bad configuration).
"""

from __future__ import annotations

from typing import Literal

from pytest_toll.core.secrets import scrub


class CouldNotJudge(Exception):
    """A measurement could not be made (unreadable input, server down, nothing to measure).

    Its text is scrubbed of every configured secret when it is shown, wherever it goes (a CLI
    line, a plugin item failure, JSON, SARIF, JUnit).
    """

    def __init__(self, *args: object) -> None:
        # Scrubbed when made (so a repr holds no secret) and when shown (for secrets
        # configured since).
        super().__init__(*(scrub(arg) if isinstance(arg, str) else arg for arg in args))

    def __str__(self) -> str:
        return scrub(super().__str__())


class UsageError(CouldNotJudge):
    """The user asked for something invalid: a bad option value, a broken ledger."""


#: The words a message uses for a value's type, by the kind of document it came from: a JSON
#: document's own vocabulary (tool lists), a YAML document's (ledger, skill frontmatter, with
#: an article), or Python's (request bodies built in code).
TypeWords = Literal["json", "yaml", "python"]

_JSON_WORDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "boolean"),
    ((int, float), "number"),
    (str, "string"),
    (list, "array"),
    (dict, "object"),
)
_YAML_WORDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    ((int, float), "a number"),
    (str, "a string"),
    (list, "a list"),
    (dict, "a mapping"),
)


def describe_type(value: object, words: TypeWords) -> str:
    """What ``value`` is, for an error message such as "must be an object, not array"."""
    if words == "python":
        return "null" if value is None else type(value).__name__
    if value is None:
        return "null" if words == "json" else "empty"
    for kind, word in _JSON_WORDS if words == "json" else _YAML_WORDS:
        if isinstance(value, kind):
            return word
    return type(value).__name__ if words == "json" else f"a {type(value).__name__}"


def require_non_negative_number(value: object, where: str) -> float:
    """``value`` as a float, or a usage error naming ``where`` (booleans are not numbers)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise UsageError(f"{where}: must be a non-negative number, not {value!r}")
    return float(value)
