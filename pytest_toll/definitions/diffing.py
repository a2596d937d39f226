"""Two ``toll weigh --json`` reports compared on the primary metric: the claude total and each
tool's bare claude line (``toll diff``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_toll.core.errors import CouldNotJudge


@dataclass(frozen=True)
class ToolChange:
    name: str
    change: str  # added | removed | grown | shrunk
    before: int
    after: int

    @property
    def delta(self) -> int:
        return self.after - self.before

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "change": self.change,
            "before": self.before,
            "after": self.after,
            "delta": self.delta,
        }


@dataclass(frozen=True)
class ToolsDiff:
    """Two tool reports compared on the primary metric (claude total and per-tool lines)."""

    before_target: str
    after_target: str
    tokenizer: str
    before: int
    after: int
    changes: tuple[ToolChange, ...]
    unchanged: int
    #: Differences in how the two reports were made (their ``method``), said beside the deltas.
    notes: tuple[str, ...] = ()

    @property
    def delta(self) -> int:
        return self.after - self.before

    @property
    def increase_percent(self) -> float | None:
        """The signed change in percent of ``before``; None when before was 0."""
        if self.before == 0:
            return 0.0 if self.after == 0 else None
        return self.delta / self.before * 100

    def as_dict(self) -> dict[str, Any]:
        percent = self.increase_percent
        return {
            "kind": "tools-diff",
            "before_target": self.before_target,
            "after_target": self.after_target,
            "tokenizer": self.tokenizer,
            "total": {
                "before": self.before,
                "after": self.after,
                "delta": self.delta,
                "percent": None if percent is None else round(percent, 2),
            },
            "changes": [change.as_dict() for change in self.changes],
            "unchanged": self.unchanged,
            "notes": list(self.notes),
        }

    def render(self) -> str:
        percent = self.increase_percent
        shown = "new" if percent is None else f"{percent:+.1f}%"
        lines = [
            f"tools total (claude, {self.tokenizer}): {self.before:,} → {self.after:,} "
            f"({self.delta:+,} tok, {shown})"
        ]
        if self.changes:
            width = max(len(f"{abs(c.delta):,}") for c in self.changes) + 1
            for change in self.changes:
                lines.append(
                    f"  {change.delta:>+{width},}  {change.change:<7}  {change.name}  "
                    f"({change.before:,} → {change.after:,})"
                )
        lines.append(f"  {self.unchanged} tool(s) unchanged")
        lines.extend(f"note: {note}" for note in self.notes)
        return "\n".join(lines)


def _tool_rows(report: Mapping[str, Any], name: str) -> dict[str, int]:
    rows = report.get("tools")
    if not isinstance(rows, list):
        raise CouldNotJudge(f"{name}: 'tools' must be an array of tool rows")
    found: dict[str, int] = {}
    for index, row in enumerate(rows):
        if (
            not isinstance(row, dict)
            or not isinstance(row.get("name"), str)
            or not isinstance(row.get("tokens"), int)
        ):
            raise CouldNotJudge(
                f"{name}: tools[{index}] needs a string 'name' and integer 'tokens'"
            )
        key = row["name"]
        # A name listed twice keeps both rows apart rather than summing them silently.
        suffix = 2
        while key in found:
            key, suffix = f"{row['name']}#{suffix}", suffix + 1
        found[key] = row["tokens"]
    return found


def _claude_total(report: Mapping[str, Any], name: str) -> int:
    totals = report.get("totals")
    total = totals.get("claude") if isinstance(totals, dict) else None
    if not isinstance(total, int):
        raise CouldNotJudge(f"{name}: totals.claude must be an integer")
    return total


def diff_tools_reports(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    before_name: str = "before",
    after_name: str = "after",
) -> ToolsDiff:
    """Compare two ``toll weigh --json`` reports: total delta and per-tool changes.

    Changes are sorted by the size of the change (largest first), then by name.
    """
    for report, name in ((before, before_name), (after, after_name)):
        if report.get("kind") != "tools":
            raise CouldNotJudge(f"{name}: not a tools report (kind {report.get('kind')!r})")
    tokenizer = str(before.get("tokenizer"))
    if after.get("tokenizer") != tokenizer:
        raise CouldNotJudge(
            f"{before_name} was counted with {tokenizer}, {after_name} with "
            f"{after.get('tokenizer')}; the counts are not comparable"
        )
    old = _tool_rows(before, before_name)
    new = _tool_rows(after, after_name)
    changes: list[ToolChange] = []
    unchanged = 0
    for name in [*old, *(n for n in new if n not in old)]:
        if name not in new:
            changes.append(ToolChange(name, "removed", old[name], 0))
        elif name not in old:
            changes.append(ToolChange(name, "added", 0, new[name]))
        elif new[name] > old[name]:
            changes.append(ToolChange(name, "grown", old[name], new[name]))
        elif new[name] < old[name]:
            changes.append(ToolChange(name, "shrunk", old[name], new[name]))
        else:
            unchanged += 1
    changes.sort(key=lambda change: (-abs(change.delta), change.name))
    return ToolsDiff(
        before_target=str(before.get("target", "")),
        after_target=str(after.get("target", "")),
        tokenizer=tokenizer,
        before=_claude_total(before, before_name),
        after=_claude_total(after, after_name),
        changes=tuple(changes),
        unchanged=unchanged,
        notes=_method_notes(before, after, before_name, after_name),
    )


def _method_notes(
    before: Mapping[str, Any], after: Mapping[str, Any], before_name: str, after_name: str
) -> tuple[str, ...]:
    old, new = before.get("method"), after.get("method")
    if old == new:
        return ()
    return (
        f"counted differently ({old} in {before_name}, {new} in {after_name}): the deltas mix "
        "methods",
    )
