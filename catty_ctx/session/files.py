"""Whole-file writes: temp beside the target, fsync, rename, fsync the folder. Every command
that replaces a file goes through `replace_file` (or `write_file`, which streams).

Kept apart from the store, importing only `errno`, `os`, `re` and `stat`, so a quick path (the usage ledger's caches)
can write files the same way without loading the store and `tempfile`.
"""
from __future__ import annotations

import errno
import os
import re
import stat

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import IO

    PathArg = str | os.PathLike[str]

_TEMP_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _temp_beside(path: str) -> tuple[int, str]:
    """A new private file `.NAME.<random>-<pid>.tmp` beside PATH (a ROOT walk skips such names;
    the pid tells `clear_dead_temps` whether its writer still runs)."""
    folder, name = os.path.split(path)
    while True:
        tmp = os.path.join(folder, f".{name}.{os.urandom(6).hex()}-{os.getpid()}.tmp")
        try:
            return os.open(tmp, _TEMP_FLAGS, 0o600), tmp
        except FileExistsError:
            continue


_umask: int | None = None


def umask() -> int:
    """The process's umask, read once (from /proc where it can be read without changing it:
    setting and restoring it would race with a thread creating a file meanwhile)."""
    global _umask
    if _umask is None:
        try:
            with open("/proc/self/status", "rb") as f:
                for line in f:
                    if line.startswith(b"Umask:"):
                        _umask = int(line.split()[1], 8)
                        break
        except (OSError, ValueError, IndexError):
            pass
        if _umask is None:
            _umask = os.umask(0o022)
            os.umask(_umask)
    return _umask


# Modes of what a command creates, before the umask: every file alike (log, summary.json,
# blobs, segments, quarantine), every folder alike (session, blobs/, staging).
FILE_MODE = 0o666
DIR_MODE = 0o777


def new_file_mode() -> int:
    return FILE_MODE & ~umask()


def new_dir_mode() -> int:
    return DIR_MODE & ~umask()


def _mode_for(target: str) -> int:
    """A rewrite keeps the file's mode; a new file gets the umask's, as the log does."""
    try:
        st = os.stat(target, follow_symlinks=False)
    except OSError:
        return new_file_mode()
    return st.st_mode & 0o7777 if stat.S_ISREG(st.st_mode) else new_file_mode()


def replace_file(path: PathArg, data: bytes, *, durable: bool = True) -> None:
    """temp + fsync + rename, then fsync the folder: a reader sees the old file or the new.

    The temp file is private while it is written and takes its final mode before the
    rename. `durable=False` skips both fsyncs, for caches whose loss in a crash only costs time.
    """
    write_file(path, lambda f: f.write(data), durable=durable)


def check_replaceable(path: PathArg) -> None:
    """Raise the OSError a `replace_file` of PATH would meet (its folder not writable, a
    folder or other non-file in its place), without changing PATH: for a command that must
    know before it commits elsewhere that this rewrite will follow."""
    target = os.fspath(path)
    try:
        st = os.stat(target, follow_symlinks=False)
    except FileNotFoundError:
        pass
    else:
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EISDIR if stat.S_ISDIR(st.st_mode) else errno.EINVAL,
                          "Is a directory" if stat.S_ISDIR(st.st_mode) else "not a regular file")
    fd, tmp = _temp_beside(target)
    os.close(fd)
    os.unlink(tmp)


def write_file(path: PathArg, fill: Callable[[IO[bytes]], object], *, durable: bool = True) -> None:
    """`replace_file` for content too large to hold: FILL writes it into the temp file, which
    then replaces PATH (a rewrite keeps PATH's mode). Nothing is left behind when FILL raises."""
    target = os.fspath(path)
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _mode_for(target))
            fill(f)
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


def filled(f: IO[bytes], fill: Callable[[IO[bytes]], object]) -> IO[bytes]:
    """F once FILL(F) has run on it (writing or checking its content), rewound for its reader;
    closed, and FILL's error raised, when FILL fails."""
    try:
        fill(f)
        f.seek(0)
    except BaseException:
        f.close()
        raise
    return f


def stage_file(path: PathArg, data: bytes) -> str:
    """The first half of `replace_file`: DATA written and fsynced into a temp file beside
    PATH, whose name is returned for `commit_staged` (or `discard_staged`). A writer that must
    change two files stages the second before it commits the first, so a full disk refuses
    the whole change instead of leaving the second stale."""
    target = os.fspath(path)
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), _mode_for(target))
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
    except BaseException:
        discard_staged(tmp)
        raise
    return tmp


def commit_staged(tmp: str, path: PathArg) -> None:
    """Rename a `stage_file` temp over PATH and make the rename durable."""
    target = os.fspath(path)
    try:
        os.replace(tmp, target)
    except BaseException:
        discard_staged(tmp)
        raise
    fsync_dir(os.path.dirname(target) or ".")


def discard_staged(tmp: str) -> None:
    try:
        os.unlink(tmp)
    except FileNotFoundError:
        pass


def create_exclusive(path: PathArg, data: bytes, *, durable: bool = False, mode: int | None = None) -> bool:
    """Create PATH holding DATA unless it exists: False when another process got there first.

    The bytes are written to a temp file and hard-linked into place, so the name never shows
    a half-written file and of two callers at once exactly one wins (a marker both can claim).
    DURABLE: the file and then its folder are fsynced (a new session file that must survive a
    crash), not only written (a marker). MODE: the file's mode (default: a new file's).
    """
    target = os.fspath(path)
    fd, tmp = _temp_beside(target)
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), new_file_mode() if mode is None else mode)
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        try:
            os.link(tmp, target)
        except FileExistsError:
            return False
    finally:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
    if durable:
        fsync_dir(os.path.dirname(target) or ".")
    return True


def clear_dead_temps(folder: PathArg) -> int:
    """Remove the temp files (`_temp_beside`) in FOLDER whose writer no longer runs (a process
    killed between creating and renaming one); a live writer's are left. Returns how many."""
    pattern = re.compile(r"\..+\.[0-9a-f]{12}-(\d+)\.tmp")
    removed = 0
    try:
        names = os.listdir(folder)
    except OSError:
        return 0
    for name in names:
        m = pattern.fullmatch(name)
        if m is None or int(m.group(1)) == os.getpid():
            continue
        try:
            os.kill(int(m.group(1)), 0)
            continue  # its writer runs (or is another user's): not ours to remove
        except ProcessLookupError:
            pass
        except (OSError, OverflowError):
            continue
        try:
            os.unlink(os.path.join(folder, name))
            removed += 1
        except OSError:
            pass
    return removed


def fsync_dir(path: PathArg) -> None:
    """Make a folder's entries (a rename, a new file) durable."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
