"""The demo's only randomness: numbers fixed by their inputs, so every seed of the demo is the same."""

from __future__ import annotations

import zlib


def dice(*parts: object) -> int:
    """A number fixed by its inputs (unlike hash(), the same in every process): the demo never changes."""
    return zlib.crc32(repr(parts).encode())
