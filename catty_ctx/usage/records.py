"""The usage ledger's records: one provider call (`Record`) and what the scan keeps per file (`FileEntry`).

Both are msgspec Structs: made in C, and written to the per-file cache and handed back by a
worker as MessagePack arrays, decoded straight into the types again.
"""
from __future__ import annotations

from typing import Any

import msgspec

MAIN_AGENT = "main"
UNKNOWN_MODEL = "unknown"


class Record(msgspec.Struct, array_like=True, gc=False):
    """One provider call as a log recorded it."""

    ts: float  # epoch seconds
    model: str
    input: int  # uncached input tokens
    output: int
    cache_read: int
    cache_write: int
    reasoning: int
    cost: float | None  # the cost the log reported, if any
    key: str | None  # copies of one call share it (see ledger.collapse)
    sidechain: bool
    agent: str
    session: str
    project: str
    incomplete: bool
    msg_id: str | None
    uuid: str | None


class FileEntry(msgspec.Struct, array_like=True):
    """One log as scanned: its key (size, mtime, inode), where parsing stopped (after the last
    complete line) and hashes of the first and last bytes before that point (with the inode and
    DEV: the file cursor, `session.cursor`), the parser's state, the records, and the bad lines (a
    count, the first few as (line, why), a torn tail's line)."""

    size: int
    mtime: int
    ino: int
    kind: str | None
    off: int = 0
    head: int = 0
    tail: int = 0
    state: Any = None
    recs: list[Record] = []
    read: int = 0
    bad: int = 0
    samples: list[tuple[int, str]] = []
    torn: int = 0
    aliases: list[tuple[str, str, str | None, int]] = []  # the dropped copies' keys and uuid pairs (see copies.collapse_file)
    dev: int = 0


# What a scan of one file gives: (path, entry or None, bytes parsed, error or None).
Scanned = tuple[str, FileEntry | None, int, str | None]
ENCODE = msgspec.msgpack.Encoder().encode
DECODE_ENTRY = msgspec.msgpack.Decoder(FileEntry).decode
# A worker's answer for one file: Scanned with the entry as its own MessagePack, which the
# per-file cache then stores as it came instead of encoding the entry again.
Packed = tuple[str, bytes | None, int, str | None]
DECODE_PACKED_ITEM = msgspec.msgpack.Decoder(tuple[int, list[Packed]]).decode
DECODE_SCANNED = msgspec.msgpack.Decoder(Scanned).decode
# The kept ledger's deduped calls (`kept`): the generations of the caches they came from, and the calls.
DECODE_CALLS = msgspec.msgpack.Decoder(tuple[list[int], list[Record]]).decode
