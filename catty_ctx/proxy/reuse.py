"""The previous request's parse, reused (docs/proxy.md#speed).

An agent's request repeats its whole history and adds a turn, so most of each request was
read as items, and fingerprinted, one request before. The proxy keeps the last requests'
native message lists with their items, the parser's state before each message and the
fingerprint chain; a new request is compared with them in C (list equality of the decoded
messages), and only the messages after the longest common prefix are read and
fingerprinted again. The reuse changes no result: the items and digests are those a full
parse would give (tests/proxy/test_reuse.py compares them on every family).
"""
from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from .families import Parsed
from .recorder import chain

KEEP = 32  # conversations remembered (least recently used dropped) ...
KEEP_BYTES = 16 << 20  # ... and the request bodies they came from at most this long in all (decoded, ~5x that)
GUESSES = (0, 2, 8, 32)  # how far before the shorter list's end a client's changes usually start


@dataclass
class Known:
    """One earlier request: its native messages, the head its items depend on, its parse and chain."""

    messages: list[Any]
    head: Any
    parsed: Parsed
    digests: list[bytes]
    size: int  # bytes of the request body


def common_len(a: list[Any], b: list[Any]) -> int:
    """How many leading elements A and B share. A request usually repeats the one before up to
    its last few messages (where the client moved its cache breakpoint): a few C comparisons
    near the end find the cut, a binary search does otherwise."""
    n = min(len(a), len(b))
    lo = 0
    for back in GUESSES:
        m = n - back
        if m <= 0:
            break
        if a[:m] == b[:m]:
            lo = m
            break
    else:
        hi = n
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if a[:mid] == b[:mid]:
                lo = mid
            else:
                hi = mid - 1
        return lo
    while lo < n and a[lo] == b[lo]:
        lo += 1
    return lo


class ParseCache:
    """The last requests' parses; `parse` reads a body as its family does, reusing one of them."""

    def __init__(self) -> None:
        self.known: OrderedDict[int, Known] = OrderedDict()
        self.reused = 0  # messages taken from an earlier parse
        self.size = 0  # bytes of the bodies remembered

    def parse(self, fam: Any, body: dict[str, Any], size: int = 0) -> tuple[Parsed, list[bytes]]:
        """(BODY's items as FAM reads them, their fingerprint chain); SIZE: the body's bytes."""
        head = fam.head(body)
        msgs = body.get(fam.list_key)
        if not isinstance(msgs, list) or not msgs:
            parsed = fam.parse(body)
            return parsed, chain(parsed.items)
        best: tuple[int, int, Known] | None = None
        for key, k in self.known.items():
            if k.head == head and k.messages[0] == msgs[0]:
                n = common_len(k.messages, msgs)
                if best is None or n > best[0]:
                    best = (n, key, k)
        if best is None or best[0] == 0:
            parsed = fam.parse(body)
            digests = chain(parsed.items)
        else:
            n, key, k = best
            self.size -= self.known.pop(key).size
            parsed, fresh = fam.parse_from(body, k.parsed, n)
            digests = chain(parsed.items, k.digests, fresh)
            self.reused += n
        self.known[id(parsed)] = Known(list(msgs), head, parsed, digests, size)
        self.size += size
        while len(self.known) > 1 and (len(self.known) > KEEP or self.size > KEEP_BYTES):
            self.size -= self.known.popitem(last=False)[1].size
        return parsed, digests
