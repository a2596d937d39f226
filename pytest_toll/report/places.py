"""Where a renderer points a finding: at the file and line that caused it, when it has one.

A finding placed by :mod:`pytest_toll.gate.locate` carries ``file`` (relative to the
ledger's folder, or absolute) and ``line``. A renderer names files as the checkout does
(relative to the workspace, like the ledger itself), so the file is joined to the ledger's
folder here; a finding without a place is pointed at its entry's ledger line, as before.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping
from typing import Any


def finding_place(finding: Mapping[str, Any], ledger_file: str) -> tuple[str, int | None] | None:
    """``(file, line)`` of the place a finding was caused, as the renderers name files, or
    None when it has none (it is then shown at the ledger line)."""
    file = finding.get("file")
    if not isinstance(file, str) or not file:
        return None
    line = finding.get("line")
    number = line if isinstance(line, int) and not isinstance(line, bool) and line > 0 else None
    if posixpath.isabs(file):
        return file, number
    folder = posixpath.dirname(ledger_file)
    return posixpath.normpath(posixpath.join(folder, file)) if folder else file, number
