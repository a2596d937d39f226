"""``toll results``: what one sample of a tool's result costs, from a server in the ledger.

    toll results --server NAME --tool TOOL [--args JSON]... [--ledger PATH] [--window N] [--json]

The server is the ledger's ``servers.NAME`` entry, started (or reached) as the gate does; only
``TOOL`` is called, once per ``--args`` (default ``{}``), after the tools are listed (a tool the
server does not list is never called). Nothing is written: this is how to see what a
``results:`` row would pin before adding it.

Exit 0 measured, 1 a rule at severity error fired, 2 could not judge.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import has_errors
from pytest_toll.core.textio import json_within_depth
from pytest_toll.definitions.results import ResultSpec, summary
from pytest_toll.gate.ledger import load_ledger
from pytest_toll.gate.measurement import EntryContext
from pytest_toll.gate.results import measure_results_of, resolve_server


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--server", required=True, metavar="NAME", help="a servers: entry")
    parser.add_argument("--tool", required=True, metavar="TOOL", help="the one tool to call")
    parser.add_argument(
        "--args",
        action="append",
        default=[],
        metavar="JSON",
        help="the arguments of one sample, a JSON object (repeat for several samples)",
    )
    parser.add_argument(
        "--ledger", metavar="PATH", default="toll.yaml", help="the ledger (default ./toll.yaml)"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=None,
        metavar="N",
        help="context window R101 judges against (default: the ledger's)",
    )
    add_json_option(parser, "the samples, the largest, the p90 and the findings as JSON")


def _samples(given: list[str]) -> tuple[dict[str, Any], ...]:
    samples: list[dict[str, Any]] = []
    for text in given or ["{}"]:
        try:
            value = json_within_depth(text)
        except ValueError as error:
            raise UsageError(f"--args {text!r}: not JSON ({error})") from None
        if not isinstance(value, dict):
            raise UsageError(f"--args {text!r}: must be a JSON object of arguments")
        samples.append(value)
    return tuple(samples)


def run(args: argparse.Namespace) -> int:
    path = Path(args.ledger)
    if not path.is_file():
        raise UsageError(f"--ledger {args.ledger}: no such ledger file")
    ledger = load_ledger(path, allow_duplicate_decisions=True)
    servers = ledger.section("servers")
    entry = servers.get(args.server)
    if not isinstance(entry, dict):
        named = ", ".join(sorted(map(str, servers))) or "none"
        raise UsageError(
            f"--server {args.server}: no such servers: entry (the ledger has: {named})"
        )
    if entry.get("tools_file"):
        raise UsageError(f"--server {args.server}: a tools file has no tools to call")
    data = ledger.data
    window = args.window or int(data.get("window") or EntryContext(path.parent).window)
    context = EntryContext(
        root=path.parent.resolve(),
        window=window,
        rules=data.get("rules") or {},
        limits=data.get("limits") or {},
    )
    where = f"servers.{args.server}"
    spec = ResultSpec(f"{args.server}.{args.tool}", args.tool, _samples(args.args))
    (cost,) = measure_results_of(
        args.server,
        entry,
        context,
        context.settings(entry, where),
        resolve_server(args.server, entry, context),
        [spec],
    )
    if args.json:
        data_out = {**cost.as_dict(), "findings": [f.as_dict() for f in cost.findings]}
        print(json.dumps(data_out, indent=2, ensure_ascii=False))
    else:
        print(f"{summary(cost)} ({cost.method})")
        for finding in cost.findings:
            print(f"  {finding}")
    return EXIT_VIOLATION if has_errors(cost.findings) else EXIT_OK
