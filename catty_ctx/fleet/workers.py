"""The one process pool: when forking a worker is safe, starting one, and dealing work to several.

`inspect`'s two-core fold (parallel.py) starts one child with `start`; the usage scan deals
files to N children with `deal`. A caller's threads could hold locks (the allocator's,
logging's, an I/O buffer's) that a forked child would never see released, so a library
caller running threads gets the one-process path. Imports nothing heavy: the usage ledger
asks before it knows it has anything to parse.
"""
from __future__ import annotations

import os
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any

QUEUE_ITEMS = 1024  # work items in the queue pipe: 4 KiB, within any pipe's buffer, so filling it never blocks


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity mask where the system has one)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0)) or 1
    return os.cpu_count() or 1


def can_fork() -> bool:
    """Whether forking a worker is safe and could help here."""
    if not hasattr(os, "fork") or usable_cpus() < 2:
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


def start(body: Callable[[], Any]) -> int:
    """Fork a child that runs BODY and exits (0 when BODY returned, 1 when it raised); its pid.

    The child never returns into the caller's code and never runs the parent's exit
    handlers. OSError when no process can be had.
    """
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            body()
            code = 0
        except BaseException:
            pass
        finally:
            os._exit(code)
    return pid


def deal(count: int, work: Callable[[int], Any], jobs: int, dump: Callable[[Any], bytes],
         load: Callable[[bytes], Any], meanwhile: Callable[[], Any] | None = None) -> Iterator[tuple[int, Any, bool]]:
    """(n, work(n), done here) for every work item n < COUNT, in this process and JOBS-1 forked children.

    The item numbers are dealt through a queue, a pipe holding them, from which every
    process takes the next one when it is free (reads of four bytes from a pipe are whole),
    so all end together whatever the items cost. A child writes each result (DUMP) as it
    finishes it to an in-memory file where there is one (a pipe would block once full while
    this process is busy with its own share); this process yields its own results as it makes
    them and, between them, the children's whole results written so far (LOAD), so that
    loading them overlaps the children's work; the rest once each child exited. Whatever a
    child did not report (it failed, or could not start) is worked here: a worker can cost
    time, never a result. MEANWHILE, when given, runs here once the children started, before this
    process takes its first item: work the caller needs after the items (imports, tables), which
    the children's share of the queue then pays for instead of adding to the run.
    """
    children: list[tuple[int, int]] = []
    queue_r = queue_w = -1
    if jobs > 1 and count > 1:
        try:
            queue_r, queue_w = os.pipe()
        except OSError:
            pass
    if queue_r < 0:
        if meanwhile is not None:
            meanwhile()
        for n in range(count):
            yield n, work(n), True
        return
    os.write(queue_w, b"".join(i.to_bytes(4, "little") for i in range(count)))
    for _ in range(min(jobs, count) - 1):
        child = _start_dealt(work, dump, queue_r, queue_w)
        if child is not None:
            children.append(child)
    os.close(queue_w)
    if meanwhile is not None:
        meanwhile()
    done: set[int] = set()
    read = [0] * len(children)  # per child: where its next unread result starts in its file
    with os.fdopen(queue_r, "rb", buffering=0):
        for n in _taken(queue_r):
            yield n, work(n), True
            done.add(n)
            # The children's results finished so far are loaded between this process's own items,
            # while they go on working, rather than all after the queue is empty.
            for i, (_pid, fd) in enumerate(children):
                for m, result, end in _finished(fd, read[i], load):
                    read[i] = end
                    done.add(m)
                    yield m, result, False
    for i, child in enumerate(children):
        for n, result in _collect(child, read[i], load):
            done.add(n)
            yield n, result, False
    for n in range(count):
        if n not in done:  # a failed child's items
            yield n, work(n), True


def _taken(fd: int) -> Iterator[int]:
    """Work item numbers taken from the queue pipe until it is empty."""
    while True:
        data = os.read(fd, 4)
        if len(data) < 4:
            return
        yield int.from_bytes(data, "little")


def _start_dealt(work: Callable[[int], Any], dump: Callable[[Any], bytes], queue_r: int, queue_w: int) -> tuple[int, int] | None:
    """A child taking work from the queue: (pid, the file it writes its results to), or None."""
    try:
        out = os.memfd_create("catty-ctx-worker") if hasattr(os, "memfd_create") else _unlinked_temp()
    except OSError:
        return None

    def body() -> None:
        os.close(queue_w)
        for n in _taken(queue_r):
            data = dump((n, work(n)))
            data = len(data).to_bytes(8, "little") + data  # framed: the parent loads each result from one buffer
            while data:
                data = data[os.write(out, data) :]

    try:
        return start(body), out
    except OSError:  # no processes to be had (sandbox, limits): the work stays here
        os.close(out)
        return None


def _unlinked_temp() -> int:
    import tempfile  # (where the system has no memfd_create: the usage scan's start loads no tempfile)

    fd, name = tempfile.mkstemp(prefix="catty-ctx-worker-")
    os.unlink(name)
    return fd


def _finished(fd: int, pos: int, load: Callable[[bytes], Any]) -> Iterator[tuple[int, Any, int]]:
    """(work item, its result, where the next one starts) for each whole result a child has
    written to FD from POS on so far; stops at one still being written, or one that does not load."""
    size = os.fstat(fd).st_size
    while pos + 8 <= size:
        end = pos + 8 + int.from_bytes(os.pread(fd, 8, pos), "little")
        if end > size:
            return  # (still being written)
        try:
            n, result = load(os.pread(fd, end - pos - 8, pos + 8))
        except Exception:
            return
        yield n, result, end
        pos = end


def _collect(child: tuple[int, int], pos: int, load: Callable[[bytes], Any]) -> Iterator[tuple[int, Any]]:
    """(work item, its result) for each item a child finished past POS, once it exited; none when
    it failed (its items not loaded yet are then worked here)."""
    pid, fd = child
    _, status = os.waitpid(pid, 0)
    try:
        if status != 0:
            return
        for n, result, _end in _finished(fd, pos, load):
            yield n, result
    finally:
        os.close(fd)
