"""The terminal report of ``toll skills``: one row per skill, its reference files, totals, findings."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_toll.core import tokens
from pytest_toll.core.inert import shown
from pytest_toll.skills.report import SkillsReport


def _share(tokens_: int, window: int) -> str:
    share = 100 * tokens_ / window
    return f"{share:.2g}%" if share < 1 else f"{share:.1f}%"


def render_text(report: SkillsReport) -> str:
    """The terminal report: one row per skill, its reference files, totals, findings."""
    header = ("metadata", "body", "lines", "references", "skill")
    rows = [
        (
            f"{skill.metadata:,}",
            f"{skill.body:,}",
            f"{skill.body_lines:,}",
            f"{skill.references_total:,}",
            f"{shown(skill.name)}  ({shown(skill.path)})",
        )
        for skill in report.skills
    ]
    totals = report.totals
    total_row = (
        f"{totals['metadata']:,}",
        f"{totals['body']:,}",
        "",
        f"{totals['references']:,}",
        f"total ({len(report.skills)} skill{'s' if len(report.skills) != 1 else ''})",
    )
    widths = [max(len(row[i]) for row in [header, *rows, total_row]) for i in range(4)]

    def line(row: Sequence[str]) -> str:
        return "  ".join(cell.rjust(width) for cell, width in zip(row, widths)) + f"  {row[4]}"

    out = [line(header)]
    for skill, row in zip(report.skills, rows):
        out.append(line(row))
        indent = " " * (sum(widths) + 2 * len(widths))
        for reference in skill.references:
            amount = "binary, not counted" if reference.binary else f"{reference.tokens:,}"
            out.append(f"{indent}  {shown(reference.path)}: {amount}")
        for script in skill.executed:
            amount = "binary" if script.binary else f"{script.tokens:,} tokens of source"
            out.append(f"{indent}  {shown(script.path)}: executed ({amount}, not loaded)")
    out.append(line(total_row))
    out.append(
        f"always loaded: {totals['metadata']:,} tokens of metadata, "
        f"~{_share(totals['metadata'], report.window)} of a {report.window:,}-token window; "
        f"bodies load on activation, references on demand"
    )
    if "executed" in totals:
        out.append(
            f"executed: {totals['executed']:,} tokens of script source, not loaded "
            "(a script's output enters the context when it runs; its source only if read)"
        )
    out.append(f"method: {tokens.O200K} ({report.tokenizer})")
    if report.findings:
        out.append("")
        out.extend(str(finding) for finding in report.findings)
    return "\n".join(out)
