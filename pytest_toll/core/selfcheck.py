"""The counter checking itself (``toll doctor``): the shipped vocabulary is the file tiktoken
pins, and our o200k_base gives the same token ids as tiktoken's own on a probe text.

tiktoken's own o200k_base is built from its own definition (``tiktoken_ext.openai_public``:
pattern, special tokens, the sha256 it expects) with our shipped file placed in a temporary
tiktoken cache, so the check never touches the network.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pytest_toll.core import tokens

#: Letters, digits, accents, CJK, an emoji, whitespace runs and a special-token look-alike:
#: the pre-tokenizer's branches, each at least once.
PROBE_TEXT = (
    "Hello, wörld! It's 12345 tokens — or 3.459 chars each?\n\n\tdef f(x): return x**2  \n"
    "日本語のテキスト, emoji 😀, and <|endoftext|> as plain text."
)
# tiktoken keeps a downloaded vocabulary under sha1(its URL) in TIKTOKEN_CACHE_DIR.
TIKTOKEN_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@dataclass(frozen=True)
class CheckResult:
    ok: bool
    detail: str


def vocabulary_hash(path: Path = tokens.VOCABULARY_PATH) -> CheckResult:
    """The sha256 of the shipped vocabulary's contents against the one tiktoken pins."""
    try:
        actual = hashlib.sha256(gzip.decompress(path.read_bytes())).hexdigest()
    except (OSError, EOFError) as error:
        return CheckResult(False, f"{path}: cannot read the vocabulary ({error})")
    if actual != tokens.VOCABULARY_SHA256:
        return CheckResult(False, f"{path}: sha256 {actual}, expected {tokens.VOCABULARY_SHA256}")
    return CheckResult(True, f"sha256 {actual[:16]}… equals tiktoken's pin ({path.name})")


def identity_with_tiktoken(text: str = PROBE_TEXT) -> CheckResult:
    """Our o200k_base token ids against tiktoken's own o200k_base on ``text``."""
    import tiktoken
    from tiktoken_ext import openai_public  # type: ignore[import-untyped]

    verified = vocabulary_hash()
    if not verified.ok:
        # tiktoken would reject the file in its cache and try to download its own: never.
        return CheckResult(False, "not compared: the shipped vocabulary is not the pinned file")
    ours = tokens.encoding().encode_ordinary(text)
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="toll-doctor-") as cache:
        name = hashlib.sha1(TIKTOKEN_O200K_URL.encode()).hexdigest()
        Path(cache, name).write_bytes(gzip.decompress(tokens.VOCABULARY_PATH.read_bytes()))
        os.environ["TIKTOKEN_CACHE_DIR"] = cache
        try:
            reference = tiktoken.Encoding(**openai_public.o200k_base())
        finally:
            if saved is None:
                os.environ.pop("TIKTOKEN_CACHE_DIR", None)
            else:
                os.environ["TIKTOKEN_CACHE_DIR"] = saved
    theirs = reference.encode_ordinary(text)
    if ours != theirs:
        first = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs)) if a != b), min(len(ours), len(theirs))
        )
        return CheckResult(
            False,
            f"token ids differ from tiktoken {tiktoken.__version__}'s o200k_base at token "
            f"{first} of the probe ({len(ours)} against {len(theirs)} tokens)",
        )
    return CheckResult(
        True,
        f"{len(ours)} token ids on the probe text equal tiktoken {tiktoken.__version__}'s "
        "own o200k_base",
    )
