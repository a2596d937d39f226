"""Cut after scrubbing, never before (issue #24, item 2): whatever the secret and wherever a
message is cut, no piece of a known secret of ``MIN_FRAGMENT`` (12) or more characters
survives — not from a cut through the secret, nor from text that arrived already cut (the
last bytes of a server's stderr)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_toll.core import secrets
from pytest_toll.core.secrets import MIN_FRAGMENT, cut, scrub_window

#: Secrets are drawn from letters, digits and ``-_/+``; the text around them from other
#: characters, so any 12-character piece of a secret in the result came from the secret.
SECRET_ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_/+"
FILLER_ALPHABET = "abcdefghijklmnopqrstuvwxyz .,:;!?()\n"

secret_values = st.text(SECRET_ALPHABET, min_size=MIN_FRAGMENT, max_size=80)
fillers = st.text(FILLER_ALPHABET, max_size=300)


@pytest.fixture(autouse=True)
def registry() -> Iterator[None]:
    secrets.forget_all()
    yield
    secrets.forget_all()


def surviving_pieces(text: str, secret: str) -> list[str]:
    return [
        secret[start : start + MIN_FRAGMENT]
        for start in range(len(secret) - MIN_FRAGMENT + 1)
        if secret[start : start + MIN_FRAGMENT] in text
    ]


@settings(max_examples=400, deadline=None)
@given(
    secret=secret_values,
    before=fillers,
    after=fillers,
    limit=st.integers(min_value=1, max_value=400),
    keep=st.sampled_from(["head", "tail"]),
)
def test_a_cut_never_leaves_a_piece_of_a_secret(
    secret: str, before: str, after: str, limit: int, keep: str
) -> None:
    secrets.forget_all()
    secrets.remember(secret)
    text = before + secret + after + secret
    shown = cut(text, limit, keep="head" if keep == "head" else "tail")
    assert not surviving_pieces(shown, secret), shown
    assert len(shown) <= limit


@settings(max_examples=400, deadline=None)
@given(
    secret=secret_values,
    before=fillers,
    after=fillers,
    start=st.integers(min_value=0, max_value=500),
    end=st.integers(min_value=0, max_value=500),
)
def test_a_window_cut_before_it_arrived_is_masked_at_its_edges(
    secret: str, before: str, after: str, start: int, end: int
) -> None:
    """The window is any slice of the text (as the last bytes of a stream are): a piece of
    the secret can only be at an edge, and there it is masked as the secret."""
    secrets.forget_all()
    secrets.remember(secret)
    text = before + secret + after
    start = min(start, len(text))
    end = max(start, len(text) - min(end, len(text)))
    window = text[start:end]
    shown = scrub_window(window, cut_before=start > 0, cut_after=end < len(text))
    assert not surviving_pieces(shown, secret), (window, shown)


def test_a_short_piece_or_ordinary_text_is_left_alone() -> None:
    secrets.remember("SECRETVALUE-0123456789")
    # The secret's own end where the window's start cut it, however short (from MIN_EDGE
    # characters on), is the secret (issue #34: it was left when under 12 characters).
    assert scrub_window("0123456789 done", cut_before=True) == "[secret] done"
    # Three characters of its end, or a short piece from inside it: ordinary text.
    assert scrub_window("789 done", cut_before=True) == "789 done"
    assert scrub_window("VALUE-01 done", cut_before=True) == "VALUE-01 done"
    assert scrub_window("ALUE-0123456789 done", cut_before=True) == "[secret] done"
    assert cut("a plain line of text that is long", 10) == "a plain l…"
    assert cut("x" * 8 + "SECRETVALUE-0123456789", 20) == "xxxxxxxx[secret]"
    assert cut("x" * 8 + "SECRETVALUE-0123456789" + "y" * 10, 20) == "xxxxxxxx[secret]yyy…"
