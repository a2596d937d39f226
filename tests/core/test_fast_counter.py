"""The fast exact counter: used only once proven equal to tiktoken, which stays the reference."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_toll.core import tokens


def _in_a_fresh_process(code: str, **environment: str) -> Any:
    """Run ``code`` (which prints one JSON value) where no counter has been chosen yet."""
    environ = {**os.environ, **environment}
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _quicktok_count() -> Any:
    quicktok = pytest.importorskip("quicktok")
    return quicktok.get_encoding(tokens.TOKENIZER_NAME).count


def test_the_probe_corpus_covers_the_hard_cases_with_tiktoken_s_counts(
    reference_o200k: Any,
) -> None:
    corpus = tokens.probe()
    assert len(corpus) > 300
    joined = "".join(text for text, _ in corpus)
    for case in ("<|endoftext|>", "'ll", "\ud800", "\u0301", "\u200d", "日本", "\r\n", " " * 300):
        assert case in joined
    # Every pinned count is tiktoken's own, through its registry and through our vocabulary.
    wrong = [
        (text, pinned, len(reference_o200k.encode_ordinary(text)))
        for text, pinned in corpus
        if pinned != len(reference_o200k.encode_ordinary(text))
        or pinned != len(tokens.encoding().encode_ordinary(text))
    ]
    assert wrong == []


def test_a_counter_that_differs_is_disproved_and_says_where() -> None:
    assert tokens.disproof(tokens.exact_count(fast=False)) is None
    said = tokens.disproof(len)
    assert said is not None and "where tiktoken counts" in said


def test_tiktoken_can_be_forced_and_is_the_default_elsewhere() -> None:
    code = (
        "import json; from pytest_toll.core import tokens; tokens.exact_count();"
        "print(json.dumps([tokens.exact_engine(), tokens.O200kCounter().fast]))"
    )
    engine, default_fast = _in_a_fresh_process(code, TOLL_COUNTER="tiktoken")
    assert engine == "tiktoken (TOLL_COUNTER=tiktoken)" and default_fast is False


def test_the_fast_counter_is_used_only_after_its_proof() -> None:
    pytest.importorskip("quicktok")
    code = (
        "import json; from pytest_toll.core import tokens; tokens.exact_count();"
        "print(json.dumps([tokens.exact_engine(), tokens.encoding_loaded()]))"
    )
    engine, tiktoken_loaded = _in_a_fresh_process(code, TOLL_COUNTER="")
    assert engine.startswith("quicktok ") and "equal to tiktoken on" in engine
    assert tiktoken_loaded is False  # proven against the pinned counts alone


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(min_size=0, max_size=2000))
def test_the_fast_counter_counts_random_text_as_tiktoken_does(text: str) -> None:
    # quicktok itself, not exact_count(): a fallback to tiktoken would make this vacuous.
    assert _quicktok_count()(text) == len(tokens.encoding().encode_ordinary(text))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            ["  ", "\t", "\n", "\r\n", "123", "abc", "ABC", "'s", "'LL", " ?!", "日本", "é", "🚀"]
        ),
        max_size=200,
    )
)
def test_the_fast_counter_counts_tokenizer_edge_mixes_as_tiktoken_does(parts: list[str]) -> None:
    text = "".join(parts)
    assert _quicktok_count()(text) == len(tokens.encoding().encode_ordinary(text))
