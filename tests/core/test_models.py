"""The model catalogue: shipped rows, tiers, costs, and toll.yaml overrides."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core.errors import UsageError
from pytest_toll.core.models import (
    Prices,
    Scale,
    UnknownModel,
    find_model,
    get_model,
    load_models,
    shipped_catalogue,
)


def test_every_shipped_row_names_its_sources_and_date() -> None:
    catalogue = shipped_catalogue()
    assert len(catalogue.names()) >= 10
    for name in catalogue.names():
        model = catalogue.get(name)
        assert model.provider in {"anthropic", "openai", "google", "xai"}, name
        assert model.sources and all(s.startswith("https://") for s in model.sources), name
        assert model.read and re.fullmatch(r"2026-\d\d-\d\d", model.read), name
        assert re.fullmatch(r"\d\.\d\d?", f"{model.scale.factor:g}") or model.scale.factor == 1.0


def test_scale_factors_by_family() -> None:
    assert get_model("claude-sonnet-5").scale.factor == 1.80
    assert get_model("claude-opus-5-5").scale.measured is True
    assert get_model("claude-opus-4-6").scale.factor == 1.29
    assert get_model("claude-haiku-4-5").scale.factor == 1.29
    openai = get_model("gpt-6.2-sol").scale
    assert (openai.factor, openai.measured) == (1.0, True)
    grok = get_model("grok-4.7").scale
    assert (grok.factor, grok.measured) == (1.0, False)


def test_shipped_prices_and_windows() -> None:
    sonnet = get_model("claude-sonnet-5")
    assert sonnet.window == 1_000_000
    assert sonnet.prices == Prices(
        input=2, output=10, cache_read=0.20, cache_write_5m=2.50, cache_write_1h=4
    )
    assert get_model("claude-haiku-4-5").window == 200_000
    assert get_model("gpt-6.2-sol").window == 1_050_000


def test_alias_finds_the_row() -> None:
    assert get_model("claude-haiku-4-5-20251001").name == "claude-haiku-4-5"


def test_tier_applies_to_the_whole_request() -> None:
    haiku = get_model("claude-haiku-5-5")
    assert haiku.input_price(100_000) == 0.10
    assert haiku.input_price(100_001) == 0.50
    # 150k tokens at the upper tier: every token at $0.50, not only the 50k above the line.
    assert haiku.cost_usd(150_000) == pytest.approx(0.075)
    # A part of a big request is priced at the request's tier.
    assert haiku.cost_usd(1_000, prompt_tokens=150_000) == pytest.approx(0.0005)
    grok = get_model("grok-4.7")
    assert grok.input_price(199_999) == 2
    assert grok.input_price(200_000) == 4
    gpt = get_model("gpt-6.2-sol")
    assert gpt.prices_for(272_001).output == 15


def test_unknown_price_gives_no_cost_and_zero_gives_zero() -> None:
    assert load_models({"bare": {"provider": "openai"}}).get("bare").cost_usd(1000) is None
    free = load_models({"local": {"provider": "openai", "prices": {"input": 0}}}).get("local")
    assert free.cost_usd(1000) == 0.0


def test_override_merges_into_a_shipped_row() -> None:
    catalogue = load_models({"claude-sonnet-5": {"prices": {"input": 2.5}}})
    model = catalogue.get("claude-sonnet-5")
    assert model.prices.input == 2.5
    assert model.prices.output == 10  # kept from the shipped row
    assert model.sources[-1] == "toll.yaml"
    # The shipped catalogue itself is untouched.
    assert get_model("claude-sonnet-5").prices.input == 2


def test_override_through_an_alias_changes_the_row() -> None:
    catalogue = load_models({"claude-haiku-4-5-20251001": {"window": 100_000}})
    assert catalogue.get("claude-haiku-4-5").window == 100_000


def test_new_model_with_scale_forms() -> None:
    catalogue = load_models(
        {
            "mine": {"provider": "openai", "window": 128000, "scale": 1.1},
            "named": {"provider": "anthropic", "scale": "claude-5"},
            "full": {
                "provider": "google",
                "scale": {"factor": 1.2, "measured": False, "source": "my notes"},
                "tiers": [{"above": 10, "prices": {"input": 3}}],
                "prices": {"input": 1},
            },
        }
    )
    assert catalogue.get("mine").scale == Scale(1.1, True, "toll.yaml")
    assert catalogue.get("named").scale.factor == 1.80
    full = catalogue.get("full")
    assert full.scale == Scale(1.2, False, "my notes")
    assert full.input_price(10) == 1 and full.input_price(11) == 3
    assert find_model("mine") is None  # not in the shipped catalogue


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"x": {"window": 5}}, "toll.yaml: models.x: a new model needs a 'provider'"),
        (
            {"claude-sonnet-5": {"prices": {"input": "cheap"}}},
            "toll.yaml: models.claude-sonnet-5.prices.input: must be a number, not 'cheap'",
        ),
        (
            {"claude-sonnet-5": {"prices": {"inpt": 1}}},
            "toll.yaml: models.claude-sonnet-5.prices.inpt: unknown price",
        ),
        (
            {"claude-sonnet-5": {"windw": 1}},
            "toll.yaml: models.claude-sonnet-5.windw: unknown key",
        ),
        (
            {"claude-sonnet-5": {"window": 1.5}},
            "toll.yaml: models.claude-sonnet-5.window: must be a whole number of tokens",
        ),
        (
            {"claude-sonnet-5": {"scale": "claude-9"}},
            "toll.yaml: models.claude-sonnet-5.scale: unknown scale 'claude-9'",
        ),
        (
            {"claude-sonnet-5": {"tiers": [{"prices": {"input": 1}}]}},
            "toll.yaml: models.claude-sonnet-5.tiers[0]: needs exactly one of",
        ),
        (
            {"claude-sonnet-5": {"prices": {"input": -1}}},
            "toll.yaml: models.claude-sonnet-5.prices.input: must not be negative",
        ),
    ],
)
def test_bad_overrides_name_the_key(overrides: dict[str, object], message: str) -> None:
    with pytest.raises(UsageError) as caught:
        load_models(overrides)
    assert str(caught.value).startswith(message)


def test_unknown_model_is_a_usage_error_listing_known_names() -> None:
    with pytest.raises(UnknownModel) as caught:
        get_model("gpt-7")
    assert "unknown model 'gpt-7'" in str(caught.value)
    assert "claude-sonnet-5" in str(caught.value)


def test_as_dict_leaves_unknown_prices_out() -> None:
    data = get_model("grok-4.6").as_dict()
    assert data["prices"] == {"input": 2, "output": 6}
    assert data["scale"]["factor"] == 1.0
    assert "window" in data and data["window"] == 500_000


SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-5, 10**7)
    | st.floats(allow_nan=True)
    | st.text(max_size=6)
)
KEYS = st.sampled_from(
    [
        "provider",
        "window",
        "prices",
        "tiers",
        "scale",
        "sources",
        "read",
        "note",
        "aliases",
        "input",
        "output",
        "above",
        "from",
        "factor",
        "measured",
        "source",
        "claude-sonnet-5",
        "x",
    ]
)
TREES = st.recursive(
    SCALARS,
    lambda children: st.lists(children, max_size=3) | st.dictionaries(KEYS, children, max_size=4),
    max_leaves=10,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(KEYS, TREES, max_size=3))
def test_any_models_section_is_loaded_or_refused_by_name(overrides: dict[str, object]) -> None:
    try:
        catalogue = load_models(overrides)
    except UsageError as error:
        assert str(error).startswith("toll.yaml: models")
        return
    for name in overrides:
        assert catalogue.find(str(name)) is not None


def test_importing_the_core_is_light() -> None:
    import subprocess
    import sys

    code = (
        "import sys, pytest_toll.core.models, pytest_toll.calls.measuring, pytest_toll.calls.anthropic, "
        "pytest_toll.cli.measure, pytest_toll.cli.calibrate; "
        "print(sorted(m for m in ('tiktoken', 'httpx', 'yaml') if m in sys.modules))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    )
    assert result.stdout.strip() == "[]"


def test_an_unknown_tier_price_leaves_the_cost_absent_above_the_line() -> None:
    luna = get_model("gpt-6-luna")
    assert luna.cost_usd(272_000) == pytest.approx(0.0272)
    assert luna.cost_usd(272_001) is None


def test_google_prompt_size_tier() -> None:
    gemini = get_model("gemini-2.5-pro")
    assert gemini.cost_usd(200_000) == pytest.approx(0.25)
    assert gemini.cost_usd(300_000) == pytest.approx(0.75)
    assert gemini.prices_for(200_001).output == 15


def test_a_dated_snapshot_id_finds_its_model_row() -> None:
    catalogue = load_models()
    sonnet = catalogue.get("claude-sonnet-4-5-20250929")
    assert sonnet.name == "claude-sonnet-4-5" and sonnet.window == 200_000
    assert catalogue.get("claude-sonnet-5-20260630").name == "claude-sonnet-5"
    assert catalogue.find("claude-sonnet-9-20260101") is None
    assert catalogue.find("claude-sonnet-5-2026") is None  # not a date suffix
