"""``toll weigh``: the token cost of an MCP server's tools (or a tools file), with the rules.

    toll weigh [--json] [--window N] [--check-order] [--timeout S] [--env K=V]...
               [--header K=V]... [--cwd DIR] [--rule ID=SEVERITY]... [--limit NAME=N]...
               (-- COMMAND ARGS... | --url URL | --tools FILE)

Exit 0 measured and no error-severity finding, 1 an error finding fired, 2 could not judge.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import Any

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.calls.native import PROBE_MESSAGE, NativeComparison, ToolsDelta, tools_delta
from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION, fail
from pytest_toll.cli._html import add_html_option, write_page
from pytest_toll.cli._ledger import add_ledger_option, catalogue_of
from pytest_toll.cli.options import (
    add_json_option,
    add_tools_source_options,
    add_window_option,
    key_value_pairs,
    tools_source,
)
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import RuleOverrides, has_errors
from pytest_toll.core.models import Scale, share_text
from pytest_toll.core.tokens import O200K, scaled_method
from pytest_toll.definitions.rules import DEFAULT_THRESHOLDS, RULE_IDS
from pytest_toll.definitions.source import weigh_source
from pytest_toll.definitions.weigh import ToolsReport
from pytest_toll.report.html import render_page


def configure(parser: argparse.ArgumentParser) -> None:
    add_tools_source_options(parser)
    add_json_option(parser, "the JSON report")
    add_html_option(parser)
    add_window_option(parser)
    parser.add_argument(
        "--check-order",
        action="store_true",
        help="list the tools on two fresh connections and compare the order (E112)",
    )
    parser.add_argument(
        "--rule",
        action="append",
        default=[],
        metavar="ID=SEVERITY",
        help="override a rule's severity: error, warn, info or off",
    )
    parser.add_argument(
        "--limit",
        action="append",
        default=[],
        metavar="NAME=N",
        help="override a rule threshold, e.g. tool_tokens=500",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        help="also show the claude total scaled for this model (o200k×F, with provenance)",
    )
    add_ledger_option(parser)
    parser.add_argument(
        "--exact",
        action="store_true",
        help="ask Anthropic's count_tokens what the tools add for --model (ANTHROPIC_API_KEY), "
        "with and without them",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        help="count_tokens base URL (default ANTHROPIC_BASE_URL or the public API)",
    )


def _number(value: str, name: str) -> float:
    try:
        return float(value)
    except ValueError:
        raise ValueError(f"--limit {name}: must be a number, not {value!r}") from None


def run(args: argparse.Namespace) -> int:
    source = tools_source(args)
    try:
        severities = key_value_pairs(args.rule, "--rule")
        limits = {
            name: _number(value, name)
            for name, value in key_value_pairs(args.limit, "--limit").items()
        }
    except ValueError as error:
        return fail(str(error))

    settings = RuleOverrides.parse(
        severities,
        limits,
        source="--rule/--limit",
        known_rules=RULE_IDS,
        known_thresholds=DEFAULT_THRESHOLDS,
    )
    model = catalogue_of(args).resolve(args.model) if args.model else None
    if args.exact and (model is None or model.provider != "anthropic"):
        raise UsageError(
            "--exact asks Anthropic's count_tokens: name an Anthropic model with --model"
            + ("" if model is None else f" ({args.model} is a model of {model.provider})")
        )
    report = weigh_source(
        **source,
        check_order=args.check_order,
        window=args.window,
        settings=settings,
    )
    if args.html is not None:
        page = render_page(f"toll weigh: {report.target}", tools=[report.as_dict()])
        write_page(args.html, page)
    view = None
    if model is not None:
        delta = None
        if args.exact:
            with CountTokensClient.from_environment(
                base_url=args.base_url, timeout=args.timeout
            ) as client:
                delta = tools_delta(client, args.model, report.records)
        view = ModelView(args.model, model.scale, report.claude, delta)
    if args.json:
        data = report.as_dict()
        if view is not None:
            data["model"] = view.as_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(render(report))
        if view is not None:
            print("\n" + "\n".join(view.lines()))
    return EXIT_VIOLATION if has_errors(report.findings) else EXIT_OK


@dataclass(frozen=True)
class ModelView:
    """The claude total for one model: o200k, o200k×scale and, with --exact, the native
    delta of the tools, each estimate held against it."""

    name: str
    scale: Scale
    o200k: int
    exact: ToolsDelta | None = None

    @property
    def scaled(self) -> int | None:
        return None if self.scale.factor == 1.0 else math.ceil(self.o200k * self.scale.factor)

    def comparisons(self) -> dict[str, NativeComparison]:
        if self.exact is None:
            return {}
        found = {O200K: NativeComparison(self.o200k, self.exact.tokens)}
        if self.scaled is not None:
            found[scaled_method(self.scale.factor)] = NativeComparison(
                self.scaled, self.exact.tokens
            )
        return found

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "scale": self.scale.as_dict()}
        data["o200k"] = self.o200k
        if self.scaled is not None:
            data["scaled"] = {"tokens": self.scaled, "method": scaled_method(self.scale.factor)}
        if self.exact is not None:
            data["exact"] = self.exact.as_dict()
            data["exact"]["comparisons"] = {
                method: comparison.as_dict() for method, comparison in self.comparisons().items()
            }
        return data

    def lines(self) -> list[str]:
        state = "measured" if self.scale.measured else "not measured"
        lines = [f"for {self.name}: claude total {self.o200k:,} ({O200K})"]
        if self.scaled is not None:
            lines.append(
                f"  {self.scaled:,} ({scaled_method(self.scale.factor)}; scale {state}: "
                f"{self.scale.source})"
            )
        else:
            lines.append(
                f"  unscaled (scale ×{self.scale.factor:.2f}, {state}: {self.scale.source})"
            )
        if self.exact is not None:
            lines.append(
                f"  exact: the tools add {self.exact.tokens:,} native tokens (count_tokens: "
                f"{self.exact.with_tools:,} with them, {self.exact.without_tools:,} without, "
                f"on a '{PROBE_MESSAGE}' probe message)"
            )
            for method, comparison in self.comparisons().items():
                lines.append(f"  {method}: {comparison.describe()}")
        return lines


def render(report: ToolsReport) -> str:
    """The human report: a table by cost, totals, window line, breakdown and findings."""
    method = report.method
    lines = [f"toll weigh: {report.target}"]
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
            f"{output:>6}  {row.name}"
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
            shown = ", ".join(f"{name.replace('_', ' ')} {n:,}" for name, n in parts if n)
            lines.append(f"  {entry['tool']} ({entry['tokens']:,}): {shown}")
    lines.append("")
    if report.findings:
        lines.append("findings:")
        lines.extend(f"  {finding}" for finding in report.findings)
    else:
        lines.append("findings: none")
    return "\n".join(lines)
