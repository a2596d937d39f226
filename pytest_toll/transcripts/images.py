"""Image blocks in transcripts: the size an image's header declares, without decoding it.

Anthropic charges an image by its pixel size (:mod:`~pytest_toll.transcripts.counting`); the
readers take that size from the first bytes of the base64 data, never the whole image.
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Image:
    """An image block; ``width``/``height`` are None when the header could not be read."""

    media_type: str
    width: int | None
    height: int | None


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF, WebP or JPEG header, or None."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP" and len(data) >= 30:
        chunk = data[12:16]
        if chunk == b"VP8X":
            width = 1 + int.from_bytes(data[24:27], "little")
            height = 1 + int.from_bytes(data[27:30], "little")
            return width, height
        if chunk == b"VP8L":
            bits = int.from_bytes(data[21:25], "little")
            return 1 + (bits & 0x3FFF), 1 + ((bits >> 14) & 0x3FFF)
        if chunk == b"VP8 ":
            width, height = struct.unpack("<HH", data[26:30])
            return width & 0x3FFF, height & 0x3FFF
        return None
    if data[:2] == b"\xff\xd8":
        index = 2
        while index + 9 < len(data):
            if data[index] != 0xFF:
                index += 1
                continue
            marker = data[index + 1]
            if marker in (0xD8, 0x01) or 0xD0 <= marker <= 0xD7 or marker == 0xFF:
                index += 1 if marker == 0xFF else 2
                continue
            length = int.from_bytes(data[index + 2 : index + 4], "big")
            # SOF markers carry the frame size; C4 (DHT), C8 and CC are not frames.
            if 0xC0 <= marker <= 0xCF and marker not in (0xC4, 0xC8, 0xCC):
                height, width = struct.unpack(">HH", data[index + 5 : index + 9])
                return width, height
            index += 2 + length
    return None


def _image_from_base64(media_type: str, data: object) -> Image:
    size = None
    if isinstance(data, str):
        # Headers sit at the start, but a JPEG's frame marker can follow a large EXIF block.
        head = data[: 256 * 1024]
        head = head[: len(head) - len(head) % 4]
        try:
            size = image_size(base64.b64decode(head, validate=False))
        except (binascii.Error, ValueError):
            size = None
    if size is None:
        return Image(media_type, None, None)
    return Image(media_type, size[0], size[1])


def image_block(block: Mapping[str, Any]) -> Image:
    source = block.get("source")
    if isinstance(source, Mapping):
        return _image_from_base64(str(source.get("media_type", "")), source.get("data"))
    url = block.get("image_url")
    if isinstance(url, str) and url.startswith("data:") and "," in url:
        header, _, data = url.partition(",")
        return _image_from_base64(header[5:].split(";")[0], data)
    return Image("", None, None)
