"""Token counters: exact o200k_base from the shipped vocabulary, and a labelled estimate.

Every number this package reports carries how it was made (its *method*):

- ``o200k``: o200k_base through tiktoken, exact for OpenAI models, the graded metric;
- ``o200k×F``: an o200k count scaled by a model family's factor F (with its provenance);
- ``estimate``: characters divided by a chars-per-token figure, only when asked for;
- ``native``: the provider counted it.

The vocabulary ships in the package and is verified against the sha256 tiktoken itself
pins; nothing here ever touches the network. tiktoken is imported, and the vocabulary read,
the first time an o200k count is asked for — once per process.

A faster exact counter (quicktok, the ``pytest-toll[fast]`` extra) counts when it is installed
and asked for (:func:`exact_count`), and only after it has given tiktoken's count on every
text of a built-in probe corpus in this process; on any difference tiktoken counts, and a
warning says why. tiktoken stays the reference: ``TOLL_COUNTER=tiktoken`` forces it.
"""

from __future__ import annotations

import binascii
import gzip
import hashlib
import math
import os
import threading
import warnings
import zlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_toll.core.errors import CouldNotJudge

if TYPE_CHECKING:
    import tiktoken

O200K = "o200k"
ESTIMATE = "estimate"
NATIVE = "native"
TOKENIZER_NAME = "o200k_base"

VOCABULARY_PATH = Path(__file__).parents[1] / "data" / "o200k_base.tiktoken.gz"
#: The sha256 of the decompressed vocabulary, the value tiktoken pins for o200k_base.
VOCABULARY_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"

# o200k_base's pre-tokenizer pattern and special tokens, as tiktoken defines them
# (tiktoken_ext.openai_public); tests/core/test_tokens.py proves the ids equal tiktoken's own.
O200K_PATTERN = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL_TOKENS = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}

#: Characters per token measured on real tool results; the estimate's default.
DEFAULT_CHARS_PER_TOKEN = 3.459


class VocabularyError(CouldNotJudge):
    """The shipped vocabulary is missing, unreadable or not the file tiktoken pins."""


def scaled_method(factor: float) -> str:
    """The label of an o200k count scaled by ``factor``: ``o200k×1.80``."""
    return f"{O200K}×{factor:.2f}"


@dataclass(frozen=True)
class Count:
    """A token count and how it was made. ``provenance`` says where a scale factor came from."""

    tokens: int
    method: str
    provenance: str | None = None

    def __str__(self) -> str:
        return f"{self.tokens:,} tok ({self.method})"

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tokens": self.tokens, "method": self.method}
        if self.provenance is not None:
            data["provenance"] = self.provenance
        return data


def scale(count: Count, factor: float, provenance: str) -> Count:
    """Scale an o200k count for another tokenizer family, rounding up.

    Rounding up because a meter that reads low loses turns: the factors are maxima over
    measured samples for the same reason.
    """
    if count.method != O200K:
        raise ValueError(f"only o200k counts can be scaled, not {count.method!r}")
    return Count(math.ceil(count.tokens * factor), scaled_method(factor), provenance)


# --- the vocabulary and the encoding (once per process) ---------------------------------

_encoding: tiktoken.Encoding | None = None
_encoding_lock = threading.Lock()


def load_ranks(path: Path = VOCABULARY_PATH) -> dict[bytes, int]:
    """Read and verify a gzipped ``.tiktoken`` vocabulary: ``base64-token rank`` per line."""
    try:
        compressed = path.read_bytes()
    except FileNotFoundError:
        raise VocabularyError(
            f"{path}: o200k_base vocabulary is missing (expected sha256 {VOCABULARY_SHA256}); "
            "reinstall pytest-toll"
        ) from None
    except OSError as error:
        raise VocabularyError(f"{path}: cannot read the o200k_base vocabulary: {error}") from None
    try:
        data = gzip.decompress(compressed)
    except (OSError, EOFError, zlib.error) as error:
        raise VocabularyError(
            f"{path}: o200k_base vocabulary is not a valid gzip file ({error}); "
            f"expected sha256 {VOCABULARY_SHA256} of its contents"
        ) from None
    actual = hashlib.sha256(data).hexdigest()
    if actual != VOCABULARY_SHA256:
        raise VocabularyError(
            f"{path}: o200k_base vocabulary has sha256 {actual}, expected {VOCABULARY_SHA256}; "
            "the file was altered — reinstall pytest-toll"
        )
    # binascii over split() is about twice as fast as tiktoken's own line-by-line loader.
    fields = data.split()
    tokens = map(binascii.a2b_base64, fields[0::2])
    return dict(zip(tokens, map(int, fields[1::2])))


def build_encoding(path: Path = VOCABULARY_PATH) -> tiktoken.Encoding:
    """A fresh ``tiktoken.Encoding`` for o200k_base from a verified vocabulary file."""
    import tiktoken

    return tiktoken.Encoding(
        name=TOKENIZER_NAME,
        pat_str=O200K_PATTERN,
        mergeable_ranks=load_ranks(path),
        special_tokens=O200K_SPECIAL_TOKENS,
    )


def encoding() -> tiktoken.Encoding:
    """The process-wide o200k_base encoding, built on first use."""
    global _encoding
    if _encoding is None:
        with _encoding_lock:
            if _encoding is None:
                _encoding = build_encoding()
    return _encoding


def encoding_loaded() -> bool:
    """Whether the vocabulary has been read in this process (for laziness tests)."""
    return _encoding is not None


# --- the fast exact counter, adopted only behind proof ------------------------------------

#: ``TOLL_COUNTER=tiktoken`` counts with the reference alone, even when quicktok is installed.
COUNTER_ENVIRONMENT = "TOLL_COUNTER"
FAST_COUNTER_PACKAGE = "quicktok"
#: :func:`exact_engine` when the fast counter is not installed
FAST_COUNTER_ABSENT = f"tiktoken ({FAST_COUNTER_PACKAGE} not installed)"
#: :func:`exact_engine` when ``TOLL_COUNTER=tiktoken`` turned the fast counter off
FAST_COUNTER_OFF = f"tiktoken ({COUNTER_ENVIRONMENT}=tiktoken)"


#: Texts with tiktoken's counts, pinned: a fast counter is proven without loading tiktoken
#: (~80 MB and ~0.5 s here); tests/core/test_fast_counter.py checks every pin against tiktoken.
PROBE_PATH = Path(__file__).parents[1] / "data" / "o200k_probe.json"


def probe() -> list[tuple[str, int]]:
    """The probe corpus: the pre-tokenizer's hard cases (whitespace runs, contractions, digits,
    mixed scripts, combining marks, emoji sequences, special-token text, lone surrogates) and
    seeded random mixes, each with tiktoken's o200k_base count."""
    import json  # the standard module: the corpus holds lone surrogates, which orjson refuses

    rows = json.loads(PROBE_PATH.read_text(encoding="utf-8"))["probe"]
    return [(str(text), int(count)) for text, count in rows]


_exact: Callable[[str], int] | None = None
_exact_engine = ""
_exact_lock = threading.Lock()


def _reference_count(text: str) -> int:
    return len(encoding().encode_ordinary(text))


def _prove_fast_counter() -> tuple[Callable[[str], int] | None, str]:
    """quicktok's count, if installed and equal to tiktoken on the probe; else None and why."""
    if os.environ.get(COUNTER_ENVIRONMENT, "").strip().lower() == "tiktoken":
        return None, FAST_COUNTER_OFF
    try:
        import quicktok
    except ImportError:
        return None, FAST_COUNTER_ABSENT
    version = getattr(quicktok, "__version__", "?")
    try:
        fast_count: Callable[[str], int] = quicktok.get_encoding(TOKENIZER_NAME).count
    except Exception as error:  # a broken install is a reason to fall back, never a crash
        return None, f"tiktoken (quicktok {version} failed to load: {error})"

    def count(text: str) -> int:
        try:
            return fast_count(text)
        except (UnicodeEncodeError, TypeError):
            # Lone surrogates: repaired exactly as tiktoken's encode_ordinary repairs them.
            return fast_count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    corpus = probe()
    difference = disproof(count, corpus)
    if difference is not None:
        reason = f"quicktok {version} {difference}; counting with tiktoken"
        warnings.warn(reason, RuntimeWarning, stacklevel=3)
        return None, f"tiktoken ({reason})"
    return count, f"quicktok {version} (equal to tiktoken on {len(corpus)} probe texts)"


def disproof(
    candidate: Callable[[str], int], corpus: Sequence[tuple[str, int]] | None = None
) -> str | None:
    """The first probe text on which ``candidate`` counts otherwise than tiktoken, said in
    words; None when it agrees on every one."""
    for text, reference in probe() if corpus is None else corpus:
        found = candidate(text)
        if found != reference:
            return f"counts {found} where tiktoken counts {reference} on {text[:40]!r}"
    return None


def exact_count(fast: bool = True) -> Callable[[str], int]:
    """The process-wide exact o200k count function: the fast counter once proven (``fast``
    and installed), else tiktoken. Loading and proving happen on the first call."""
    global _exact, _exact_engine
    if not fast:
        return _reference_count
    if _exact is None:
        with _exact_lock:
            if _exact is None:
                found, _exact_engine = _prove_fast_counter()
                _exact = found or _reference_count
    return _exact


def exact_engine() -> str:
    """Which engine :func:`exact_count` chose, and why (empty before its first use)."""
    return _exact_engine


# --- counters ---------------------------------------------------------------------------

# Texts shorter than this are their own cache key (str caches its hash); longer ones are keyed
# by a digest so the cache never holds megabytes of tool results.
_DIGEST_ABOVE_CHARS = 256
_CACHE_LIMIT = 200_000
_cache: dict[tuple[str, object], int] = {}


def _cache_key(method: str, text: str) -> tuple[str, object]:
    if len(text) < _DIGEST_ABOVE_CHARS:
        return (method, text)
    # sha1 as a cache key, not for security: the fastest 160-bit digest hashlib offers.
    digest = hashlib.sha1(text.encode("utf-8", "surrogatepass")).digest()
    return (method, digest)


def _remember(key: tuple[str, object], tokens: int) -> None:
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[key] = tokens


class Counter(Protocol):
    """Counts text in tokens and says how (its ``method`` label)."""

    @property
    def method(self) -> str: ...

    def count(self, text: str) -> int: ...

    def count_many(self, texts: Sequence[str]) -> list[int]: ...

    def measure(self, text: str) -> Count: ...

    @property
    def description(self) -> str: ...


class O200kCounter:
    """Exact o200k_base counts; special-token text such as ``<|endoftext|>`` is ordinary text."""

    method = O200K
    description = "o200k_base via tiktoken, exact for OpenAI models"

    def __init__(self, fast: bool = False) -> None:
        #: count with the proven fast counter when installed (pays its load and the probe,
        #: ~1.5 s here: worth it for megabytes of text, not for one tools list)
        self.fast = fast

    def count(self, text: str) -> int:
        key = _cache_key(O200K, text)
        tokens = _cache.get(key)
        if tokens is None:
            tokens = exact_count(self.fast)(text)
            _remember(key, tokens)
        return tokens

    def count_many(self, texts: Sequence[str]) -> list[int]:
        # A plain loop: tiktoken's encode_ordinary_batch thread pool measured slower
        # (bench/count.py: 0.70 of raw single-text throughput on 2 cores).
        return [self.count(text) for text in texts]

    def measure(self, text: str) -> Count:
        return Count(self.count(text), O200K)

    def encode(self, text: str) -> list[int]:
        """The token ids, exactly as tiktoken's o200k_base ``encode_ordinary`` gives them."""
        ids: list[int] = encoding().encode_ordinary(text)
        return ids


class EstimateCounter:
    """A chars-per-token estimate: cheap, never exact, always labelled ``estimate``."""

    method = ESTIMATE

    def __init__(self, chars_per_token: float = DEFAULT_CHARS_PER_TOKEN) -> None:
        if not math.isfinite(chars_per_token) or chars_per_token <= 0:
            raise ValueError(f"chars per token must be a positive number, not {chars_per_token}")
        self.chars_per_token = chars_per_token

    @property
    def description(self) -> str:
        return f"{self.chars_per_token:g} chars/token, an estimate, not a measurement"

    def count(self, text: str) -> int:
        return math.ceil(len(text) / self.chars_per_token)

    def count_many(self, texts: Sequence[str]) -> list[int]:
        return [self.count(text) for text in texts]

    def measure(self, text: str) -> Count:
        return Count(self.count(text), ESTIMATE, f"{self.chars_per_token:g} chars/token")


def get_counter(estimate: bool = False, chars_per_token: float | None = None) -> Counter:
    """The o200k counter, or the estimate when explicitly asked for."""
    if estimate:
        return EstimateCounter(
            DEFAULT_CHARS_PER_TOKEN if chars_per_token is None else chars_per_token
        )
    if chars_per_token is not None:
        raise ValueError("chars per token only applies to the estimate counter")
    return O200kCounter()


def count(text: str) -> int:
    """The o200k_base token count of ``text`` (cached by content)."""
    return O200kCounter().count(text)


def count_all(texts: Iterable[str]) -> list[int]:
    """o200k_base counts of many texts, batched."""
    return O200kCounter().count_many(list(texts))
