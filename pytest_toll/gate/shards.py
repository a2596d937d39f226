"""A test suite split across machines: which shard a run is, and what it tells the merge.

Each shard of a CI matrix runs ``pytest --toll --toll-json shard-K.json`` on its part of the
suite; ``toll merge`` (:mod:`pytest_toll.gate.merge`) turns the reports into one verdict and
one ratchet. A shard is named by ``--toll-shard K/N`` (plain node-id lists per job) or read
from pytest-split's ``--splits N --group K``. The ledger's own items are measured once:
with ``--toll-shard`` shard 1 measures them all and the others leave them out; with
pytest-split each item falls to the group the splitter gives it, like any test.

Pure: no pytest.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from pytest_toll.core.errors import UsageError
from pytest_toll.core.limits import LEDGER_MAX_BYTES
from pytest_toll.core.textio import MissingFile, read_file_bytes
from pytest_toll.report.data import ShardDict

BY_TOLL: Final = "--toll-shard"
BY_PYTEST_SPLIT: Final = "pytest-split"


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (1-based), and how the suite was split."""

    index: int
    count: int
    by: str = BY_TOLL

    @property
    def measures_ledger_items(self) -> bool | None:
        """Whether this shard measures the ledger's items; None when the splitter decides."""
        if self.by == BY_PYTEST_SPLIT:
            return None
        return self.index == 1

    def as_dict(self) -> ShardDict:
        return {
            "index": self.index,
            "count": self.count,
            "by": self.by,
            "measures_ledger_items": self.measures_ledger_items,
        }


def parse_shard(text: str, where: str = "--toll-shard") -> Shard:
    """``"2/4"`` -> shard 2 of 4; anything else is a usage error naming ``where``."""
    index_text, slash, count_text = str(text).strip().partition("/")
    if not (slash and index_text.isdigit() and count_text.isdigit()):
        raise UsageError(f"{where}: expected K/N (shard K of N, from 1), not {text!r}")
    index, count = int(index_text), int(count_text)
    if count < 1 or not 1 <= index <= count:
        raise UsageError(f"{where}: shard {index} of {count} does not exist (1 <= K <= N)")
    return Shard(index, count)


def resolve_shard(toll_shard: str | None, splits: int | None, group: int | None) -> Shard | None:
    """The run's shard: ``--toll-shard`` and pytest-split's options must agree when both are
    given (then the splitter still assigns the ledger's items)."""
    split = (
        Shard(int(group), int(splits), BY_PYTEST_SPLIT)
        if splits is not None and group is not None
        else None
    )
    if toll_shard is None:
        return split
    named = parse_shard(toll_shard)
    if split is not None:
        if (named.index, named.count) != (split.index, split.count):
            raise UsageError(
                f"--toll-shard {toll_shard} disagrees with pytest-split's "
                f"--group {group} --splits {splits}"
            )
        return split
    return named


def ledger_sha256(path: Path) -> str | None:
    """The sha256 of the ledger's bytes (None when there is no ledger file): shards that
    judged different ledgers must not be merged."""
    try:
        data = read_file_bytes(path, LEDGER_MAX_BYTES)
    except MissingFile:
        return None
    return hashlib.sha256(data).hexdigest()
