"""Where the usage caches live and how a cache file is written: $XDG_CACHE_HOME/catty-ctx, temp + rename.

A cache is only ever a shortcut: one that is missing or unreadable reads as empty, one that
cannot be written costs speed next time, never the result.
"""
from __future__ import annotations

import os
import sys

import xxhash

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

CACHE_VERSION = 13  # bump when a record's shape or a parser's meaning changes


def index_file(paths_key: str) -> str:
    """The kept index of the caches of PATHS_KEY (`kept`): without it nothing is kept of them."""
    return cache_file("usage-index", paths_key)


def cache_base() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "catty-ctx")


def cache_dir() -> Path:
    """Where the per-file and answer caches live: $XDG_CACHE_HOME/catty-ctx."""
    from pathlib import Path

    return Path(cache_base())


def cache_file(kind: str, key: str) -> str:
    """The cache file of KIND for KEY (the paths asked about)."""
    tag = f"{sys.version_info[0]}{sys.version_info[1]}"  # marshal's format follows the interpreter
    return os.path.join(cache_base(), f"{kind}-v{CACHE_VERSION}-py{tag}-{xxhash.xxh64_hexdigest(key.encode('utf-8', 'surrogateescape'))}.bin")


def read_bytes(path: str) -> bytes | None:
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError:
        return None


def write_cache_file(path: str, data: bytes | list[bytes | memoryview]) -> None:
    """temp + rename, without fsync: a cache lost in a crash is only read as empty next time.

    DATA may come in parts, written with writev (no joined copy of megabytes first)."""
    from ..session.files import replace_file, write_file

    os.makedirs(os.path.dirname(path), exist_ok=True)
    if not isinstance(data, list):
        replace_file(path, data, durable=False)
        return

    def fill(f: Any) -> None:
        fd = f.fileno()
        for i in range(0, len(data), _IOV):
            chunk = data[i : i + _IOV]
            done = os.writev(fd, chunk)
            if done < sum(len(b) for b in chunk):  # (short write: the rest the slow way)
                rest = b"".join(chunk)[done:]
                while rest:
                    rest = rest[os.write(fd, rest) :]

    write_file(path, fill, durable=False)


_IOV = 512  # parts per writev (within every system's IOV_MAX)
