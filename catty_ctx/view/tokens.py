"""The token estimator and threshold semantics (docs/spec.md#token-estimates; docs/design.md#m1).

One estimator for every command: bytes of the canonical item / 4 (floor), each image 765.
Unlike grok-build, images on tool results count too (docs/design.md#w5).
"""
from __future__ import annotations

from typing import Any

from ..defaults import BYTES_PER_TOKEN, IMAGE_TOKENS
from .fingerprint import canonical


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
    """used*100 >= window*percent, exactly (161 of 1,000 is at 16.1 %, which float products
    miss: 1000 * 16.1 is 16100.000000000002); never true for an empty window."""
    if window <= 0:
        return False
    if percent != percent or abs(percent) == float("inf"):
        return used * 100 >= window * percent
    num, den = exact_ratio(percent)
    return used * 100 * den >= window * num


def exact_ratio(value: float) -> tuple[int, int]:
    """A finite VALUE as the decimal fraction its shortest form reads (16.1 -> 161/10), so a
    percentage typed as a decimal compares as written."""
    text = repr(float(value))
    if "e" in text:  # an exponent: the binary value itself
        return float(value).as_integer_ratio()
    whole, _, frac = text.partition(".")
    return int(whole + frac), 10 ** len(frac)


def percent_of(used: int, window: int) -> float:
    return round(used * 100 / window, 2) if window > 0 else 0.0
