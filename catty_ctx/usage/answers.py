"""The answer cache: a question asked before about files that have not changed is answered from it.

One file per list of PATHs (marshal: it loads without importing anything) holding the last
ANSWERS_KEPT answers, each under a key made of the question (`question`) and every file's path,
kind, size, mtime and inode (`query_key`), and the folder listings of the last walk (see
`walk.Listings`). Light to import (no enum, typing or re): the entry point looks an answer up
with it before the CLI loads (`warm`), by the same key as the full run (`pipeline`).
"""
from __future__ import annotations

import marshal
import os
import time

import xxhash

from .. import defaults
from .._version import __version__
from .cachefiles import CACHE_VERSION, cache_file, read_bytes, write_cache_file
from .pricefiles import digest_of

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


def question(by: str, timezone_name: str | None, since: str | None, until: str | None, prices: list[tuple[str, bytes]],
             allow_empty: bool, sources: list[tuple[str, str]] | None) -> tuple[Any, ...]:
    """What an answer depends on besides the files: the options (the zone named, else what the
    local one depends on), the price tables' bytes with the library's version (`pricefiles`),
    and the settings a config file changed."""
    return (by, timezone_name or local_zone_key(), since, until, digest_of(prices), allow_empty, sources, configured())


def configured() -> tuple[tuple[str, Any], ...]:
    """The settings the config file changed (none changes an answer today: should one come to, its
    answers are apart)."""
    return tuple((name, getattr(defaults, name)) for name in defaults.TUNABLE if defaults.SOURCES[name] != "default")


def query_key(found: Survey, query: tuple[Any, ...]) -> str:
    """Same files (path, kind, size, mtime, inode), same question, same catty-ctx: same answer (the
    printed forms kept with it follow the version's output)."""
    h = xxhash.xxh3_128(repr((CACHE_VERSION, __version__, query)).encode())
    for arg, files in found:
        h.update(arg.encode("utf-8", "surrogateescape"))
        # (marshal's version 2 writes no back-references: the same rows give the same bytes, in C,
        # a third of the time of a repr of a home's 17,000 rows)
        h.update(marshal.dumps(files, 2))
    return h.hexdigest()


def local_zone_key() -> tuple[Any, ...]:
    """What the local time zone depends on: a change of any of it is a new question."""
    try:
        localtime_mtime = os.stat("/etc/localtime").st_mtime_ns
    except OSError:
        localtime_mtime = 0
    return (os.environ.get("TZ"), time.tzname, time.timezone, time.altzone, localtime_mtime)
