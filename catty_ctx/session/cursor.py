"""The one cursor over a file that only grows (docs/architecture.md#session): how far a reader
got into a log it reads again later, and whether it may go on from there.

A `Cursor` names the file (device and inode), the offset read to (the end of the last complete
line: a line still being written waits for the next read) and the xxh3 fingerprints of the
file's first WINDOW bytes and of the WINDOW bytes before the offset. `look` tells a file seen
before: unchanged, grown (read on from the offset), or new (another file, cut back, or changed
before the offset: read from the start). `Reading.advance` gives the cursor once the new bytes
are read, reading none of the bytes before the offset again. The hook's transcript mirror, the
status line's tally and the usage scan's per-file cache all keep this cursor.

Only `os` and xxhash are imported: the status line and the hooks load this module.
"""
from __future__ import annotations

import xxhash

TYPE_CHECKING = False
if TYPE_CHECKING:
    import os
    from collections.abc import Callable
    from typing import Any

    Read = Callable[[int, int], bytes]  # (start, length) -> the file's bytes there

WINDOW = 4096  # bytes of each fingerprint window
UNCHANGED, GROWN, NEW = "unchanged", "grown", "new"


def _digest(data: bytes) -> int:
    return xxhash.xxh3_64_intdigest(data)


class Cursor:
    """A file read to OFFSET: its device and inode, and the fingerprints of its first bytes (HEAD)
    and of the bytes before the offset (TAIL), each over min(WINDOW, OFFSET) bytes."""

    __slots__ = ("dev", "head", "ino", "offset", "tail")

    def __init__(self, dev: int, ino: int, offset: int, head: int, tail: int) -> None:
        self.dev, self.ino, self.offset, self.head, self.tail = dev, ino, offset, head, tail

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cursor) and self.fields() == other.fields()

    def __hash__(self) -> int:
        return hash(self.fields())

    def __repr__(self) -> str:
        return f"Cursor(dev={self.dev}, ino={self.ino}, offset={self.offset}, head={self.head:#x}, tail={self.tail:#x})"

    def fields(self) -> tuple[int, int, int, int, int]:
        """(dev, ino, offset, head, tail): the form a binary cache keeps."""
        return self.dev, self.ino, self.offset, self.head, self.tail

    def as_json(self) -> dict[str, Any]:
        """The keys a JSON state file keeps (beside its own): each fingerprint as [bytes it covers,
        digest], so a cursor written with another window never matches."""
        n = min(WINDOW, self.offset)
        return {"dev": self.dev, "inode": self.ino, "offset": self.offset, "head": [n, self.head], "tail": [n, self.tail]}

    @classmethod
    def from_json(cls, doc: Any) -> Cursor | None:
        """The cursor `as_json` wrote into DOC (other keys ignored); None when DOC holds none or one of another window."""
        if not isinstance(doc, dict):
            return None
        dev, ino, offset, head, tail = (doc.get(k) for k in ("dev", "inode", "offset", "head", "tail"))
        if not (type(dev) is int and type(ino) is int and type(offset) is int and offset >= 0):
            return None
        n = min(WINDOW, offset)
        digests = [fp[1] for fp in (head, tail) if isinstance(fp, list) and len(fp) == 2 and fp[0] == n and type(fp[1]) is int]
        return cls(dev, ino, offset, *digests) if len(digests) == 2 else None


def may_resume(ino: int, offset: int, now_ino: int, now_size: int) -> bool:
    """Whether a file read to OFFSET when its inode was INO may have only grown, told by its stat
    alone (NOW_INO, NOW_SIZE): the same inode, not shorter than the offset. (The device is
    compared by `look`, which has the file's stat.)"""
    return ino == now_ino and 0 <= offset <= now_size


class Reading:
    """A file seen against its cursor: the VERDICT (UNCHANGED, GROWN or NEW), where to read from
    (START: the cursor's offset, or 0), and the fingerprint windows before START, kept so that
    `advance` reads none of those bytes again."""

    __slots__ = ("dev", "head", "ino", "start", "tail", "verdict")

    def __init__(self, verdict: str, start: int, dev: int, ino: int, head: bytes = b"", tail: bytes = b"") -> None:
        self.verdict, self.start, self.dev, self.ino, self.head, self.tail = verdict, start, dev, ino, head, tail

    def advance(self, end: int, read: Read) -> Cursor:
        """The cursor of the file read to END (from START on; END >= START). READ is asked only
        for bytes from START on: the windows before it are the ones `look` read."""
        start, head, tail = self.start, self.head, self.tail
        if len(head) < WINDOW and end > start:  # (a short head is the whole of [0, START))
            head += _read(read, start, min(WINDOW, end) - start)
        tail_from = max(0, end - WINDOW)
        if tail_from >= start:
            tail = _read(read, tail_from, end - tail_from)
        else:
            tail = tail[len(tail) - (start - tail_from):] + _read(read, start, end - start)
        return Cursor(self.dev, self.ino, end, _digest(head), _digest(tail))


def _read(read: Read, start: int, length: int) -> bytes:
    return read(start, length) if length > 0 else b""


def look(cursor: Cursor | None, st: os.stat_result, read: Read) -> Reading:
    """The file whose stat is ST (READ reads its bytes) against CURSOR, the one kept from the
    last read (None: none). Grown or unchanged when it is the same file (device and inode), not
    shorter than the offset, and both fingerprint windows still hold the same bytes; new
    otherwise (another file at the path, cut back, or rewritten before the offset: read it all)."""
    if cursor is None or cursor.dev != st.st_dev or not may_resume(cursor.ino, cursor.offset, st.st_ino, st.st_size):
        return Reading(NEW, 0, st.st_dev, st.st_ino)
    offset = cursor.offset
    head = _read(read, 0, min(WINDOW, offset))
    tail = head if offset <= WINDOW else _read(read, offset - WINDOW, WINDOW)
    if _digest(head) != cursor.head or _digest(tail) != cursor.tail:
        return Reading(NEW, 0, st.st_dev, st.st_ino)
    return Reading(UNCHANGED if offset == st.st_size else GROWN, offset, st.st_dev, st.st_ino, head, tail)


def line_end(data: Any, start: int, end: int) -> int:
    """Where the complete lines of DATA[START:END] end (a bytes-like object, a memory map): past
    the last newline, START when none ended (a line still being written waits for the next read)."""
    return data.rfind(b"\n", start, end) + 1 or start
