"""Canonical item form and the xxh3-128 prefix chain (docs/spec.md#fingerprints).

Unlike grok-build's prefix hash (type + text only, per-process seed: docs/design.md#w1), every
field of an item counts and the digest is stable across processes and languages, so it can
key persistent caches.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

import orjson
import xxhash

SEED_LABEL = b"catty-ctx/v1"
_OPTS = orjson.OPT_SORT_KEYS
_h = xxhash.xxh3_128_digest


def canonical(item: Any) -> bytes:
    """Keys sorted at every level, no whitespace, UTF-8 with non-ASCII unescaped."""
    return orjson.dumps(item, option=_OPTS)


def seed() -> bytes:
    """fp[0], the 16-byte digest every chain starts from."""
    return _h(SEED_LABEL)


def extend(prev: bytes, canon: bytes) -> bytes:
    """fp[i] = xxh3_128(fp[i-1] || canonical(item i))."""
    return _h(prev + canon)


class Chain:
    """A running prefix fingerprint; extending it costs O(new items)."""

    __slots__ = ("digest", "length")

    def __init__(self) -> None:
        self.digest = seed()
        self.length = 0

    def add(self, item: Any) -> bytes:
        return self.add_canonical(canonical(item))

    def add_canonical(self, canon: bytes) -> bytes:
        self.digest = _h(self.digest + canon)
        self.length += 1
        return self.digest

    @property
    def hex(self) -> str:
        return self.digest.hex()


def prefix_fp(items: Iterable[Any]) -> str:
    """Hex fingerprint of a whole prefix of items (fp[n])."""
    chain = Chain()
    for item in items:
        chain.add(item)
    return chain.hex


def chain_hex(items: Iterable[Any]) -> Iterator[str]:
    """fp[1..n] in hex, one per item."""
    chain = Chain()
    for item in items:
        yield chain.add(item).hex()
