"""What the plugin tests share for the pytest runs they start with pytester."""

from __future__ import annotations

#: Plugins the inner runs do not need; loading them dominates a run on a busy machine.
QUIET = ("-p", "no:hypothesispytest", "-p", "no:anyio", "-p", "no:cacheprovider")
