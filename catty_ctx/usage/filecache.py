"""The per-file cache of the usage scan: one file per PATH holding each log's `FileEntry` as
MessagePack, and a small delta file beside it for the entries a run after an append rewrote.

A file is the length of its head, the head (the PATH, the generations, the paths and the length
of each entry), then the entries one after the other: an entry is decoded only when it is used,
one can be read alone (`entries_of`), and one not used is written back as it was. A generation
(random, never 0) names each write, so the kept ledger (`kept`) can tell whether the caches are
still those it was folded from.
"""
from __future__ import annotations

import os
import threading

import msgspec

from .cachefiles import cache_file, read_bytes, write_cache_file
from .records import ENCODE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def pack(arg: str, base: int, gen: int, files: dict[str, Any]) -> list[bytes | memoryview]:
    """A per-file cache file, in parts: the length of its head, the head (ARG, the generations,
    the paths and the length of each entry), then each entry's MessagePack one after the other,
    so that an entry is decoded only when it is used and one not used is written back as it was."""
    parts = [v if type(v) is memoryview or type(v) is bytes else ENCODE(v) for v in files.values()]
    head = ENCODE((arg, base, gen, list(files), [len(b) for b in parts]))
    return [len(head).to_bytes(8, "little"), head, *parts]


def head_of(arg: str, data: bytes) -> tuple[int, int, list[str], list[int]] | None:
    """(base generation, generation, paths, entry lengths) of a head `pack` wrote for ARG; None when it is not one."""
    try:
        got_arg, base, gen, paths, lengths = msgspec.msgpack.decode(data, type=tuple[str, int, int, list[str], list[int]])
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if got_arg != arg or len(paths) != len(lengths):
        return None
    return base, gen, paths, lengths


def unpack(arg: str, data: bytes | None) -> tuple[int, int, dict[str, memoryview]] | None:
    """(base generation, generation, {path: entry's MessagePack}) of a file `pack` wrote for ARG; None when it is not one."""
    if data is None or len(data) < 8:
        return None
    n = int.from_bytes(data[:8], "little")
    got = head_of(arg, data[8 : 8 + n])
    if got is None:
        return None
    base, gen, paths, lengths = got
    if 8 + n + sum(lengths) != len(data):
        return None
    view = memoryview(data)
    files = {}
    pos = 8 + n
    for path, length in zip(paths, lengths):
        files[path] = view[pos : pos + length]
        pos += length
    return base, gen, files


def entries_of(arg: str, wanted: set[str]) -> tuple[int, dict[str, bytes | memoryview]] | None:
    """(generation, {path: entry's MessagePack}) of the base cache file of ARG for the paths in
    WANTED alone: its head and those entries are read, not the whole file (megabytes for a
    large tree, when a run after an append needs one entry). None when missing or not one."""
    try:
        with open(cache_file("usage", arg), "rb") as f:
            n = int.from_bytes(f.read(8), "little")
            got = head_of(arg, f.read(n))
            if got is None:
                return None
            base, gen, paths, lengths = got
            if base != gen or 8 + n + sum(lengths) != os.fstat(f.fileno()).st_size:
                return None
            files: dict[str, bytes | memoryview] = {}
            pos = 8 + n
            for path, length in zip(paths, lengths):
                if path in wanted:
                    files[path] = os.pread(f.fileno(), length, pos)
                pos += length
            return gen, files
    except (OSError, ValueError):
        return None


def read_cache(arg: str) -> tuple[int, int, dict[str, Any], dict[str, Any]]:
    """The per-file cache of ARG: (its base file's generation, its generation, {path: entry as
    undecoded MessagePack}, the entries of its delta file). All zero and empty when missing,
    unreadable or another PATH's.

    An entry is decoded (`DECODE_ENTRY`) only when it is used. The delta file holds the entries
    a run after logs only grew rewrote (see `grown`), so that such a run writes those alone; it
    counts only beside the base file it was made for.
    """
    got = unpack(arg, read_bytes(cache_file("usage", arg)))
    if got is None:
        return 0, 0, {}, {}
    _, gen, files = got
    delta = unpack(arg, read_bytes(cache_file("usage-delta", arg)))
    if delta is not None and delta[0] == gen:
        files.update(delta[2])
        return gen, delta[1], files, delta[2]
    return gen, gen, files, {}


def load_cache(arg: str) -> tuple[int, dict[str, Any]]:
    """The per-file cache of ARG: its generation and {path: entry as undecoded MessagePack}."""
    _base, gen, files, _delta = read_cache(arg)
    return gen, files


def read_entries(arg: str, wanted: set[str]) -> tuple[int, int, dict[str, Any], dict[str, Any]] | None:
    """`read_cache` for the entries of WANTED alone (the delta file, small, is read whole);
    None when there is no cache for ARG."""
    got = entries_of(arg, wanted)
    if got is None:
        return None
    gen, files = got
    delta = unpack(arg, read_bytes(cache_file("usage-delta", arg)))
    if delta is not None and delta[0] == gen:
        files.update((p, e) for p, e in delta[2].items() if p in wanted)
        return gen, delta[1], files, delta[2]
    return gen, gen, files, {}


def new_generation() -> int:
    return int.from_bytes(os.urandom(8), "little") | 1  # (never 0, which means "no cache")


def save_cache(arg: str, files: dict[str, Any]) -> tuple[int, str | None]:
    """Write the per-file cache under a new generation: (that generation, or 0 and a warning).
    A failure costs speed next time, never the result."""
    gen = new_generation()
    warning = write_base(arg, gen, files)
    return (0, warning) if warning else (gen, None)


def write_base(arg: str, gen: int, files: dict[str, Any]) -> str | None:
    """Write FILES as the per-file cache of ARG, generation GEN; a warning when it could not be."""
    try:
        write_cache_file(cache_file("usage", arg), pack(arg, gen, gen, files))
    except Exception as exc:
        return f"usage cache not written: {exc}"
    try:
        os.unlink(cache_file("usage-delta", arg))  # (of another base: would be ignored anyway)
    except OSError:
        pass
    return None


class Writing:
    """The per-file caches of PATHs being written by one thread, while the caller dedupes and folds
    (the write, megabytes for a large tree, is mostly system time, which holds no lock). One thread
    for all: each start waits for the GIL that the threads already writing hold between their writes."""

    def __init__(self, jobs: list[tuple[int, str, int, dict[str, Any]]]) -> None:
        self.warnings: list[tuple[int, str]] = []  # (the job's index, why its cache was not written)
        self.thread = threading.Thread(target=self._run, args=(jobs,), name="catty-ctx-cache")
        self.thread.start()

    def _run(self, jobs: list[tuple[int, str, int, dict[str, Any]]]) -> None:
        for i, arg, gen, files in jobs:
            warning = write_base(arg, gen, files)
            if warning:
                self.warnings.append((i, warning))


DELTA_MAX_BYTES = 1 << 20  # a larger delta is merged into the base file instead


def save_delta(arg: str, base: int, delta: dict[str, Any]) -> tuple[int, str | None]:
    """Write DELTA (the entries rewritten since the base file of generation BASE) under a new
    generation; past DELTA_MAX_BYTES, every entry (the base file's, DELTA's over them) to the base file instead."""
    gen = new_generation()
    data = pack(arg, base, gen, delta)
    if sum(len(b) for b in data) > DELTA_MAX_BYTES:
        got = unpack(arg, read_bytes(cache_file("usage", arg)))
        if got is None or got[1] != base:
            return 0, None  # (the base file changed meanwhile: the next run reads in full)
        return save_cache(arg, {**got[2], **delta})
    try:
        write_cache_file(cache_file("usage-delta", arg), data)
    except Exception as exc:
        return 0, f"usage cache not written: {exc}"
    return gen, None
