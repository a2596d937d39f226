"""``toll diff BEFORE.json AFTER.json [--allow-increase PCT] [--json]``: compare two reports.

Reports carry a ``kind``; ``DIFFERS`` maps each kind to the function that compares two
reports of it (add a kind with one line). A differ returns an object with ``as_dict()``,
``render()`` and ``increase_percent`` (signed percent of the primary total, None when the
before total was zero). ``--allow-increase`` turns the diff into a gate: exit 1 above it.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from pytest_toll.calls.diffing import diff_call_reports
from pytest_toll.cli import EXIT_OK, EXIT_VIOLATION, fail
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.textio import parse_json, read_text
from pytest_toll.definitions.diffing import diff_tools_reports


class Diff(Protocol):
    @property
    def increase_percent(self) -> float | None: ...

    def as_dict(self) -> dict[str, Any]: ...

    def render(self) -> str: ...


Differ = Callable[..., Diff]


def _tools_differ() -> Differ:
    return diff_tools_reports


def _call_differ() -> Differ:
    return diff_call_reports


# kind → a function returning the differ (imported lazily, so `toll --help` stays light).
DIFFERS: dict[str, Callable[[], Differ]] = {
    "tools": _tools_differ,
    "call": _call_differ,
}


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", metavar="BEFORE.json")
    parser.add_argument("after", metavar="AFTER.json")
    parser.add_argument(
        "--allow-increase",
        type=float,
        default=None,
        metavar="PCT",
        help="fail (exit 1) when the total grew by more than PCT percent",
    )
    add_json_option(parser, "the diff as JSON")


def _load(path: str) -> Mapping[str, Any]:
    data = parse_json(read_text(path), path)
    if not isinstance(data, dict):
        raise CouldNotJudge(f"{path}: not a toll JSON report (an object with a 'kind')")
    return data


def run(args: argparse.Namespace) -> int:
    before = _load(args.before)
    after = _load(args.after)
    kind = before.get("kind")
    if after.get("kind") != kind:
        return fail(f"{args.before} is a {kind!r} report but {args.after} is {after.get('kind')!r}")
    if kind not in DIFFERS:
        known = ", ".join(sorted(DIFFERS))
        return fail(f"{args.before}: cannot diff reports of kind {kind!r} (known: {known})")
    if args.allow_increase is not None and args.allow_increase < 0:
        return fail(f"--allow-increase must be a non-negative percent, not {args.allow_increase:g}")
    diff = DIFFERS[str(kind)]()(before, after, before_name=args.before, after_name=args.after)
    percent = diff.increase_percent
    over = args.allow_increase is not None and (percent is None or percent > args.allow_increase)
    if args.json:
        data = diff.as_dict()
        if args.allow_increase is not None:
            data["gate"] = {"allow_increase": args.allow_increase, "passed": not over}
        # Both reports as read, so the diff carries everything it was made from.
        data["reports"] = {"before": before, "after": after}
        print(json.dumps(data, indent=2, ensure_ascii=False))
    else:
        print(diff.render())
        if args.allow_increase is not None:
            verdict = "FAIL" if over else "ok"
            grown = "from zero" if percent is None else f"{percent:+.1f}%"
            print(f"gate: {verdict} — total changed {grown}, allowed +{args.allow_increase:g}%")
    return EXIT_VIOLATION if over else EXIT_OK
