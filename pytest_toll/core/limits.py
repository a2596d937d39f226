"""Defaults that bound a measurement, shared by every job and adapter."""

from __future__ import annotations

#: The context window a share is printed against when no model gives one (tokens).
DEFAULT_WINDOW = 1_000_000
#: The deadline of one whole measurement that talks to another process or host (seconds).
DEFAULT_TIMEOUT = 30.0
#: How far an estimate may read from the provider's own count before it is called out.
NATIVE_TOLERANCE = 0.05
