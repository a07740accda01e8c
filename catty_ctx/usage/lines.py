"""What the per-format parsers share: the general decoder's reading of a line, count fields, line numbers.

Only lines holding a marker can hold a usage record, so a parser decodes those alone; they are
found by the package's one reader (`jsonl.marked_lines`: one C-level `find`, or regex, over
the memory map).
"""
from __future__ import annotations

import msgspec

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeGuard

NL = b"\n"
# A line msgspec cannot decode: bad JSON, or nesting past its depth limit (a RecursionError).
UNDECODABLE = (msgspec.DecodeError, RecursionError)
# ... and one the typed decoders cannot read as their shape either.
MISMATCH = (*UNDECODABLE, msgspec.ValidationError)


def typed_view(name: str, base: Any = None, **fields: Any) -> Any:
    """The Struct a typed decoder reads a line (or a part of one) into: FIELDS by name and type
    (BASE's too), each None where the line lacks it, every other field skipped unbuilt; not
    GC-tracked (decoded Structs hold no cycles, and tracking a file's worth of them costs collections)."""
    return msgspec.defstruct(name, [(field, kind, None) for field, kind in fields.items()], bases=(base,) if base is not None else None, gc=False)


def decoded_or_none(data: bytes) -> Any:
    """DATA decoded by the general decoder; None when it is not JSON."""
    try:
        return _decode(data)
    except UNDECODABLE:
        return None


def json_object(line: bytes, off: int, bad: list[tuple[int, str]]) -> dict[str, Any] | None:
    """LINE decoded by the general decoder when it is a JSON object; else None, and why in BAD (at OFF).

    msgspec's untyped decoder, not orjson: the scan loads msgspec anyway, and orjson's import
    alone (it loads dataclasses, uuid and more) costs more than a small incremental run's work.
    """
    try:
        obj = _decode(line)
    except UNDECODABLE:
        bad.append((off, "not valid JSON"))
        return None
    if type(obj) is not dict:
        bad.append((off, "not a JSON object"))
        return None
    return obj


_decode = msgspec.json.decode
INT64_END = 1 << 63  # counts are int64, as the typed decoders declare them (and MessagePack can carry)


def whole(v: Any) -> TypeGuard[int]:
    """Whether V is an integer the ledger can hold (an int64)."""
    return type(v) is int and -INT64_END <= v < INT64_END


def count(v: Any) -> int:
    """A token count as the ledger takes it: a non-negative int64, anything else 0."""
    return v if type(v) is int and 0 <= v < INT64_END else 0


def line_number(mm: Any, offset: int) -> int:
    n = 1
    pos = 0
    step = 16 << 20
    while pos < offset:
        stop = min(pos + step, offset)
        n += mm[pos:stop].count(NL)
        pos = stop
    return n
