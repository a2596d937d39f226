"""The text views of the calls job: ``toll measure``'s table, its deferred-tools line and
budget verdict, and ``toll weigh --model``'s lines (a tool list's total for one model).

Each takes finished reports and returns the text a person reads; nothing here measures or
asks count_tokens.
"""

from __future__ import annotations

from pytest_toll.calls.deferred import DeferredReport
from pytest_toll.calls.measuring import CallReport
from pytest_toll.calls.native import PROBE_MESSAGE, ModelTotal
from pytest_toll.core.models import share_text
from pytest_toll.core.tokens import O200K, scaled_method


def render_measure(
    result: CallReport, deferred: DeferredReport | None = None, over_budget: int | None = None
) -> str:
    """``toll measure``'s text: the call's table, then the deferred-tools comparison when one
    was asked for, then the budget ``over_budget`` when the graded o200k total is above it."""
    parts = [render_call(result)]
    if deferred is not None:
        parts.append(render_deferred(deferred))
    if over_budget is not None:
        parts.append(f"over budget: {result.graded_tokens:,} > {over_budget:,} o200k tokens")
    return "\n".join(parts)


def render_deferred(report: DeferredReport) -> str:
    """Eager vs deferred tool advertising, per request: each figure beside its label (the
    o200k count, and the scaled one when the model has a factor)."""

    def tokens(raw: int, scaled: int | None) -> str:
        shown = f"{raw:,} {O200K}"
        return shown if scaled is None else f"{shown} ({scaled:,} {report.method})"

    eager, deferred = report.eager, report.deferred
    saved_scaled = (
        None if eager.scaled is None or deferred.scaled is None else eager.scaled - deferred.scaled
    )
    usd = report.saved_usd
    if report.saved >= 0:
        verdict = f"saves {tokens(report.saved, saved_scaled)} tokens"
        verdict += "" if usd is None else f", ${usd:,.6f}"
    else:
        more = None if saved_scaled is None else -saved_scaled
        verdict = f"costs {tokens(-report.saved, more)} more tokens"
        verdict += "" if usd is None else f", ${-usd:,.6f}"
    total = len(report.core) + len(report.deferred_names)
    return (
        f"deferred tools: all {total} tools advertised: {tokens(eager.tokens, eager.scaled)}; "
        f"{len(report.core)} core + {len(report.meta)} meta-tools ({', '.join(report.meta)}) "
        f"+ the deferred names: {tokens(deferred.tokens, deferred.scaled)}; "
        f"deferring {verdict} per request, before any tool is loaded"
    )


def _usd(value: float | None) -> str:
    return "—" if value is None else f"${value:,.6f}"


def render_call(result: CallReport) -> str:
    """The table a person reads: one row per part, raw and scaled side by side."""
    scaled = result.total.scaled is not None
    graded = result.o200k
    header: list[str] = ["part", result.tokenizer if result.source != "native" else "native"]
    if graded is not None:
        header.append("o200k_base")
    if scaled:
        header.append(f"×{result.scale.factor:.2f}")
    header.append("USD")
    rows: list[list[str]] = [header]
    for name, part in [*result.parts.items(), ("total", result.total)]:
        row = [name, f"{part.tokens:,}"]
        if graded is not None:
            row.append(f"{graded[name]:,}")
        if scaled:
            row.append(f"{part.scaled:,}" if part.scaled is not None else "")
        row.append(_usd(part.cost_usd))
        rows.append(row)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        f"call {result.model} ({result.provider}) — {result.method}"
        + (f", scaled {result.scaled_method}" if result.scaled_method else "")
        + (" — probe message '.'" if result.probe else "")
    ]
    for row in rows:
        cells = [row[0].ljust(widths[0])] + [
            cell.rjust(width) for cell, width in zip(row[1:], widths[1:])
        ]
        lines.append("  ".join(cells).rstrip())
    if result.window:
        share = result.window_share or 0.0
        over = " — more than the window holds" if share > 1 else ""
        lines.append(f"~{share_text(share)} of a {result.window:,} window{over}")
    if scaled:
        lines.append(
            f"scale: ×{result.scale.factor:.2f} ({'measured' if result.scale.measured else 'not measured'}: "
            f"{result.scale.source}); budgets and pins use the o200k column"
        )
    elif graded is not None:
        lines.append("native: Anthropic's count_tokens; budgets and pins use the o200k_base column")
    elif result.tuning.chars_per_token is not None:
        lines.append(f"scale: none ({result.scale.source})")
    elif not result.scale.measured and result.source != "native":
        lines.append(f"scale: none measured for {result.model}; the o200k count is shown unscaled")
    if result.source != "native":
        lines.append(f"tuning: {result.tuning.describe()}")
    if result.total.cost_usd is not None:
        lines.append("USD: uncached input at the request's price tier")
    elif not any(result.model in note for note in result.notes):
        lines.append(
            f"USD: no input price known for {result.model} (add one under models: in toll.yaml)"
        )
    if result.tool_schemas == "compact":
        lines.append(
            "tools: compacted copies of the schemas (titles, $schema and single-use $defs removed)"
        )
    lines.extend(f"note: {note}" for note in result.notes)
    return "\n".join(lines)


def render_model_total(total: ModelTotal) -> str:
    """``toll weigh --model``'s lines: the claude total for the model, scaled or not (with the
    scale's provenance) and, with ``--exact``, the native delta each estimate is held against."""
    state = "measured" if total.scale.measured else "not measured"
    lines = [f"for {total.name}: claude total {total.o200k:,} ({O200K})"]
    if total.scaled is not None:
        lines.append(
            f"  {total.scaled:,} ({scaled_method(total.scale.factor)}; scale {state}: "
            f"{total.scale.source})"
        )
    else:
        lines.append(f"  unscaled (scale ×{total.scale.factor:.2f}, {state}: {total.scale.source})")
    if total.exact is not None:
        lines.append(
            f"  exact: the tools add {total.exact.tokens:,} native tokens (count_tokens: "
            f"{total.exact.with_tools:,} with them, {total.exact.without_tools:,} without, "
            f"on a '{PROBE_MESSAGE}' probe message)"
        )
        for method, comparison in total.comparisons().items():
            lines.append(f"  {method}: {comparison.describe()}")
    return "\n".join(lines)
