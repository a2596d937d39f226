"""``toll calibrate --model M [--exact] SAMPLE...``: re-derive a tokenizer scale factor.

Each sample is counted with o200k and with the provider, and the ratio table is printed with
its maximum — the factor to use, because a meter that reads low loses turns. Provider counts
come from Anthropic's count_tokens (``--exact``: the sample as one user message, minus the
same request with a ``.`` message, so the request's fixed overhead cancels; the o200k side
subtracts the ``.`` the same way), or are given by hand as ``PATH=TOKENS`` (a count read from
a provider's usage block). For factors measured from your own transcripts, see ``toll drift``.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass
from typing import Any

from pytest_toll.calls.anthropic import CountTokensClient
from pytest_toll.cli import EXIT_OK, fail
from pytest_toll.cli._ledger import add_ledger_option, catalogue_of
from pytest_toll.cli.options import add_count_tokens_options, add_json_option
from pytest_toll.core.textio import read_text
from pytest_toll.core.tokens import count


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "samples",
        nargs="+",
        metavar="SAMPLE",
        help="text files; PATH=TOKENS gives the provider's count by hand",
    )
    parser.add_argument("--model", required=True, help="the model whose tokenizer to calibrate")
    add_ledger_option(parser)
    add_count_tokens_options(parser, "count each sample with Anthropic's count_tokens")
    add_json_option(parser)


@dataclass(frozen=True)
class Sample:
    path: str
    o200k: int
    provider: int

    @property
    def ratio(self) -> float:
        return self.provider / self.o200k

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "o200k": self.o200k,
            "provider": self.provider,
            "ratio": round(self.ratio, 4),
        }


def _split(sample: str) -> tuple[str, int | None]:
    path, sep, given = sample.rpartition("=")
    if sep and given.isdigit():
        return path, int(given)
    return sample, None


def run(args: argparse.Namespace) -> int:
    model = catalogue_of(args).resolve(args.model)
    parsed = [_split(sample) for sample in args.samples]
    if args.exact and model.provider != "anthropic":
        return fail(
            f"--exact calibrates with Anthropic's count_tokens; {args.model} is a model of {model.provider}"
        )
    if not args.exact:
        missing = [path for path, given in parsed if given is None]
        if missing:
            return fail(f"{missing[0]}: no provider count; give PATH=TOKENS or use --exact")
    client = None
    if args.exact:
        client = CountTokensClient.from_environment(
            base_url=args.base_url, timeout=args.count_timeout
        )
    samples: list[Sample] = []
    try:
        baseline = None
        if client is not None:
            baseline = client.count(_body(args.model, "."))
        for path, given in parsed:
            text = read_text(path)
            o200k = count(text) - count(".")
            if client is not None and baseline is not None:
                provider = client.count(_body(args.model, text)) - baseline
            else:
                assert given is not None
                provider = given
            if o200k <= 0:
                return fail(
                    f"{path}: too short to calibrate with (no o200k tokens beyond the probe)"
                )
            samples.append(Sample(path, o200k, provider))
    finally:
        if client is not None:
            client.close()
    ratios = [sample.ratio for sample in samples]
    highest = max(ratios)
    factor = math.ceil(highest * 100) / 100
    report = {
        "kind": "calibration",
        "model": args.model,
        "source": "anthropic count_tokens" if args.exact else "given counts",
        "samples": [sample.as_dict() for sample in samples],
        "max_ratio": round(highest, 4),
        "mean_ratio": round(sum(ratios) / len(ratios), 4),
        "factor": factor,
        "current": model.scale.as_dict(),
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return EXIT_OK
    width = max(len(sample.path) for sample in samples)
    print(f"{'sample'.ljust(width)}  {'o200k':>8}  {'provider':>8}  ratio")
    for sample in samples:
        print(
            f"{sample.path.ljust(width)}  {sample.o200k:>8,}  {sample.provider:>8,}  {sample.ratio:.4f}"
        )
    print(f"max ratio {highest:.4f}, mean {report['mean_ratio']:.4f} over {len(samples)} sample(s)")
    state = "measured" if model.scale.measured else "not measured"
    print(f"current factor for {args.model}: {model.scale.factor:.2f} ({state})")
    print(
        f"to use {factor:.2f} (the max, rounded up), add to toll.yaml:\n"
        f"  models:\n    {args.model}:\n      scale: {{factor: {factor:.2f}, "
        f"source: 'toll calibrate, max over {len(samples)} samples'}}"
    )
    return EXIT_OK


def _body(model: str, text: str) -> dict[str, Any]:
    return {"model": model, "messages": [{"role": "user", "content": text}]}
