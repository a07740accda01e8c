"""The answer cache: a question asked before about files that have not changed is answered from it.

One file per list of PATHs (marshal: it loads without importing anything) holding the last
ANSWERS_KEPT answers, each under a key made of the question and every file's path, size,
mtime and inode, and the folder listings of the last walk (see `walk.Listings`).
"""
from __future__ import annotations

import marshal
import os
import time
from array import array

import xxhash

from .._version import __version__
from .cachefiles import CACHE_VERSION, cache_file, read_bytes, write_cache_file

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any

    from .walk import Survey

ANSWERS_KEPT = 16


def answers_path(paths: Sequence[str | os.PathLike[str]]) -> str:
    return cache_file("usage-answers", "\0".join(os.path.abspath(os.fspath(p)) for p in paths))


def read_answers(path: str) -> dict[str, Any]:
    """{"answers": {query key: answer}, "dirs": folder listings}, or {} when missing or unreadable."""
    data = read_bytes(path)
    if data is None:
        return {}
    try:
        doc = marshal.loads(data)
    except (EOFError, ValueError, TypeError):
        return {}
    return doc if type(doc) is dict else {}


def write_answers(path: str, answers: dict[str, Any], dirs: dict[str, Any]) -> None:
    while len(answers) > ANSWERS_KEPT:
        answers.pop(next(iter(answers)))
    write_cache_file(path, marshal.dumps({"answers": answers, "dirs": dirs}))


def query_key(found: Survey, query: tuple[Any, ...]) -> str:
    """Same files (path, size, mtime, inode), same question, same catty-ctx: same answer (the
    printed forms kept with it follow the version's output)."""
    h = xxhash.xxh3_128(repr((CACHE_VERSION, __version__, query)).encode())
    for arg, files in found:
        h.update(arg.encode("utf-8", "surrogateescape"))
        for part in _survey_parts(files):
            h.update(part)
    return h.hexdigest()


def _survey_parts(files: list[tuple[str, str | None, int, int, int]]) -> list[bytes]:
    """FILES (path, kind, size, mtime, inode) as bytes to hash, column by column in C: the repr of
    a home's 17,000 rows took a first run 40-80 ms, this a third of it. (Their repr when a number does not fit 64 bits.)"""
    if not files:
        return [b"[]"]
    paths, kinds, sizes, mtimes, inodes = zip(*files)
    try:
        numbers = [array("q", sizes).tobytes(), array("q", mtimes).tobytes(), array("Q", inodes).tobytes()]
    except OverflowError:
        return [repr(files).encode("utf-8", "surrogateescape")]
    return [len(files).to_bytes(8, "little"), *numbers, "\0".join(paths).encode("utf-8", "surrogateescape"),  # (a path holds no NUL)
            b"\0\0", "\0".join(map(str, kinds)).encode()]


def local_zone_key() -> tuple[Any, ...]:
    """What the local time zone depends on: a change of any of it is a new question."""
    try:
        localtime_mtime = os.stat("/etc/localtime").st_mtime_ns
    except OSError:
        localtime_mtime = 0
    return (os.environ.get("TZ"), time.tzname, time.timezone, time.altzone, localtime_mtime)
