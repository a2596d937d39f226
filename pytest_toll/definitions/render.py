"""The text views of the definitions job: ``toll weigh``'s table and ``toll fix``'s plan.

Each takes a finished report and returns the text a person reads; nothing here measures,
lists a server or writes a file (``--write`` is the CLI's, this only names the file written).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from pytest_toll.core.inert import shown
from pytest_toll.core.models import share_text

if TYPE_CHECKING:
    # Types only: a view loads no measuring code (the fix planner starts servers).
    from pytest_toll.definitions.fix import FixReport
    from pytest_toll.definitions.weigh import ToolsReport


def render_weigh(report: ToolsReport) -> str:
    """``toll weigh``'s text: a table by cost, totals, window line, breakdown and findings."""
    method = report.method
    lines = [f"toll weigh: {shown(report.target)}"]
    count = len(report.tools)
    detail = [f"{count} tool{'' if count == 1 else 's'}", f"shape: {report.source_shape}"]
    if report.server is not None:
        server = report.server
        pages = server.get("pages")
        detail.insert(
            0,
            f"{server.get('transport')}, protocol {server.get('protocol_version')}, "
            f"{pages} page{'' if pages == 1 else 's'}",
        )
    lines.append("  " + " · ".join(detail))
    lines.append("")
    numbers = [report.claude, *(row.tokens for row in report.tools)]
    width = max(len("tokens"), *(len(f"{n:,}") for n in numbers))
    lines.append(
        f"{'tokens':>{width}}  {'descr':>6}  {'schema':>6}  {'output':>6}  tool  ({method} tokens)"
    )
    for row in report.by_cost():
        output = f"{row.output_schema_tokens:,}" if row.output_schema_tokens else "-"
        lines.append(
            f"{row.tokens:>{width},}  {row.description_tokens:>6,}  {row.schema_tokens:>6,}  "
            f"{output:>6}  {shown(row.name)}"
        )
    lines.append(
        f"{report.framing:>{width},}  {'':>6}  {'':>6}  {'':>6}  (framing: <functions> wrapper)"
    )
    lines.append(f"{'-' * width}")
    lines.append(f"{report.claude:>{width},}  total, claude serialization ({method})")
    if report.instructions is not None:
        lines.append(
            f"{report.instructions:>{width},}  server instructions ({method}), beside the tools"
        )
    lines.append("")
    lines.append(
        f"totals ({method}): claude {report.claude:,} · openai {report.openai:,} · "
        f"raw {report.raw:,}"
    )
    over = " — more than the window holds" if report.window_share > 1 else ""
    lines.append(
        f"window: ~{share_text(report.window_share)} of a {report.window:,}-token window{over} "
        f"(claude total + instructions, {method}; shown, never graded)"
    )
    if report.breakdown:
        lines.append("")
        lines.append(f"what costs most in the heaviest tools ({method} tokens):")
        for entry in report.breakdown:
            parts = sorted(entry["parts"].items(), key=lambda item: -item[1])
            costs = ", ".join(f"{name.replace('_', ' ')} {n:,}" for name, n in parts if n)
            lines.append(f"  {shown(entry['tool'])} ({entry['tokens']:,}): {costs}")
    lines.append("")
    if report.findings:
        lines.append("findings:")
        lines.extend(f"  {finding}" for finding in report.findings)
    else:
        lines.append("findings: none")
    return "\n".join(lines)


def render_fix(report: FixReport, written: Path | None = None) -> str:
    """``toll fix``'s text: before → after, then the edits by saving."""
    method = report.method
    saved = report.before - report.after
    percent = f", {-saved / report.before:+.1%}" if report.before else ""
    change = f"{-saved:+,} tok{percent}" if saved else "no change"
    lines = [
        f"toll fix: {shown(report.target)}",
        f"  claude total ({method}): {report.before:,} → {report.after:,} with every safe edit "
        f"({change})",
        "",
    ]
    if not report.suggestions:
        lines.append("nothing to fix: no edit makes the tools shorter")
    else:
        width = max(len("saves"), *(len(f"{s.saving:,}") for s in report.suggestions))
        lines.append(f"{'saves':>{width}}  {'kind':<6}  edit  ({method} tokens, each on its own)")
        for suggestion in report.suggestions:
            kind = "safe" if suggestion.safe else "advice"
            lines.append(f"{suggestion.saving:>{width},}  {kind:<6}  {shown(suggestion.id)}")
            lines.append(f"{'':>{width}}  {'':<6}    {shown(suggestion.what)}")
    lines.append("")
    if written is not None:
        lines.append(f"wrote {written}: every safe edit applied (toll weigh --tools {written})")
    else:
        lines.append("safe edits keep each schema's meaning; --write OUT writes them all")
    return "\n".join(lines)
