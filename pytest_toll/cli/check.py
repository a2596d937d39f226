"""``toll check [--init]``: judge the ``transcripts:`` decisions in toll.yaml (TL001–TL005)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION
from pytest_toll.cli._transcripts import add_root_options, read_options
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.errors import UsageError
from pytest_toll.core.findings import RuleOverrides
from pytest_toll.gate.ledger import load_ledger, update_ledger
from pytest_toll.transcripts.decisions import initial_settings, judge_decisions, section_roots
from pytest_toll.transcripts.locations import default_roots
from pytest_toll.transcripts.scan import ReadOptions, scan


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--ledger", default="toll.yaml", metavar="PATH", help="the ledger file (default toll.yaml)"
    )
    add_root_options(parser, selection=False)
    parser.add_argument(
        "--init",
        action="store_true",
        help="pin today's waste ratio and set decide_above_tokens so 5 shapes are left to decide",
    )
    add_json_option(parser)


def run(args: argparse.Namespace) -> int:
    path = Path(args.ledger)
    ledger = load_ledger(path, missing_ok=args.init, allow_duplicate_decisions=True)
    section = ledger.data.get("transcripts")
    if section is None:
        if not args.init:
            raise UsageError(f"{path}: no transcripts: section; `toll check --init` creates one")
        section = {}
    base = path.resolve().parent
    roots = (
        [Path(root).expanduser() for root in args.root]
        if args.root
        else section_roots(section, base)
    )
    # Selected by the ledger's roots, read without a progress line (as `toll check` always was).
    options = read_options(args, selection=False, progress=False)
    if args.init:
        return _init(path, section, roots, options, args)
    rules = ledger.data.get("rules")
    settings = RuleOverrides.parse(
        rules if isinstance(rules, dict) else None, source=f"{path}: rules"
    )
    report = judge_decisions(
        section,
        roots=roots,
        duplicate_decisions=ledger.duplicate_decisions,
        source=str(path),
        settings=settings,
        options=options,
    )
    if args.json:
        print(json.dumps(report.as_dict(), indent=2, ensure_ascii=False))
    else:
        for shape in report.shapes_over_threshold:
            print(f"{shape.ok_tokens:>11,}  {shape.shape}: {shape.status or 'undecided'}")
        for finding in report.findings:
            print(finding)
        pin = "unpinned" if report.waste_ratio_pin is None else f"pin {report.waste_ratio_pin:.4f}"
        note = (
            " — improved: ratchet with `pytest --toll --toll-update`"
            if report.waste_improved
            else ""
        )
        print(
            f"{len(report.shapes_over_threshold)} shapes above {report.decide_above_tokens:,} tokens; "
            f"waste ratio {report.waste_ratio:.4f} ({pin}){note}"
        )
    return EXIT_VIOLATION if report.failed else EXIT_OK


def _init(
    path: Path,
    section: dict[str, object],
    roots: list[Path] | None,
    options: ReadOptions,
    args: argparse.Namespace,
) -> int:
    report = scan(roots or default_roots(), options)
    threshold, pin = initial_settings([row.ok_tokens for row in report.shapes], report.waste_ratio)
    updates: dict[tuple[str, ...], object] = {
        ("transcripts", "decide_above_tokens"): threshold,
        ("transcripts", "waste_ratio_pin"): pin,
    }
    if args.root:
        updates[("transcripts", "roots")] = list(args.root)
    update_ledger(path, updates)
    to_decide = [row.shape for row in report.shapes if row.ok_tokens > threshold]
    if args.json:
        print(
            json.dumps(
                {
                    "kind": "decisions-init",
                    "decide_above_tokens": threshold,
                    "waste_ratio_pin": pin,
                    "to_decide": to_decide,
                },
                indent=2,
                ensure_ascii=False,
            )
        )
    else:
        print(
            f"{path}: transcripts.decide_above_tokens = {threshold:,}, waste_ratio_pin = {pin:.4f}"
        )
        print("decide these shapes (replace / keep / watch) under transcripts.decisions:")
        for shape in to_decide:
            print(f"  {shape}")
    return EXIT_OK
