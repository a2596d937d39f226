"""The two ways a measurement can end without a verdict.

A failed measurement is never a pass: every layer turns these into "could not judge"
(CLI exit 2, an error outcome for a ledger item, a usage error for bad configuration).
"""

from __future__ import annotations


class CouldNotJudge(Exception):
    """A measurement could not be made (unreadable input, server down, nothing to measure)."""


class UsageError(CouldNotJudge):
    """The user asked for something invalid: a bad option value, a broken ledger."""
