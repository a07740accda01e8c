"""The user's price tables as the answer cache keys them: their bytes (read, not parsed) and
their digest with the price library's version (docs/usage.md#cost).

Its own module, light to import: a cached answer is looked up with these, before anything is priced.
"""
from __future__ import annotations

import os

import xxhash

from . import library


def user_table() -> str:
    """The user's own price table, read when it exists: $XDG_CONFIG_HOME/catty-ctx/prices.json."""
    base = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return os.path.join(base, "catty-ctx", "prices.json")


def price_files(override: str | os.PathLike[str] | None) -> list[tuple[str, bytes]]:
    """(name, bytes) of the user's price tables: the configured one when it exists, then OVERRIDE
    (read, not parsed: their digest keys the answer cache)."""
    files = []
    configured = user_table()
    try:
        with open(configured, "rb") as f:
            files.append((configured, f.read()))
    except OSError:
        pass
    if override is not None:
        path = os.fspath(override)
        try:
            with open(path, "rb") as f:
                files.append((path, f.read()))
        except OSError as exc:
            from ..errors import UsageError  # (enum's import: not on the cached answer's path)

            raise UsageError(f"{path}: cannot read price table ({exc.strerror})") from None
    return files


def digest_of(files: list[tuple[str, bytes]]) -> str:
    """The digest of FILES (`price_files`) and the installed price library's version."""
    h = xxhash.xxh64(library.version()[1].encode())
    for _name, data in files:
        h.update(data)
    return h.hexdigest()
