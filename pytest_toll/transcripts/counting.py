"""What a transcript's content costs in tokens: text in o200k, images by Anthropic's formula."""

from __future__ import annotations

import math
from collections.abc import Callable

from pytest_toll.core.tokens import O200kCounter
from pytest_toll.transcripts.images import Image

# Anthropic sizes an image as (width × height) / 750 tokens after fitting it within 1568 px on
# the long edge and about 1.15 megapixels; an image whose header cannot be read is charged the
# ceiling those limits imply, and reported as such.
IMAGE_LONG_EDGE = 1568
IMAGE_MAX_PIXELS = 1_150_000
IMAGE_TOKENS_CEILING = 1_600


def image_tokens(image: Image) -> int:
    if not image.width or not image.height:
        return IMAGE_TOKENS_CEILING
    pixels = image.width * image.height
    fit = min(1.0, IMAGE_LONG_EDGE / max(image.width, image.height))
    fit = min(fit, math.sqrt(IMAGE_MAX_PIXELS / pixels))
    return max(1, math.ceil(pixels * fit * fit / 750))


def text_counter(fast: bool = False) -> Callable[[str], int]:
    """The exact o200k count of a text (the counter loads on the first count, not here);
    ``fast`` counts with the faster exact counter once proven equal to tiktoken."""
    return O200kCounter(fast=fast).count
