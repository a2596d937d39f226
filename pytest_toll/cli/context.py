"""``toll context [SESSION]``: what filled one session's context at its last turn."""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.calls.native import NativeComparison
from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._transcripts import roots_of
from pytest_toll.cli.options import add_count_tokens_options, add_json_option
from pytest_toll.cli.surface import add_surface_options, run_fresh
from pytest_toll.core.errors import CouldNotJudge
from pytest_toll.core.models import find_model
from pytest_toll.core.tokens import O200K, scaled_method
from pytest_toll.transcripts.context import (
    CONTEXT_NOTE,
    OPENING_PROBE,
    ContextReport,
    context_of,
    find_session,
    reconstructed_messages,
)


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "session",
        nargs="?",
        default=None,
        metavar="SESSION",
        help="a session id (or its start) or a transcript file; default the newest",
    )
    parser.add_argument(
        "--root",
        action="append",
        default=None,
        metavar="R",
        help="a transcript folder or file (repeatable)",
    )
    parser.add_argument(
        "--all",
        action="store_true",
        help="the newest session of any directory (default: of the current directory)",
    )
    add_count_tokens_options(
        parser,
        "count the reconstructed last-turn request with Anthropic's count_tokens "
        "(ANTHROPIC_API_KEY) and say how far our estimate reads from it",
    )
    add_json_option(parser)
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="a fresh session in this repository instead: memory files, skill, subagent and "
        "command metadata, plugins (the system prompt and built-in tools are the host's: "
        "shown as not known)",
    )
    add_surface_options(parser)


_LABELS = {
    "tool_results": "tool results",
    "tool_calls": "tool calls",
    "user_messages": "user messages",
    "assistant_replies": "assistant replies (incl. thinking)",
    "images": "images",
}


def run(args: argparse.Namespace) -> int:
    if args.fresh:
        return run_fresh(Path.cwd(), args)
    cwd = None if args.all else Path.cwd().resolve()
    path = find_session(roots_of(args), args.session, cwd)
    report = context_of(path)
    exact = _exact(args, path, report) if args.exact else None
    if args.json:
        data = report.as_dict()
        if exact is not None:
            data["exact"] = exact.as_dict()
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK
    print(f"session {report.session} ({report.model}, {report.turns:,} turns)\n{report.path}\n")
    for key, label in _LABELS.items():
        extra = f" ({report.images} images)" if key == "images" and report.images else ""
        print(f"  {label + extra:<40} {report.slices[key]:>10,}")
    print(f"  {'counted (o200k)':<40} {report.counted:>10,}")
    scale = report.scale
    if report.scaled is not None and scale is not None:
        method = scaled_method(scale.factor)
        state = "measured" if scale.measured else "not measured"
        print(
            f"  {f'scaled estimate ({method})':<40} {report.scaled:>10,}  ({state}: {scale.source})"
        )
    elif scale is not None:
        print(f"  {'scaled estimate':<40} {'—':>10}  (×{scale.factor:.2f}: {scale.source})")
    else:
        print(f"  {'scaled estimate':<40} {'—':>10}  ({report.model} is not in the catalogue)")
    print(f"  {'reported prompt (last usage)':<40} {report.reported_prompt:>10,}")
    print(f"  {'gap (reported − counted)':<40} {report.gap:>10,}")
    if report.window:
        near = "  NEAR THE LIMIT" if report.near_limit else ""
        print(f"\nwindow {report.window:,}: {report.used:.1%} used{near}")
    else:
        print(f"\nwindow: unknown for {report.model}")
    print(
        f"totals: input {report.input_tokens:,}, output {report.output_tokens:,}, "
        f"cache read {report.cache_read_tokens:,}, cache write {report.cache_write_tokens:,}"
    )
    print(
        f"cost: ${report.cost_usd:,.4f}"
        if report.priced and report.cost_usd is not None
        else f"cost: unpriced ({report.model})"
    )
    if exact is not None:
        print("")
        print("\n".join(exact.lines()))
    print(f"\n{CONTEXT_NOTE}")
    return EXIT_OK


@dataclass(frozen=True)
class ExactContext:
    """count_tokens of the reconstructed request, and our estimates of the same texts."""

    model: str
    native: int
    o200k: int
    scaled: int | None
    method: str | None
    opened_with_probe: bool

    def comparisons(self) -> dict[str, NativeComparison]:
        found = {O200K: NativeComparison(self.o200k, self.native)}
        if self.scaled is not None and self.method is not None:
            found[self.method] = NativeComparison(self.scaled, self.native)
        return found

    def as_dict(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "native": self.native,
            "source": "native",
            "o200k": self.o200k,
            "scaled": None
            if self.scaled is None
            else {"tokens": self.scaled, "method": self.method},
            "comparisons": {name: c.as_dict() for name, c in self.comparisons().items()},
            "note": EXACT_NOTE,
        }

    def lines(self) -> list[str]:
        lines = [
            f"exact: count_tokens of the reconstructed last-turn request ({self.model}): "
            f"{self.native:,} native tokens",
            f"  the same texts: {self.o200k:,} (o200k)"
            + ("" if self.scaled is None else f", {self.scaled:,} ({self.method})"),
        ]
        for method, comparison in self.comparisons().items():
            lines.append(f"  {method}: {comparison.describe()}")
        lines.append(f"  note: {EXACT_NOTE}")
        if self.opened_with_probe:
            lines.append(f"  note: the request opens with a '{OPENING_PROBE}' user turn")
        return lines


EXACT_NOTE = (
    "the system prompt, tool schemas and skill metadata are not in a transcript, so neither "
    "count includes them; images are not sent; tool calls and results are sent as text"
)


def _exact(args: argparse.Namespace, path: Path, report: ContextReport) -> ExactContext:
    model = find_model(report.model)
    if model is None or model.provider != "anthropic":
        raise CouldNotJudge(
            f"--exact asks Anthropic's count_tokens; this session's model is {report.model}"
        )
    messages, o200k = reconstructed_messages(path)
    with CountTokensClient.from_environment(
        base_url=args.base_url, timeout=args.count_timeout
    ) as client:
        native = client.count({"model": report.model, "messages": messages})
    factor = model.scale.factor
    scaled = None if factor == 1.0 else math.ceil(o200k * factor)
    return ExactContext(
        model=report.model,
        native=native,
        o200k=o200k,
        scaled=scaled,
        method=None if scaled is None else scaled_method(factor),
        opened_with_probe=messages[0]["content"] == OPENING_PROBE and messages[0]["role"] == "user",
    )
