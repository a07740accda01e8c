"""Whole-file writes: temp beside the target, fsync, rename, fsync the folder.

Kept apart from the store, importing only `os`, so a quick path (the usage ledger's caches)
can write files the same way without loading the store and `tempfile`.
"""
from __future__ import annotations

import os

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Union

    PathArg = Union[str, "os.PathLike[str]"]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _temp_beside(path: str) -> tuple[int, str]:
    """A new private file `.NAME.<random>.tmp` beside PATH (a ROOT walk skips such names)."""
    folder, name = os.path.split(path)
    while True:
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue


def replace_file(path: PathArg, data: bytes, *, durable: bool = True) -> None:
    """temp + fsync + rename, then fsync the folder: a reader sees the old file or the new.

    `durable=False` skips both fsyncs, for caches whose loss in a crash only costs time.
    """
    target = os.fspath(path)
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if durable:
        fsync_dir(os.path.dirname(target) or ".")


def fsync_dir(path: PathArg) -> None:
    """Make a folder's entries (a rename, a new file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
