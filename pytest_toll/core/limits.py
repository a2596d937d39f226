"""Defaults that bound a measurement, shared by every job and adapter."""

from __future__ import annotations

#: The context window a share is printed against when no model gives one (tokens).
DEFAULT_WINDOW = 1_000_000
#: The deadline of one whole measurement that talks to another process or host (seconds).
DEFAULT_TIMEOUT = 30.0

# --- the ledger (toll.yaml) ---------------------------------------------------------------
#: The largest ledger read (bytes). A ledger of 50,000 pinned tests is about 3 MB; anything
#: bigger is not a hand-kept ledger, and reading it must not take minutes or gigabytes.
LEDGER_MAX_BYTES = 8 * 1024 * 1024
#: How deeply mappings and lists may nest. The schema's deepest path is 5 levels
#: (``transcripts.decisions.<shape>.status``); deeper nesting is a mistake or an attack.
LEDGER_MAX_DEPTH = 32
#: How many nodes aliases (``*name``) may add in total, expanded: anchors for shared
#: ``env:``/``headers:`` maps are fine, an alias bomb (each level repeating the last) is not.
LEDGER_MAX_ALIAS_NODES = 10_000
#: How long a ``--toll-update`` waits for another run's lock on the ledger (seconds).
LEDGER_LOCK_TIMEOUT = 60.0
