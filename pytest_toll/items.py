"""Ledger entries as pytest items: ``toll.yaml::servers::files``, ``toll.yaml::transcripts``.

The ledger file is a collector, each section a collector and each entry an item, so node
ids, ``-k`` and ``--co`` work as for Python tests. An item measures its entry through the
registry in :mod:`pytest_toll.gate.measurers`, judges it (:func:`pytest_toll.ratchet.judge`),
leaves the result on its report as a plain dict (how it reaches the xdist controller), and
fails with a short table rather than a traceback.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.plugin import RESULT_PROPERTY, require_state, state_of
from pytest_toll.report.model import EntryResult, failure_text


class EntryFailed(Exception):
    """A ledger entry failed its judgement; ``repr_failure`` shows the table."""

    def __init__(self, result: EntryResult) -> None:
        super().__init__(result.message)
        self.result = result


class LedgerFile(pytest.File):
    """The ledger: one section collector per entry kind present."""

    def collect(self) -> Iterator[pytest.Item | pytest.Collector]:
        from pytest_toll.gate.measurers import MEASURERS

        state = state_of(self.config)
        if state is None:
            return
        data = state.ledger.data
        for kind in MEASURERS:
            section = data.get(kind)
            if kind == "transcripts":
                if isinstance(section, Mapping):
                    yield LedgerItem.from_parent(self, name=kind, kind=kind, entry_name=kind)
            elif isinstance(section, Mapping) and section:
                yield LedgerSection.from_parent(self, name=kind, kind=kind)


class LedgerSection(pytest.Collector):
    """``servers``, ``skills``…: one item per entry, in the ledger's order."""

    def __init__(self, *, kind: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind

    def collect(self) -> Iterator[pytest.Item]:
        state = state_of(self.config)
        if state is None:
            return
        for name in state.ledger.section(self.kind):
            yield LedgerItem.from_parent(self, name=str(name), kind=self.kind, entry_name=name)


class LedgerItem(pytest.Item):
    """One ledger entry, measured and judged when run."""

    def __init__(self, *, kind: str, entry_name: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.kind = kind
        self.entry_name = entry_name

    def _keys(self) -> tuple[str, ...]:
        return (self.kind,) if self.kind == "transcripts" else (self.kind, self.entry_name)

    def runtest(self) -> None:
        from pytest_toll.gate.measurers import MEASURERS
        from pytest_toll.gate.ratchet import judge

        state = require_state(self.config)
        ledger = state.ledger
        keys = self._keys()
        entry: Mapping[str, Any] = (
            ledger.section(self.kind)
            if self.kind == "transcripts"
            else ledger.section(self.kind).get(self.entry_name) or {}
        )
        measurement = None
        error = ""
        try:
            measurement = MEASURERS[self.kind](self.entry_name, entry, state.entry_context())
        except CouldNotJudge as failure:
            error = str(failure)
        except ImportError as failure:
            # A kind whose measuring module is not installed cannot be judged: an error.
            error = f"{'.'.join(keys)}: cannot be measured here ({failure})"
        result = judge(
            kind=self.kind,
            name=self.entry_name,
            nodeid=self.nodeid,
            line=ledger.line_of(keys),
            entry=entry,
            measurement=measurement,
            policy=state.policy,
            error=error,
        )
        self.user_properties.append((RESULT_PROPERTY, result.as_dict()))
        if result.failed:
            raise EntryFailed(result)

    def repr_failure(
        self,
        excinfo: pytest.ExceptionInfo[BaseException],
        style: Any = None,
    ) -> str | Any:
        if isinstance(excinfo.value, EntryFailed):
            return failure_text(excinfo.value.result)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int | None, str]:
        state = state_of(self.config)
        line = state.ledger.line_of(self._keys()) if state is not None else None
        return self.path, None if line is None else line - 1, "::".join(self._keys())
