"""``toll weigh``: the token cost of an MCP server's tools (or a tools file), with the rules.

    toll weigh [--json] [--window N] [--check-order] [--timeout S] [--env K=V]...
               [--header K=V]... [--cwd DIR] [--rule ID=SEVERITY]... [--limit NAME=N]...
               (-- COMMAND ARGS... | --url URL | --tools FILE)

Exit 0 measured and no error-severity finding, 1 an error finding fired, 2 could not judge.
"""

from __future__ import annotations

import argparse
import json

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.calls.native import ModelTotal, tools_delta
from pytest_toll.calls.render import render_model_total
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
from pytest_toll.definitions.render import render_weigh
from pytest_toll.definitions.rules import DEFAULT_THRESHOLDS, RULE_IDS
from pytest_toll.definitions.source import weigh_source
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
    for_model = None
    if model is not None:
        delta = None
        if args.exact:
            with CountTokensClient.from_environment(
                base_url=args.base_url, timeout=args.timeout
            ) as client:
                delta = tools_delta(client, args.model, report.records)
        for_model = ModelTotal(args.model, model.scale, report.claude, delta)
    if args.json:
        data = report.as_dict()
        if for_model is not None:
            data["model"] = for_model.as_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(render_weigh(report))
        if for_model is not None:
            print("\n" + render_model_total(for_model))
    return EXIT_VIOLATION if has_errors(report.findings) else EXIT_OK
