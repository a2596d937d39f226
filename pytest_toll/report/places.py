"""Where a renderer points a finding: at the file and line that caused it, when it has one.

A finding placed by :mod:`pytest_toll.gate.locate` carries ``file`` (relative to the
ledger's folder, or absolute) and ``line``. A renderer names files as the checkout does
(relative to the workspace, like the ledger itself), so the file is joined to the ledger's
folder here; a finding without a place is pointed at its entry's ledger line, as before.

A gate failure (regressed, over budget) is pointed at the part that grew most among those
whose place the entry's ``detail.places`` names (a skill's body in its SKILL.md, a tool's
description in the server's source), with the ledger line beside it.
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


#: The gate failures that are about a part that grew (an error or a stale entry is not).
GROWN = frozenset({"regressed", "over_budget"})


def failure_place(entry: Mapping[str, Any], ledger_file: str) -> tuple[str, int | None] | None:
    """Where a failing entry's growth is written: the place of the part that grew most (by
    its change against the pin, then by its size) among those the entry places, or None."""
    if entry.get("outcome") not in GROWN:
        return None
    places = (entry.get("detail") or {}).get("places")
    if not isinstance(places, Mapping) or not places:
        return None
    grown = sorted(
        (
            (part.get("delta") or 0, part.get("measured") or 0, str(part.get("name")))
            for part in entry.get("parts") or ()
            if str(part.get("name")) in places and (part.get("delta") or 0) > 0
        ),
        key=lambda row: (-row[0], -row[1], row[2]),
    )
    if not grown and entry.get("outcome") == "over_budget":
        # Over budget with nothing grown against a pin: the largest placed part.
        grown = sorted(
            (
                (0, part.get("measured") or 0, str(part.get("name")))
                for part in entry.get("parts") or ()
                if str(part.get("name")) in places
            ),
            key=lambda row: (-row[1], row[2]),
        )
    for _, _, name in grown:
        place = places.get(name)
        if isinstance(place, Mapping):
            found = finding_place(place, ledger_file)
            if found is not None:
                return found
    return None
