"""The model catalogue: context windows, prices, prompt-size tiers and tokenizer scale factors.

Rows come from ``data/models.yaml`` (each with the pages it was read from and the date), and
users override or add rows in toll.yaml's ``models:`` section, passed to ``load_models``::

    models:
      claude-sonnet-5: {prices: {input: 2.5}}          # merged field by field into the shipped row
      my-gateway-model:                                # a new row: provider is required
        provider: openai
        window: 128000
        prices: {input: 0.4, output: 1.6}
        tiers: [{above: 100000, prices: {input: 0.8}}]
        scale: 1.0                                     # a number, or {factor, measured, source}
        cache_minimum: {tokens: 1024, source: https://...}  # the shortest prefix it caches

Prices are USD per million tokens. A price that is not known is absent (``None``), never a
guessed zero, so a cost computed from it is absent too; an explicit ``0`` is a real zero.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_toll.core.errors import UsageError

CATALOGUE_PATH = Path(__file__).parents[1] / "data" / "models.yaml"
PRICE_FIELDS = (
    "input",
    "output",
    "cache_read",
    "cache_write",
    "cache_write_5m",
    "cache_write_1h",
    "cache_storage",
)
PER_MILLION = 1_000_000
USER_SOURCE = "toll.yaml"
_SNAPSHOT_DATE = re.compile(r"-20\d{6}$")


@dataclass(frozen=True)
class Scale:
    """How an o200k count is scaled for this model's tokenizer, and where the factor came from."""

    factor: float
    measured: bool
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"factor": self.factor, "measured": self.measured, "source": self.source}


UNMEASURED = Scale(1.0, False, "no ratio has been measured for this model")


@dataclass(frozen=True)
class Prices:
    """USD per million tokens; ``None`` where the price is not known."""

    input: float | None = None
    output: float | None = None
    cache_read: float | None = None
    cache_write: float | None = None
    cache_write_5m: float | None = None
    cache_write_1h: float | None = None
    #: Explicit context caching's storage, USD per million tokens per hour (Gemini).
    cache_storage: float | None = None

    def as_dict(self) -> dict[str, float]:
        return {name: value for name in PRICE_FIELDS if (value := getattr(self, name)) is not None}


@dataclass(frozen=True)
class Tier:
    """Prices for a whole request whose prompt has at least ``min_tokens`` tokens."""

    min_tokens: int
    prices: Prices

    def as_dict(self) -> dict[str, Any]:
        return {"from": self.min_tokens, "prices": self.prices.as_dict()}


@dataclass(frozen=True)
class CacheMinimum:
    """The shortest prompt prefix the provider caches for a model, and the page that says so.

    ``tokens`` is None when no page read gave it (``note`` says so); the cache estimate
    then cannot apply it and says that too.
    """

    tokens: int | None
    source: str | None = None
    note: str | None = None

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tokens": self.tokens}
        if self.source is not None:
            data["source"] = self.source
        if self.note is not None:
            data["note"] = self.note
        return data


@dataclass(frozen=True)
class Model:
    name: str
    provider: str
    window: int | None = None
    prices: Prices = field(default_factory=Prices)
    tiers: tuple[Tier, ...] = ()
    scale: Scale = UNMEASURED
    sources: tuple[str, ...] = ()
    read: str | None = None
    note: str | None = None
    aliases: tuple[str, ...] = ()
    cache_minimum: CacheMinimum | None = None
    #: False for a name neither the package nor the ledger knows (``Catalogue.resolve``).
    catalogued: bool = True

    def prices_for(self, prompt_tokens: int) -> Prices:
        """The prices that apply to a request with this many prompt tokens (highest tier met)."""
        chosen = self.prices
        for tier in sorted(self.tiers, key=lambda t: t.min_tokens):
            if prompt_tokens >= tier.min_tokens:
                chosen = tier.prices
        return chosen

    def input_price(self, prompt_tokens: int) -> float | None:
        return self.prices_for(prompt_tokens).input

    def cost_usd(self, tokens: int, prompt_tokens: int | None = None) -> float | None:
        """Uncached input cost of ``tokens``, at the tier of a ``prompt_tokens`` request.

        ``prompt_tokens`` defaults to ``tokens`` (the whole request). None when the input
        price at that tier is unknown.
        """
        price = self.input_price(tokens if prompt_tokens is None else prompt_tokens)
        if price is None:
            return None
        return tokens * price / PER_MILLION

    def window_share(self, tokens: int) -> float | None:
        return None if not self.window else tokens / self.window

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"name": self.name, "provider": self.provider}
        if self.window is not None:
            data["window"] = self.window
        data["prices"] = self.prices.as_dict()
        if self.tiers:
            data["tiers"] = [tier.as_dict() for tier in self.tiers]
        data["scale"] = self.scale.as_dict()
        data["sources"] = list(self.sources)
        if self.read is not None:
            data["read"] = self.read
        if self.note is not None:
            data["note"] = self.note
        if self.cache_minimum is not None:
            data["cache_minimum"] = self.cache_minimum.as_dict()
        if not self.catalogued:
            data["catalogued"] = False
        return data


def share_text(fraction: float) -> str:
    """A window share as a person reads it: ``0.012%``, ``4.3%``, ``250.0%`` (never ``2.5e+02%``).

    Two significant digits below 1%, one decimal from 1% on, ``<0.001%`` for a sliver.
    """
    percent = 100 * fraction
    if percent == 0:
        return "0%"
    if percent < 0.001:
        return "<0.001%"
    if percent < 1:
        return f"{float(f'{percent:.2g}'):g}%"
    return f"{percent:,.1f}%"


class UnknownModel(UsageError):
    """A model name that is neither in the catalogue nor added in toll.yaml."""


#: The provider of a model the catalogue does not know (its tools are shown OpenAI's way).
UNKNOWN_PROVIDER = "unknown"
PACKAGE_LAYER = "package"
LEDGER_LAYER = "ledger"


def how_to_add(name: str) -> str:
    """The one sentence that tells a user how to give a model a window, prices and a scale."""
    return (
        f"to add {name}, put it under 'models:' in toll.yaml, e.g. models: {{{name}: "
        "{provider: openai, window: 128000, prices: {input: 0.4, output: 1.6}}} "
        "(`toll models` lists the catalogue; `toll calibrate` measures a scale)"
    )


def uncatalogued_model(name: str) -> Model:
    """A model the catalogue lacks, measured like any other: o200k, scale 1.0 marked not
    measured, no window and no prices (so ``cost_usd`` is absent), and a note on adding it."""
    return Model(
        name=name,
        provider=UNKNOWN_PROVIDER,
        scale=Scale(1.0, False, f"{name} is not in the catalogue; the o200k count is unscaled"),
        note=f"{name} is not in the catalogue: no window, no prices; {how_to_add(name)}",
        catalogued=False,
    )


@dataclass(frozen=True)
class Catalogue:
    """Models by name (and alias), and the named scale factors rows may refer to.

    ``from_ledger`` names the rows a ledger's ``models:`` section added or changed.
    """

    models: Mapping[str, Model]
    scales: Mapping[str, Scale] = field(default_factory=dict)
    from_ledger: frozenset[str] = frozenset()
    #: Where the ledger layer came from (``toll.yaml:12``), when there is one.
    ledger_source: str | None = None
    #: The rows whose ``cache_minimum`` the ledger set or changed.
    minimum_from_ledger: frozenset[str] = frozenset()

    def layer_of(self, model: Model) -> str:
        """Which layer answered for a row: the package's catalogue or the ledger."""
        return LEDGER_LAYER if model.name in self.from_ledger else PACKAGE_LAYER

    def minimum_layer(self, model: Model) -> str:
        """Which layer answered for a row's minimum cacheable length (a ledger row that
        changes only prices keeps the package's minimum)."""
        return LEDGER_LAYER if model.name in self.minimum_from_ledger else PACKAGE_LAYER

    def resolve(self, name: str) -> Model:
        """The row for ``name``, or an uncatalogued model measured with o200k, unscaled."""
        return self.find(name) or uncatalogued_model(name)

    def find(self, name: str) -> Model | None:
        model = self.models.get(name)
        if model is not None:
            return model
        for candidate in self.models.values():
            if name in candidate.aliases:
                return candidate
        # A dated snapshot id (claude-sonnet-4-5-20250929) as transcripts record it: the
        # catalogue row of its model, unless the catalogue names the snapshot itself.
        undated = _SNAPSHOT_DATE.sub("", name)
        return self.find(undated) if undated != name else None

    def get(self, name: str) -> Model:
        model = self.find(name)
        if model is None:
            known = ", ".join(sorted(self.models))
            raise UnknownModel(
                f"unknown model {name!r}: add it under 'models:' in toll.yaml "
                f"(provider, window, prices) or use one of: {known}"
            )
        return model

    def names(self) -> list[str]:
        return sorted(self.models)


# --- parsing ----------------------------------------------------------------------------


def _number(value: object, where: str, *, integer: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise UsageError(f"{where}: must be a number, not {value!r}")
    if value < 0:
        raise UsageError(f"{where}: must not be negative, not {value!r}")
    if integer and value != int(value):
        raise UsageError(f"{where}: must be a whole number of tokens, not {value!r}")
    return value


def _mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise UsageError(f"{where}: must be a mapping, not {type(value).__name__}")
    return value


def _prices(value: object, where: str, base: Prices | None = None) -> Prices:
    data = _mapping(value, where)
    unknown = sorted(set(map(str, data)) - set(PRICE_FIELDS))
    if unknown:
        raise UsageError(f"{where}.{unknown[0]}: unknown price (known: {', '.join(PRICE_FIELDS)})")
    fields = {name: _number(data[name], f"{where}.{name}") for name in PRICE_FIELDS if name in data}
    return replace(base or Prices(), **fields)


def _tiers(value: object, where: str) -> tuple[Tier, ...]:
    if not isinstance(value, list):
        raise UsageError(f"{where}: must be a list of {{above|from, prices}}")
    tiers: list[Tier] = []
    for index, item in enumerate(value):
        here = f"{where}[{index}]"
        data = _mapping(item, here)
        if ("above" in data) == ("from" in data):
            raise UsageError(f"{here}: needs exactly one of 'above' (>) or 'from' (>=)")
        if "above" in data:
            threshold = int(_number(data["above"], f"{here}.above", integer=True)) + 1
        else:
            threshold = int(_number(data["from"], f"{here}.from", integer=True))
        if "prices" not in data:
            raise UsageError(f"{here}: has no 'prices'")
        tiers.append(Tier(threshold, _prices(data["prices"], f"{here}.prices")))
    return tuple(tiers)


def _scale(value: object, where: str, named: Mapping[str, Scale], default_source: str) -> Scale:
    if isinstance(value, str):
        if value not in named:
            raise UsageError(f"{where}: unknown scale {value!r} (known: {', '.join(named)})")
        return named[value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        factor = _number(value, where)
        return Scale(float(factor), True, default_source)
    data = _mapping(value, where)
    if "factor" not in data:
        raise UsageError(f"{where}: has no 'factor'")
    factor = _number(data["factor"], f"{where}.factor")
    if factor == 0:
        raise UsageError(f"{where}.factor: must be above zero")
    measured = data.get("measured", True)
    if not isinstance(measured, bool):
        raise UsageError(f"{where}.measured: must be true or false, not {measured!r}")
    source = data.get("source", default_source)
    if not isinstance(source, str):
        raise UsageError(f"{where}.source: must be a string")
    return Scale(float(factor), measured, source)


def _strings(value: object, where: str) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise UsageError(f"{where}: must be a string or a list of strings")
    return tuple(value)


def _cache_minimum(
    value: object, where: str, base: CacheMinimum | None, default_source: str
) -> CacheMinimum:
    """``{tokens, source, note}``: a number of tokens (or null: not known) and its page."""
    data = _mapping(value, where)
    unknown = sorted(set(map(str, data)) - {"tokens", "source", "note"})
    if unknown:
        raise UsageError(f"{where}.{unknown[0]}: unknown key (known: note, source, tokens)")
    if "tokens" not in data and base is None:
        raise UsageError(f"{where}: has no 'tokens' (a number, or null when not known)")
    tokens = base.tokens if base is not None else None
    if "tokens" in data:
        raw = data["tokens"]
        tokens = None if raw is None else int(_number(raw, f"{where}.tokens", integer=True))
    texts: dict[str, str | None] = {}
    for key in ("source", "note"):
        text = data.get(key)
        if text is not None and not isinstance(text, str):
            raise UsageError(f"{where}.{key}: must be a string")
        texts[key] = text
    # A figure changed without naming its page is the user's file's figure.
    source = texts["source"] or (
        base.source if base is not None and "tokens" not in data else default_source
    )
    note = texts["note"] if "note" in data else (base.note if base is not None else None)
    return CacheMinimum(tokens, source, note)


_MODEL_KEYS = {
    "cache_minimum",
    "provider",
    "window",
    "prices",
    "tiers",
    "scale",
    "sources",
    "read",
    "note",
    "aliases",
}


def _model(
    name: str,
    value: object,
    where: str,
    named_scales: Mapping[str, Scale],
    base: Model | None,
    default_source: str,
) -> Model:
    data = _mapping(value, where)
    unknown = sorted(set(map(str, data)) - _MODEL_KEYS)
    if unknown:
        raise UsageError(
            f"{where}.{unknown[0]}: unknown key (known: {', '.join(sorted(_MODEL_KEYS))})"
        )
    if base is None and "provider" not in data:
        raise UsageError(f"{where}: a new model needs a 'provider' (anthropic, openai, ...)")
    model = base or Model(name=name, provider="", sources=(default_source,))
    changes: dict[str, Any] = {"name": name}
    if "provider" in data:
        provider = data["provider"]
        if not isinstance(provider, str) or not provider:
            raise UsageError(f"{where}.provider: must be a non-empty string")
        changes["provider"] = provider
    if "window" in data:
        window = data["window"]
        changes["window"] = (
            None if window is None else int(_number(window, f"{where}.window", integer=True))
        )
    if "prices" in data:
        changes["prices"] = _prices(data["prices"], f"{where}.prices", model.prices)
    if "tiers" in data:
        changes["tiers"] = _tiers(data["tiers"], f"{where}.tiers")
    if "scale" in data:
        changes["scale"] = _scale(data["scale"], f"{where}.scale", named_scales, default_source)
    if "sources" in data:
        changes["sources"] = _strings(data["sources"], f"{where}.sources")
    elif base is not None and default_source not in model.sources:
        # An overridden row says that some of it now comes from the user's file.
        changes["sources"] = (*model.sources, default_source)
    if "aliases" in data:
        changes["aliases"] = _strings(data["aliases"], f"{where}.aliases")
    if "cache_minimum" in data:
        changes["cache_minimum"] = _cache_minimum(
            data["cache_minimum"], f"{where}.cache_minimum", model.cache_minimum, default_source
        )
    for key in ("read", "note"):
        if key in data:
            text = data[key]
            if not isinstance(text, str):
                raise UsageError(f"{where}.{key}: must be a string")
            changes[key] = text
    return replace(model, **changes)


def parse_catalogue(data: object, source: str) -> Catalogue:
    """Validate the shipped catalogue's structure (``scales`` and ``models``)."""
    root = _mapping(data, source)
    scales: dict[str, Scale] = {}
    for scale_name, value in _mapping(root.get("scales", {}), f"{source}: scales").items():
        scales[str(scale_name)] = _scale(value, f"{source}: scales.{scale_name}", {}, source)
    models: dict[str, Model] = {}
    for model_name, value in _mapping(root.get("models", {}), f"{source}: models").items():
        model = _model(
            str(model_name), value, f"{source}: models.{model_name}", scales, None, source
        )
        models[model.name] = model
    return Catalogue(models, scales)


_shipped: Catalogue | None = None


def shipped_catalogue() -> Catalogue:
    """The catalogue shipped in the package, read once per process."""
    global _shipped
    if _shipped is None:
        import yaml

        text = CATALOGUE_PATH.read_text(encoding="utf-8")
        # libyaml's loader when PyYAML has it: the pure-Python one takes ~80 ms for this file.
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        _shipped = parse_catalogue(yaml.load(text, Loader=loader), str(CATALOGUE_PATH.name))
    return _shipped


def load_models(overrides: Mapping[str, Any] | None = None, source: str = USER_SOURCE) -> Catalogue:
    """The shipped catalogue with toll.yaml's ``models:`` section applied.

    A row for a known model (or alias) is merged into it field by field (``prices`` too);
    a row for a new model adds it and must name its ``provider``. ``scale`` is a number
    (a measured factor), one of the shipped scale names (``claude-5``, ``claude-4.5``,
    ``openai``, ``unmeasured``), or ``{factor, measured, source}``. Errors name
    ``source`` and the key path (``toll.yaml: models.x.prices.input: must be a number``).
    """
    shipped = shipped_catalogue()
    if not overrides:
        return shipped
    models = dict(shipped.models)
    touched: set[str] = set()
    minimums: set[str] = set()
    for model_name, value in _mapping(overrides, f"{source}: models").items():
        where = f"{source}: models.{model_name}"
        base = shipped.find(str(model_name))
        # An alias overrides the row it names.
        name = base.name if base is not None else str(model_name)
        models[name] = _model(name, value, where, shipped.scales, base, source)
        touched.add(name)
        if "cache_minimum" in value:
            minimums.add(name)
    return Catalogue(models, shipped.scales, frozenset(touched), source, frozenset(minimums))


def get_model(name: str, overrides: Mapping[str, Any] | None = None) -> Model:
    """One model by name or alias (window, prices, scale); ``UnknownModel`` if not known."""
    return load_models(overrides).get(name)


def find_model(name: str, overrides: Mapping[str, Any] | None = None) -> Model | None:
    """One model by name or alias, or None."""
    return load_models(overrides).find(name)
