"""Two call reports compared: signed deltas per part and in total (``toll diff``)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from pytest_toll.calls.measuring import PARTS, USD_DIGITS, CallReport
from pytest_toll.core.errors import CouldNotJudge


@dataclass(frozen=True)
class PartDelta:
    before: int
    after: int
    cost_usd: float | None = None

    @property
    def delta(self) -> int:
        return self.after - self.before

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"before": self.before, "after": self.after, "delta": self.delta}
        if self.cost_usd is not None:
            data["cost_usd"] = round(self.cost_usd, USD_DIGITS)
        return data


@dataclass(frozen=True)
class CallDiff:
    """Signed per-part deltas between two call reports (USD only when both are priced)."""

    before_model: str
    after_model: str
    parts: Mapping[str, PartDelta]
    total: PartDelta
    notes: tuple[str, ...] = ()

    before_name: str = "before"
    after_name: str = "after"

    @property
    def increase_percent(self) -> float | None:
        """Signed percent change of the total tokens; None when the before total was zero."""
        if self.total.before == 0:
            return None if self.total.after else 0.0
        return 100.0 * self.total.delta / self.total.before

    def render(self) -> str:
        """A table of signed deltas, for ``toll diff``."""
        rows = [["part", self.before_name, self.after_name, "delta", "USD"]]
        for name, delta in [*self.parts.items(), ("total", self.total)]:
            usd = "" if delta.cost_usd is None else f"{delta.cost_usd:+.6f}"
            rows.append([name, f"{delta.before:,}", f"{delta.after:,}", f"{delta.delta:+,}", usd])
        widths = [max(len(row[i]) for row in rows) for i in range(5)]
        lines = [f"call {self.before_model} → {self.after_model}"]
        for row in rows:
            cells = [row[0].ljust(widths[0])] + [
                cell.rjust(width) for cell, width in zip(row[1:], widths[1:])
            ]
            lines.append("  ".join(cells).rstrip())
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "call-diff",
            "before_model": self.before_model,
            "after_model": self.after_model,
            "parts": {name: delta.as_dict() for name, delta in self.parts.items()},
            "total": self.total.as_dict(),
            "notes": list(self.notes),
        }


def _report_field(report: Mapping[str, Any], where: str, *path: str) -> Any:
    value: Any = report
    for key in path:
        if not isinstance(value, Mapping) or key not in value:
            raise CouldNotJudge(f"{where}: not a call report (no {'.'.join(path)})")
        value = value[key]
    return value


def _delta(before: Mapping[str, Any], after: Mapping[str, Any], where: str) -> PartDelta:
    tokens = []
    for side, label in ((before, "before"), (after, "after")):
        value = side.get("tokens")
        if isinstance(value, bool) or not isinstance(value, int):
            raise CouldNotJudge(f"{where} ({label}): tokens must be a whole number")
        tokens.append(value)
    cost = None
    if isinstance(before.get("cost_usd"), int | float) and isinstance(
        after.get("cost_usd"), int | float
    ):
        cost = after["cost_usd"] - before["cost_usd"]
    return PartDelta(tokens[0], tokens[1], cost)


def diff(before: CallReport | Mapping[str, Any], after: CallReport | Mapping[str, Any]) -> CallDiff:
    """Signed deltas per part and total, from measurements or their ``as_dict()`` reports."""
    reports = [r.as_dict() if isinstance(r, CallReport) else r for r in (before, after)]
    for report, label in zip(reports, ("before", "after")):
        if _report_field(report, label, "kind") != "call":
            raise CouldNotJudge(f"{label}: not a call report (kind {report.get('kind')!r})")
    old, new = reports
    parts = {
        name: _delta(
            _report_field(old, "before", "parts", name),
            _report_field(new, "after", "parts", name),
            f"parts.{name}",
        )
        for name in PARTS
    }
    total = _delta(
        _report_field(old, "before", "total"), _report_field(new, "after", "total"), "total"
    )
    notes = []
    if old.get("method") != new.get("method"):
        notes.append(
            f"counted differently ({old.get('method')} before, {new.get('method')} after): "
            "the deltas mix methods"
        )
    if old.get("tool_schemas") != new.get("tool_schemas"):
        notes.append(
            f"tool schemas measured {old.get('tool_schemas')} before, "
            f"{new.get('tool_schemas')} after"
        )
    if old.get("model") != new.get("model"):
        notes.append(f"different models: {old.get('model')} before, {new.get('model')} after")
    if bool(old.get("probe")) != bool(new.get("probe")):
        probed = "before" if old.get("probe") else "after"
        notes.append(
            f"{probed} was measured on the '.' probe message (it had no messages), the other "
            "on real messages: the messages part is not comparable"
        )
    return CallDiff(str(old.get("model")), str(new.get("model")), parts, total, tuple(notes))


def diff_call_reports(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    before_name: str = "before",
    after_name: str = "after",
) -> CallDiff:
    """``diff`` for two JSON call reports, naming them (the ``toll diff`` entry point)."""
    return replace(diff(before, after), before_name=before_name, after_name=after_name)
