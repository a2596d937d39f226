"""Counting: an image costs what Anthropic's sizing formula says."""

from __future__ import annotations

from pytest_toll.transcripts.counting import image_tokens
from pytest_toll.transcripts.images import Image


def test_image_tokens() -> None:
    assert image_tokens(Image("image/png", 100, 50)) == 7
    assert image_tokens(Image("image/png", 1000, 1000)) == 1334
    # 4000×3000 fits to 1238×929 (1.15 MP): about 1,533 tokens, never the raw 16,000
    assert image_tokens(Image("image/png", 4000, 3000)) == 1534
    assert image_tokens(Image("image/png", None, None)) == 1600
