"""``toll models [NAME] [--json]``: the model catalogue, as every verb with ``--model`` sees it.

Each row: window, prices per million tokens, prompt-size tiers, the minimum cacheable length
(with its page and the layer that gave it), the tokenizer scale and its provenance, the pages
it was read from and when, and which layer answered — the package's
catalogue or the ledger's ``models:`` (``--ledger``, default ./toll.yaml when present).
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from pytest_toll.cli import EXIT_OK
from pytest_toll.cli._ledger import add_ledger_option, catalogue_of, ledger_path
from pytest_toll.cli.options import add_json_option
from pytest_toll.core.models import PRICE_FIELDS, Catalogue, Model, Prices

#: The layer of a name neither the package nor the ledger knows.
NO_LAYER = "none"


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "name", nargs="?", default=None, metavar="NAME", help="one model (or an alias)"
    )
    add_ledger_option(parser)
    add_json_option(parser)


def _layer(catalogue: Catalogue, model: Model) -> str:
    return catalogue.layer_of(model) if model.catalogued else NO_LAYER


def _row(catalogue: Catalogue, model: Model) -> dict[str, Any]:
    row = {**model.as_dict(), "layer": _layer(catalogue, model)}
    if model.cache_minimum is not None:
        row["cache_minimum"]["layer"] = catalogue.minimum_layer(model)
    return row


def run(args: argparse.Namespace) -> int:
    catalogue = catalogue_of(args)
    ledger = ledger_path(args)
    models = (
        [catalogue.resolve(args.name)]
        if args.name
        else [catalogue.models[name] for name in catalogue.names()]
    )
    if args.json:
        data = {
            "kind": "models",
            "ledger": None if ledger is None else str(ledger),
            "models": [_row(catalogue, model) for model in models],
        }
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK
    if args.name:
        model = models[0]
        minimum_layer = catalogue.minimum_layer(model) if model.catalogued else None
        print(render_model(model, _layer(catalogue, model), minimum_layer))
    else:
        print(render_table(catalogue, models))
    if ledger is not None:
        print(f"\nledger: {ledger} (its models: are applied)")
    return EXIT_OK


def _money(value: float | None) -> str:
    return "—" if value is None else f"${value:g}"


def _prices(prices: Prices) -> str:
    shown = [f"{name} {_money(getattr(prices, name))}" for name in PRICE_FIELDS]
    known = [text for text, name in zip(shown, PRICE_FIELDS) if getattr(prices, name) is not None]
    return ", ".join(known) or "none known"


def _scale(model: Model) -> str:
    state = "measured" if model.scale.measured else "not measured"
    return f"×{model.scale.factor:.2f} ({state})"


def render_table(catalogue: Catalogue, models: list[Model]) -> str:
    """One line per model: window, input/output USD per MTok, tiers, scale, layer."""
    header = [
        "model",
        "provider",
        "window",
        "in $/MTok",
        "out $/MTok",
        "tiers",
        "cache min",
        "scale",
        "layer",
    ]
    rows = [header]
    for model in models:
        rows.append(
            [
                model.name,
                model.provider,
                "—" if model.window is None else f"{model.window:,}",
                _money(model.prices.input),
                _money(model.prices.output),
                ", ".join(f"from {tier.min_tokens:,}" for tier in model.tiers) or "—",
                _minimum_cell(catalogue, model),
                _scale(model),
                _layer(catalogue, model),
            ]
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths)).rstrip() for row in rows
    ]
    lines.append("")
    lines.append(
        "prices: USD per million tokens, uncached input; a tier re-prices the whole request "
        "once its prompt reaches the number shown; cache min: the shortest prefix the provider "
        "caches, in its tokens (? not known, * from the ledger); `toll models NAME` shows "
        "sources and notes"
    )
    return "\n".join(lines)


def _minimum_cell(catalogue: Catalogue, model: Model) -> str:
    minimum = model.cache_minimum
    if minimum is None:
        return "—"
    text = "?" if minimum.tokens is None else f"{minimum.tokens:,}"
    return text + ("*" if catalogue.minimum_layer(model) == "ledger" else "")


def _minimum_line(model: Model, layer: str) -> str:
    """The minimum cacheable length, the page that gives it and the layer that answered."""
    minimum = model.cache_minimum
    if minimum is None:
        return "  cache minimum: not recorded"
    figure = "unknown" if minimum.tokens is None else f"{minimum.tokens:,} tokens"
    where = f" — {minimum.source}" if minimum.source else ""
    line = f"  cache minimum: {figure} (answered by: {layer}){where}"
    return line + (f"\n    {minimum.note}" if minimum.note else "")


def render_model(model: Model, layer: str, minimum_layer: str | None = None) -> str:
    """Everything the catalogue knows about one model, and where it came from."""
    lines = [f"{model.name} ({model.provider}) — answered by: {layer}"]
    if model.aliases:
        lines.append(f"  aliases: {', '.join(model.aliases)}")
    lines.append(f"  window:  {'unknown' if model.window is None else f'{model.window:,} tokens'}")
    lines.append(f"  prices:  {_prices(model.prices)} (USD per million tokens)")
    for tier in model.tiers:
        lines.append(
            f"  tier:    prompts of {tier.min_tokens:,} tokens or more, the whole request: "
            f"{_prices(tier.prices)}"
        )
    if model.cache_minimum is not None or model.catalogued:
        lines.append(_minimum_line(model, minimum_layer or layer))
    lines.append(f"  scale:   {_scale(model)} — {model.scale.source}")
    if model.sources:
        lines.append("  sources:")
        lines.extend(f"    {source}" for source in model.sources)
    if model.read:
        lines.append(f"  read:    {model.read}")
    if model.note:
        lines.append(f"  note:    {model.note}")
    return "\n".join(lines)
