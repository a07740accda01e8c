"""A batch written to the log whole or not at all, a kill -9 inside its write included
(docs/reliability.md#atomic-appends, docs/spec.md#events).

`write_batch` puts a batch at the log's end and cuts back a write it outlives short (a full
disk). A writer killed inside the write cannot cut anything back: Linux ends a write(2) to a
regular file at a fatal signal between pages (or folios, whose bounds are page bounds),
leaving the batch's first whole lines and then a torn one. A batch within one page of the log
is copied in one step, so it lands whole or not at all; one that crosses a page boundary is
`marked`: its start and expected end are recorded in `updates.jsonl.batch` (beside the log)
before the write, under the session lock, and the record is removed after it. The next writer,
as it takes the lock (`settle`, before it reads anything), finds a record the log does not
match (the log ends between the batch's start and its end): the bytes from the start are moved
to quarantine (copied, indexed, then cut off, as a torn tail is) and the log is cut back to
where the batch began. A record the log matches (the batch whole, or none of it) is dropped.

The record is not fsynced and not written through temp + rename: it guards against a killed
process, whose writes the page cache keeps, and it is written whole before the batch's first
byte (a kill before or while it is written leaves a log that ends at the batch's start: an
empty or unreadable record, dropped). A small batch inside one page pays no side write.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

import orjson

from ..errors import DataError, WriteError
from .jsonl import Warn, read_last_line

MARK_SUFFIX = ".batch"
CUT_REASON = "a batch cut short by a killed writer (its write ended between pages)"
_FLAGS = os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)  # never a link, never a FIFO's wait


def _page_size() -> int:
    try:
        return max(os.sysconf("SC_PAGE_SIZE"), 1)
    except (AttributeError, ValueError, OSError):
        return 4096


PAGE = _page_size()


class Log(Protocol):
    """What `settle` needs of a session (`store.Session`, which imports this module)."""

    log_path: Path
    display: str

    def quarantine_tail(self, offset: int, size: int, *, reason: str) -> Path: ...


def mark_path(log_path: Path) -> Path:
    return log_path.with_name(log_path.name + MARK_SUFFIX)


def splittable(start: int, length: int) -> bool:
    """Whether a write of LENGTH bytes at offset START crosses a page boundary (a kill may end it there)."""
    return length > 0 and start // PAGE != (start + length - 1) // PAGE


@contextmanager
def marked(log_path: Path, fd: int, start: int, length: int) -> Iterator[None]:
    """Around the write of a batch of LENGTH bytes at START of the log (open as FD): the
    batch's span recorded first when a kill could split it, removed once the write is done.
    A write that raises leaves the record: `settle` finds the log cut back, or cuts it back."""
    if not splittable(start, length):
        yield
        return
    path = mark_path(log_path)
    st = os.fstat(fd)
    record = orjson.dumps({"start": start, "end": start + length, "inode": st.st_ino}) + b"\n"
    try:
        out = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _FLAGS, stat.S_IMODE(st.st_mode))
    except OSError as exc:
        why = "is a symbolic link or not a regular file" if exc.errno in (errno.ELOOP, errno.ENXIO) else f"cannot write ({exc.strerror})"
        raise WriteError(f"{path}: {why}; nothing appended") from None
    try:
        if not stat.S_ISREG(os.fstat(out).st_mode) or os.write(out, record) != len(record):
            raise WriteError(f"{path}: not a regular file or a short write; nothing appended")
    except OSError as exc:
        raise WriteError(f"{path}: cannot write ({exc.strerror}); nothing appended") from None
    finally:
        os.close(out)
    yield
    _drop(path)


def cut_span(log_path: Path) -> tuple[int, int] | None:
    """The span [start, size) of the log that a killed writer's batch left cut short, read
    from its record (None: no record, or the log matches it). Reads only."""
    found = _read_mark(mark_path(log_path))
    return _cut(log_path, found) if found is not None else None


def settle(session: Log, warn: Warn | None) -> Path | None:
    """Under the lock, before anything reads the log: a batch a killed writer left cut short
    moved to quarantine and the log cut back to its start; the record dropped either way.
    Returns the quarantined file (None: nothing to settle)."""
    path = f"{session.log_path}{MARK_SUFFIX}"  # (as `mark_path`; every lock pays this look: kept to one call)
    if not os.access(path, os.F_OK, follow_symlinks=False):
        return None
    found = _read_mark(path)
    if found is None:
        return None
    cut = _cut(session.log_path, found)
    moved = None
    if cut is not None:
        start, size = cut
        moved = session.quarantine_tail(start, size, reason=CUT_REASON)
        if warn:
            warn(f"{session.display}: a batch cut short by a killed writer ({size - start} bytes at offset {start}) moved to {moved}")
    _drop(path)
    return moved


def kept_copy(quarantine_dir: Path, start: int, size: int, reason: str) -> Path | None:
    """The quarantined copy of log bytes [START, SIZE) moved there for REASON when it is the
    last one indexed (None: none): a writer killed between keeping a tail and cutting it off
    left it, and only the cut is left to do (`store.Session.quarantine_tail`)."""
    index = quarantine_dir / "index.jsonl"
    if index.is_symlink() or not index.is_file():
        return None
    try:
        last = orjson.loads(read_last_line(index) or b"null")
    except (orjson.JSONDecodeError, DataError):
        return None
    if not isinstance(last, dict) or (last.get("offset"), last.get("bytes"), last.get("reason")) != (start, size - start, reason):
        return None
    copy = quarantine_dir / str(last.get("file"))
    return copy if copy.is_file() and copy.stat().st_size == size - start else None


def _drop(path: str | Path) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    except OSError as exc:
        raise WriteError(f"{path}: cannot remove ({exc.strerror})") from None


def _read_mark(path: str | Path) -> dict[str, int] | None:
    """The record as written ({} when it is empty or unreadable: a kill before the batch's
    first byte); None when there is none, or when it is not a regular file (not ours to touch)."""
    try:
        fd = os.open(path, os.O_RDONLY | _FLAGS)
    except OSError:  # (none there, or a link: not ours)
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, 4096)
    finally:
        os.close(fd)
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(doc, dict) or not all(type(doc.get(k)) is int for k in ("start", "end", "inode")):
        return {}
    return {k: doc[k] for k in ("start", "end", "inode")}


def _cut(log_path: Path, mark: dict[str, int]) -> tuple[int, int] | None:
    """[start, size) when the log (the same file) ends inside the marked batch; else None."""
    if not mark:
        return None
    try:
        st = os.stat(log_path, follow_symlinks=False)
    except FileNotFoundError:
        return None
    if st.st_ino != mark["inode"] or not mark["start"] < st.st_size < mark["end"]:
        return None
    return mark["start"], st.st_size


def write_batch(fd: int, batch: bytes, start: int, display: str) -> None:
    """BATCH at the end of the log (at START) as one write where the system takes it whole,
    then fsynced. Anything short of that (a full disk, an I/O error) cuts the log back to
    START and raises WriteError: the batch commits whole or not at all."""
    view = memoryview(batch)
    done = 0
    try:
        while done < len(batch):
            n = os.write(fd, view[done:])
            if n <= 0:
                raise OSError(errno.ENOSPC, "short write")
            done += n
        os.fsync(fd)
    except OSError as exc:
        try:
            os.ftruncate(fd, start)
            os.fsync(fd)
        except OSError:
            pass
        what = "short write" if done else "cannot append"
        raise WriteError(f"{display}: {what} ({exc.strerror}); nothing appended") from None
