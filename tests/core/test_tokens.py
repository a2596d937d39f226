"""The counter: exact o200k ids, verified vocabulary, labelled methods, lazy and cached."""

from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core import tokens
from pytest_toll.core.tokens import (
    Count,
    EstimateCounter,
    O200kCounter,
    VocabularyError,
    get_counter,
    scale,
)

_PRETTY = json.dumps(
    {"name": "read_file", "inputSchema": {"type": "object", "properties": {"path": {}}}},
    indent=2,
)
CORPUS = {
    "english": "The quick brown fox jumps over the lazy dog. It's 4:30pm; don't you think?",
    "code": "def f(x: int) -> int:\n    return x ** 2  # square\n\n\nclass A(B):\n\tpass\n",
    "json_minified": '{"a":[1,2,3],"b":{"c":null,"d":true},"e":"ünïcödé"}',
    "json_pretty": _PRETTY,
    "cjk": "日本語のテキストと中文文本，还有한국어 텍스트。",
    "emoji": "deploy 🚀🚀 done ✅ 👩‍👩‍👧‍👦 flags 🇯🇵🇫🇷",
    "whitespace_runs": "a    b\t\t\tc\n\n\n\n   \r\n  \u00a0\u2003 d      ",
    "special_token_text": "before <|endoftext|> after <|endofprompt|><|fim_prefix|>",
    "numbers": "3.14159265358979 1,000,000 0xDEADBEEF 1e-10",
    "empty": "",
    "long_repetition": "ab" * 5000 + " " * 3000 + "z",
    "mixed_scripts": "Ελληνικά русский עברית العربية हिन्दी ไทย",
}


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_ids_equal_tiktokens_own_o200k_base(name: str, reference_o200k: Any) -> None:
    text = CORPUS[name]
    assert O200kCounter().encode(text) == reference_o200k.encode_ordinary(text)
    assert O200kCounter().count(text) == len(reference_o200k.encode_ordinary(text))


def test_pattern_and_special_tokens_match_tiktoken(reference_o200k: Any) -> None:
    enc = tokens.encoding()
    assert enc._pat_str == reference_o200k._pat_str
    assert enc._special_tokens == reference_o200k._special_tokens
    assert enc.n_vocab == reference_o200k.n_vocab


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_ids_equal_on_arbitrary_text(reference_o200k: Any, text: str) -> None:
    assert O200kCounter().encode(text) == reference_o200k.encode_ordinary(text)


def test_special_token_text_is_ordinary_text() -> None:
    ids = O200kCounter().encode("<|endoftext|>")
    assert 199999 not in ids
    assert len(ids) > 1


def test_vocabulary_hash_is_the_one_tiktoken_pins() -> None:
    assert tokens.VOCABULARY_SHA256 == (
        "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
    )
    assert len(tokens.load_ranks()) == 199998


def test_altered_vocabulary_names_file_and_both_hashes(altered_vocabulary: Path) -> None:
    with pytest.raises(VocabularyError) as caught:
        tokens.build_encoding(altered_vocabulary)
    message = str(caught.value)
    assert str(altered_vocabulary) in message
    assert tokens.VOCABULARY_SHA256 in message
    actual = message.split("has sha256 ")[1].split(",")[0]
    assert len(actual) == 64 and actual != tokens.VOCABULARY_SHA256


def test_missing_vocabulary_is_a_clear_error(tmp_path: Path) -> None:
    missing = tmp_path / "nope.tiktoken.gz"
    with pytest.raises(
        VocabularyError, match=r"nope\.tiktoken\.gz: o200k_base vocabulary is missing"
    ):
        tokens.build_encoding(missing)


def test_corrupt_gzip_is_a_clear_error(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gz"
    broken.write_bytes(b"\x1f\x8b\x08\x00garbage")
    with pytest.raises(
        VocabularyError, match=r"broken\.gz: o200k_base vocabulary is not a valid gzip"
    ):
        tokens.build_encoding(broken)


def test_encoding_is_built_once_even_under_threads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tokens, "_encoding", None)
    builds: list[int] = []
    real_build = tokens.build_encoding

    def counting_build(path: Path = tokens.VOCABULARY_PATH) -> Any:
        builds.append(1)
        return real_build(path)

    monkeypatch.setattr(tokens, "build_encoding", counting_build)
    results: list[Any] = []
    threads = [threading.Thread(target=lambda: results.append(tokens.encoding())) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert builds == [1]
    assert all(result is results[0] for result in results)


def test_counts_are_cached_by_method_and_content(monkeypatch: pytest.MonkeyPatch) -> None:
    long_text = "cache me " * 100
    counter = O200kCounter()
    first = counter.count(long_text)
    calls: list[str] = []
    enc = tokens.encoding()

    class Spy:
        def encode_ordinary(self, text: str) -> list[int]:
            calls.append(text)
            return list(enc.encode_ordinary(text))

    monkeypatch.setattr(tokens, "_encoding", Spy())
    assert counter.count(long_text) == first
    assert counter.count_many([long_text, "short one", long_text]) == [first, 2, first]
    assert calls == ["short one"]
    # A different text with the same length is a different key.
    counter.count("cache me!" * 100)
    assert calls == ["short one", "cache me!" * 100]


def test_count_many_matches_single_counts() -> None:
    texts = list(CORPUS.values()) * 2
    assert O200kCounter().count_many(texts) == [O200kCounter().count(t) for t in texts]


def test_estimate_is_chars_over_ratio_and_labelled() -> None:
    counter = EstimateCounter()
    assert counter.chars_per_token == 3.459
    assert counter.count("x" * 3459) == 1000
    assert counter.count("x" * 3460) == 1001
    assert counter.count("") == 0
    assert counter.measure("abcd") == Count(2, "estimate", "3.459 chars/token")
    assert EstimateCounter(4).count("abcdefgh") == 2


@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf")])
def test_estimate_rejects_bad_ratio(bad: float) -> None:
    with pytest.raises(ValueError, match="chars per token"):
        EstimateCounter(bad)


def test_get_counter_only_estimates_when_asked() -> None:
    assert get_counter().method == "o200k"
    assert get_counter(estimate=True, chars_per_token=4.0).method == "estimate"
    with pytest.raises(ValueError):
        get_counter(chars_per_token=4.0)


def test_scaled_count_names_factor_and_provenance() -> None:
    scaled = scale(Count(1000, "o200k"), 1.8, "rovecode samples, 2026")
    assert scaled == Count(1800, "o200k×1.80", "rovecode samples, 2026")
    assert str(scaled) == "1,800 tok (o200k×1.80)"
    assert scale(Count(3, "o200k"), 1.29, "x").tokens == 4  # rounds up: a low meter loses turns
    with pytest.raises(ValueError):
        scale(Count(3, "estimate"), 1.29, "x")


def test_import_does_not_load_tiktoken_or_vocabulary() -> None:
    code = (
        "import sys, pytest_toll, pytest_toll.plugin, pytest_toll.cli, pytest_toll.core.tokens\n"
        "assert 'tiktoken' not in sys.modules, 'tiktoken imported'\n"
        "assert 'httpx' not in sys.modules, 'httpx imported'\n"
        "assert not pytest_toll.core.tokens.encoding_loaded()\n"
        "pytest_toll.core.tokens.count('x')\n"
        "assert 'tiktoken' in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_pytest_without_toll_does_not_load_tiktoken(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import sys

        def test_lazy():
            assert "tiktoken" not in sys.modules
            assert "pytest_toll.plugin" in sys.modules
        """
    )
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
