"""The token estimator and threshold semantics (docs/spec.md#token-estimates; docs/design.md#m1).

One estimator for every command: bytes of the canonical item / 4 (floor), each image 765.
Unlike grok-build, images on tool results count too (docs/design.md#w5).
"""
from __future__ import annotations

from typing import Any

from .fingerprint import canonical

IMAGE_TOKENS = 765
BYTES_PER_TOKEN = 4


def item_tokens(item: dict[str, Any], canon: bytes | None = None) -> int:
    """Estimate of one view item. `canon` may be passed when already computed."""
    images = item.get("images")
    if images:
        # Image payloads are priced per image, not by their (base64) bytes.
        rest = {k: v for k, v in item.items() if k != "images"}
        return size_tokens(len(canonical(rest))) + IMAGE_TOKENS * len(images)
    if canon is None:
        canon = canonical(item)
    return size_tokens(len(canon))


def size_tokens(size: int) -> int:
    """The estimate of SIZE bytes (or characters) of text: a quarter, rounded down."""
    return size // BYTES_PER_TOKEN


def usage_context(ev: dict[str, Any]) -> int:
    """Context size of the request a usage event reports: input + cache_read + cache_write + output."""
    return (
        int(ev.get("input") or 0)
        + int(ev.get("cache_read") or 0)
        + int(ev.get("cache_write") or 0)
        + int(ev.get("output") or 0)
    )


# How close a context is to its compaction threshold: one pair of names for `compact`,
# `compact --check`, `--prefire` and `inspect`.
OVER, BELOW = "over_threshold", "below_threshold"


def threshold_status(used: int, window: int, percent: float) -> str:
    """OVER when USED reaches PERCENT of WINDOW, else BELOW."""
    return OVER if over_threshold(used, window, percent) else BELOW


def over_threshold(used: int, window: int, percent: float) -> bool:
    """used*100 >= window*percent; never true for an empty window."""
    if window <= 0:
        return False
    return used * 100 >= window * percent


def percent_of(used: int, window: int) -> float:
    return round(used * 100 / window, 2) if window > 0 else 0.0
