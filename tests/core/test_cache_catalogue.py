"""The catalogue's cache figures (issue #39): cache prices or a note on every priced row of
the providers that publish them, each row's own page among its sources, and the minimum
cacheable length with its source; and toll.yaml overrides of those fields."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from pytest_toll.core.errors import UsageError
from pytest_toll.core.models import (
    _MODEL_KEYS,
    PRICE_FIELDS,
    CacheMinimum,
    Model,
    get_model,
    load_models,
    shipped_catalogue,
)
from pytest_toll.gate.ledger import SCHEMA_PATH as LEDGER_SCHEMA
from pytest_toll.gate.ledger import ledger_from_text
from pytest_toll.gate.settings import ledger_catalogue


def test_a_ledger_row_sets_the_minimum_and_it_is_named_as_the_ledgers() -> None:
    catalogue = load_models({"local": {"provider": "openai", "cache_minimum": {"tokens": 2048}}})
    assert catalogue.get("local").cache_minimum == CacheMinimum(2048, "toll.yaml")
    assert catalogue.layer_of(catalogue.get("local")) == "ledger"


def test_a_ledger_override_of_a_shipped_minimum_keeps_the_rest_of_the_row() -> None:
    shipped = load_models().get("claude-sonnet-5")
    assert shipped.cache_minimum is not None and shipped.cache_minimum.tokens is not None
    changed = load_models({"claude-sonnet-5": {"cache_minimum": {"tokens": 4096}}}).get(
        "claude-sonnet-5"
    )
    assert changed.cache_minimum == CacheMinimum(4096, "toll.yaml", shipped.cache_minimum.note)
    assert changed.prices == shipped.prices
    # A note alone leaves the figure and its page as they were.
    noted = load_models({"claude-sonnet-5": {"cache_minimum": {"note": "checked"}}}).get(
        "claude-sonnet-5"
    )
    assert noted.cache_minimum == CacheMinimum(
        shipped.cache_minimum.tokens, shipped.cache_minimum.source, "checked"
    )


def test_a_ledger_row_sets_the_storage_price() -> None:
    row = load_models(
        {"g": {"provider": "google", "prices": {"input": 1, "cache_storage": 4.5}}}
    ).get("g")
    assert row.prices.cache_storage == 4.5
    assert row.as_dict()["prices"]["cache_storage"] == 4.5


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"tokens": -1}, "models.x.cache_minimum.tokens: must not be negative"),
        ({"tokens": 1.5}, "models.x.cache_minimum.tokens: must be a whole number"),
        ({"source": "https://a"}, "models.x.cache_minimum: has no 'tokens'"),
        ({"tokens": 1, "ttl": 5}, "models.x.cache_minimum.ttl: unknown key"),
        ({"tokens": 1, "source": 3}, "models.x.cache_minimum.source: must be a string"),
        (1024, "models.x.cache_minimum: must be a mapping"),
    ],
)
def test_a_bad_minimum_names_its_key(value: object, message: str) -> None:
    with pytest.raises(UsageError, match=message):
        load_models({"x": {"provider": "openai", "cache_minimum": value}})


def test_an_unknown_minimum_is_kept_as_unknown_with_its_note() -> None:
    row = load_models(
        {"x": {"provider": "openai", "cache_minimum": {"tokens": None, "note": "not published"}}}
    ).get("x")
    assert row.cache_minimum == CacheMinimum(None, "toll.yaml", "not published")
    assert row.as_dict()["cache_minimum"] == {
        "tokens": None,
        "source": "toll.yaml",
        "note": "not published",
    }


# --- the shipped rows ---------------------------------------------------------------------

#: The providers whose rows this holds to the rules below, with their pricing page.
PRICING_PAGES = {
    "anthropic": "https://platform.claude.com/docs/en/about-claude/pricing",
    "openai": "https://developers.openai.com/api/docs/pricing",
    "google": "https://ai.google.dev/gemini-api/docs/pricing",
}
#: What a row needs to carry its provider's cache prices.
CACHE_PRICES = {
    "anthropic": ("cache_read", "cache_write_5m", "cache_write_1h"),
    "openai": ("cache_read", "cache_write"),
    "google": ("cache_read", "cache_storage"),
}
#: A provider's own documentation: a source here that is not the pricing page is a model page.
PROVIDER_DOCS = {
    "anthropic": ("https://platform.claude.com/docs/",),
    "openai": ("https://developers.openai.com/",),
    "google": ("https://ai.google.dev/", "https://docs.cloud.google.com/"),
}
#: A page in another language: a locale segment after /docs/ (not en), or ?hl= not English.
OTHER_LANGUAGE = re.compile(r"/docs/(?!en/)[a-z]{2}(?:-[A-Za-z]{2,4})?/|[?&]hl=(?!en)")


def _rows() -> list[Model]:
    catalogue = shipped_catalogue()
    rows = [catalogue.get(name) for name in catalogue.names()]
    return [row for row in rows if row.provider in PRICING_PAGES]


def _slugs(model: Model) -> set[str]:
    """How a model's own page may spell it: claude-opus-4-8 → opus-4-8, gemini-2.5-pro →
    2.5-pro and 2-5-pro."""
    bare = re.sub(r"^(claude|gemini)-", "", model.name)
    return {model.name, bare, bare.replace(".", "-")}


def test_the_rows_held_to_these_rules_are_there() -> None:
    providers = {row.provider for row in _rows()}
    assert providers == set(PRICING_PAGES)
    assert len(_rows()) >= 18


def test_every_priced_row_has_its_cache_prices_or_a_note_saying_why_not() -> None:
    for row in _rows():
        if row.prices.input is None:
            continue
        missing = [name for name in CACHE_PRICES[row.provider] if getattr(row.prices, name) is None]
        if missing:
            note = (row.note or "").lower()
            said = "not recorded" in note or "none are recorded" in note
            assert "cach" in note and said, (
                f"{row.name} lacks {missing} and its note does not say why"
            )


def test_the_rows_the_issue_names_carry_their_cache_prices() -> None:
    for name, read, five, hour in (
        ("claude-sonnet-4-5", 0.30, 3.75, 6),
        ("claude-haiku-4-5", 0.10, 1.25, 2),
    ):
        prices = get_model(name).prices
        assert (prices.cache_read, prices.cache_write_5m, prices.cache_write_1h) == (
            read,
            five,
            hour,
        )


def test_gemini_2_5_pro_carries_its_cache_read_and_storage_prices_at_both_tiers() -> None:
    gemini = get_model("gemini-2.5-pro")
    low, high = gemini.prices_for(200_000), gemini.prices_for(200_001)
    assert (low.cache_read, low.cache_storage) == (0.125, 4.50)
    assert (high.cache_read, high.cache_storage) == (0.25, 4.50)


def test_openai_cache_writes_are_one_and_a_quarter_the_input_price() -> None:
    # The prompt caching guide: "for GPT-5.6 models and later model families, cache writes
    # cost 1.25x the uncached input token rate".
    for row in _rows():
        if row.provider == "openai":
            prices = row.prices
            assert prices.input is not None and prices.cache_write is not None
            assert prices.cache_write == pytest.approx(1.25 * prices.input), row.name


def test_every_row_cites_its_providers_pricing_page_or_says_it_was_not_read() -> None:
    for row in _rows():
        if row.prices.input is not None and PRICING_PAGES[row.provider] not in row.sources:
            assert "pricing page" in (row.note or "") and "not read" in (row.note or ""), row.name


def test_every_source_is_in_english() -> None:
    for row in _rows():
        for source in row.sources:
            assert not OTHER_LANGUAGE.search(source), f"{row.name}: {source}"
        if row.cache_minimum is not None and row.cache_minimum.source:
            assert not OTHER_LANGUAGE.search(row.cache_minimum.source), row.name


def test_a_model_page_source_names_its_model_or_the_note_explains_it() -> None:
    checked = 0
    for row in _rows():
        for source in row.sources:
            own_docs = source.startswith(PROVIDER_DOCS[row.provider])
            if not own_docs or source == PRICING_PAGES[row.provider] or "/models/" not in source:
                continue
            checked += 1
            if any(slug in source for slug in _slugs(row)):
                continue
            # Another model's page (its lineup table): the note names that page.
            path = source.split("/docs/", 1)[1].removeprefix("en/")
            assert path in (row.note or ""), f"{row.name} cites {source} without saying why"
    assert checked >= 12


def test_the_haiku_4_5_row_no_longer_cites_another_models_page() -> None:
    haiku = get_model("claude-haiku-4-5")
    assert "https://platform.claude.com/docs/en/models/haiku-4-5/overview" in haiku.sources
    assert not any("sonnet-5" in source for source in haiku.sources)


def test_every_row_records_its_minimum_cacheable_length_with_a_source() -> None:
    known = 0
    for row in _rows():
        minimum = row.cache_minimum
        assert minimum is not None, row.name
        if minimum.tokens is None:
            assert minimum.note and "no page read" in minimum.note, row.name
            continue
        known += 1
        assert minimum.tokens in {512, 1024, 2048, 4096}, row.name
        assert minimum.source and minimum.source.startswith("https://"), row.name
    assert known >= 12
    assert get_model("claude-haiku-4-5").cache_minimum == CacheMinimum(
        4096,
        "https://github.com/anthropics/anthropic-sdk-python/issues/1194",
        get_model("claude-haiku-4-5").cache_minimum.note,  # type: ignore[union-attr]
    )
    assert get_model("gpt-6.2-sol").cache_minimum.tokens == 1024  # type: ignore[union-attr]


# --- the ledger schema --------------------------------------------------------------------


def _schema() -> dict[str, Any]:
    return json.loads(LEDGER_SCHEMA.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_the_ledger_schema_names_every_model_key_and_price() -> None:
    defs = _schema()["$defs"]
    assert set(defs["model_row"]["properties"]) == _MODEL_KEYS
    assert tuple(defs["model_prices"]["propertyNames"]["enum"]) == PRICE_FIELDS
    assert set(defs["model_row"]["properties"]["cache_minimum"]["properties"]) == {
        "tokens",
        "source",
        "note",
    }


def test_a_ledger_with_the_new_fields_loads_and_its_catalogue_has_them() -> None:
    text = (
        "version: 1\nmodels:\n"
        "  claude-sonnet-5:\n    cache_minimum: {tokens: 2048, source: https://example.org/p}\n"
        "  house:\n    provider: google\n    prices: {input: 1, cache_storage: 4.5}\n"
        "    cache_minimum: {tokens: null, note: not published}\n"
    )
    catalogue = ledger_catalogue(ledger_from_text(text, Path("toll.yaml")))
    assert catalogue.get("claude-sonnet-5").cache_minimum == CacheMinimum(
        2048,
        "https://example.org/p",
        catalogue.get("claude-sonnet-5").cache_minimum.note,  # type: ignore[union-attr]
    )
    assert catalogue.minimum_layer(catalogue.get("claude-sonnet-5")) == "ledger"
    assert catalogue.minimum_layer(catalogue.get("claude-opus-5")) == "package"
    house = catalogue.get("house")
    assert house.prices.cache_storage == 4.5 and house.cache_minimum == CacheMinimum(
        None, "toll.yaml:2", "not published"
    )


def test_the_ledger_schema_refuses_a_minimum_it_does_not_know() -> None:
    text = "version: 1\nmodels:\n  claude-sonnet-5:\n    cache_minimum: {tokens: 1024, ttl: 5m}\n"
    with pytest.raises(UsageError, match=r"toll.yaml:4: models.claude-sonnet-5.cache_minimum"):
        ledger_from_text(text, Path("toll.yaml"))
