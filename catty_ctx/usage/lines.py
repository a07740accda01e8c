"""What the per-format parsers share: finding the lines that hold a usage marker, and count fields.

Only lines holding a marker can hold a usage record, so a parser decodes those alone; the
search is one C-level `find` (or regex) over the memory map.
"""
from __future__ import annotations

import orjson

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Iterator

NL = b"\n"


def json_object(line: bytes, off: int, bad: list[tuple[int, str]]) -> dict[str, Any] | None:
    """LINE decoded by the general decoder when it is a JSON object; else None, and why in BAD (at OFF)."""
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        bad.append((off, "not valid JSON"))
        return None
    if type(obj) is not dict:
        bad.append((off, "not a JSON object"))
        return None
    return obj


def lines_with(mm: Any, start: int, end: int, mark: bytes | None = None, pattern: Any = None) -> Iterator[tuple[int, bytes]]:
    """(offset, line) of each complete line in [start, end) holding the marker, found by a C search."""
    find = mm.find
    rfind = mm.rfind
    pos = start
    while pos < end:
        if pattern is not None:
            m = pattern.search(mm, pos, end)
            if m is None:
                return
            i = m.start()
        else:
            i = find(mark, pos, end)
            if i < 0:
                return
        j = rfind(NL, start, i)
        ls = j + 1 if j >= 0 else start
        le = find(NL, i, end)
        if le < 0:
            le = end
        pos = le + 1
        yield ls, mm[ls:le]


def count(v: Any) -> int:
    """A token count as the ledger takes it: a non-negative int, anything else 0."""
    return v if type(v) is int and v >= 0 else 0


def line_number(mm: Any, offset: int) -> int:
    n = 1
    pos = 0
    step = 16 << 20
    while pos < offset:
        stop = min(pos + step, offset)
        n += mm[pos:stop].count(NL)
        pos = stop
    return n
