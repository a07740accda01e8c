"""inspect's fold on two cores: every other chunk of the log goes to a forked worker.

The log is cut at byte offsets into chunks; a chunk runs from the first *chunk start* at or
after its offset (a message that enters the view: everything pending before it is complete
there, `view.chunk_start`) to the first one at or after the next chunk's offset, so both
processes find the same cuts without talking. The worker reads, parses, validates and folds
its chunks (`iter_view(..., detached=True)`) and sends back each chunk's counts, pairing
problems, largest items and the canonical bytes of its items; this process folds the other
chunks and, at each of the worker's, completes its pending step, extends the fingerprint
chain over the worker's canonical bytes (the chain is sequential; hashing is the cheap part)
and adds the counts. Pass 1 is split too: the worker scans the second half for markers,
this process the first and sends the worker the plan. Output is the same as one pass,
byte for byte:
- a chunk whose items would depend on the fold before it (an announcement, an event the
  compaction folded, a second session event) comes back as "needs state" and is folded
  here instead; so is every chunk when the worker is gone;
- the first bad line in file order is the one reported: a worker's error is raised only when
  this process reaches that chunk, with the line number counted from the start.
Only for large logs (below PARALLEL_MIN_BYTES a fork costs more than it saves) and only
where `fork` exists and a second CPU is there.
"""
from __future__ import annotations

import marshal
import os
import queue
import signal
import struct
import threading
from array import array
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
from xxhash import xxh3_128_digest

from ..errors import DataError
from ..fleet.workers import can_fork, start
from ..session.events import Event, check_event
from ..session.jsonl import TOO_LONG, json_problem, line_start, numbered_lines, open_log, torn_warning
from ..session.store import SEQ0_PROBLEM, Session, seq_problem
from ..view.fold import Join, NeedsState, ViewPlan, ViewStats, chunk_start, iter_view, plan_file, plan_view, scan_markers
from ..view.integrity import Problem

try:
    import fcntl
except ImportError:  # (no fcntl on Windows: the pipe keeps its default size)
    fcntl = None  # type: ignore[assignment]  # (the module or None)

# inspect's accumulator (`inspect.Tally`): the caller hands one in and the worker makes its own
# from it, so this module never imports the one above it.
Tally = Any

PARALLEL_MIN_BYTES = 32 << 20
CHUNK_BYTES = 4 << 20
OUTBOX = 2
WORKER_SHARE = 0.8  # the worker's chunks to this process's: it also ships every item's canonical bytes
_END = 1 << 62  # "no next chunk": read to the end of the log
_FRAME = struct.Struct("<QQ")


def can_split(size: int, min_bytes: int = PARALLEL_MIN_BYTES) -> bool:
    """Whether a log of `size` bytes is worth two processes here."""
    return size >= min_bytes and can_fork()


class BadLine(Exception):
    """An invalid line; `line` counts from where the reader started counting."""

    def __init__(self, message: str, line: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line


class ChunkReader:
    """The reading rules of `Session.events` (line limit, torn tail, validation, contiguous
    seq with the quarantined gaps) over chunks of a log, and where each chunk ends."""

    def __init__(self, path: Path, display: str, starts: Callable[[Event], bool], gaps: frozenset[int]) -> None:
        self.f = open_log(path, display)
        self.path = path
        self.display = display
        self.starts = starts
        self.gaps = gaps
        self.offset = 0  # of the next line not yet yielded
        self.lineno = 0  # lines yielded so far
        self.expect: int | None = 0  # None: take the first seq as it comes (checked by whoever joins)
        self.first_seq: int | None = None
        self.pending: tuple[Event, int] | None = None  # the next chunk's start, parsed: (event, line bytes)
        self.eof = False
        self.torn: tuple[int, int] | None = None  # (line, bytes) of a torn final line

    def close(self) -> None:
        self.f.close()

    def seek_start(self, at: int) -> bool:
        """Go to the first chunk start at or after byte `at`; False when there is none."""
        f = self.f
        pos = line_start(self.path, at)
        f.seek(pos)
        loads = orjson.loads
        try:
            for _, line in numbered_lines(f, self.display, on_torn=None):
                try:
                    ev = loads(line)
                except orjson.JSONDecodeError:
                    ev = None  # the chunk before reports it
                if ev is not None and check_event(ev) is None and self.starts(ev):
                    self.pending = (ev, len(line))
                    self.offset, self.lineno, self.expect, self.first_seq = pos, 0, None, None
                    return True
                pos += len(line)
        except DataError:
            pass  # a line over the limit: the chunk before reports it
        self.eof = True
        return False

    def skip(self, lines: int, end: int | None, last_seq: int) -> None:
        """Step over a chunk someone else read (end None: it reached the end of the log)."""
        self.lineno += lines
        self.expect = last_seq + 1
        self.pending = None
        if end is None:
            self.eof = True
        else:
            self.offset = end
            self.f.seek(end)

    def check_seq(self, seq: int, expect: int | None, line: int) -> None:
        if expect is not None and seq != expect:
            problem = seq_problem(seq, expect, self.gaps)
            if problem is not None:
                raise BadLine(problem, line)

    def _take(self, ev: Event, lineno: int) -> None:
        """The seq rules of `Session.events` for the next event (a chunk's first is taken as it comes)."""
        seq = ev["seq"]
        if self.expect is None:
            self.first_seq = seq
        else:
            self.check_seq(seq, self.expect, lineno)
        if seq == 0 and ev["kind"] != "session":
            raise BadLine(SEQ0_PROBLEM, lineno)
        self.expect = seq + 1

    def events(self, until: int) -> Iterator[Event]:
        """Validated events from here up to the first chunk start at or after byte `until`."""
        if self.eof:
            return
        if self.pending is not None:
            if self.offset >= until:
                return  # the next chunk starts here: this one is empty
            ev, size = self.pending
            self.pending = None
            yield from self._accept(ev, size)
        loads = orjson.loads
        starts = self.starts
        check = check_event
        offset = self.offset
        lineno = self.lineno

        def torn(at: int, size: int) -> None:
            self.torn = (at, size)

        try:
            for lineno, line in numbered_lines(self.f, self.display, on_torn=torn, first_line=self.lineno + 1):
                try:
                    ev = loads(line)
                except orjson.JSONDecodeError as exc:
                    raise BadLine(json_problem(exc), lineno) from None
                problem = check(ev)
                if problem is not None:
                    raise BadLine(problem, lineno)
                if offset >= until and starts(ev):
                    self.pending = (ev, len(line))
                    lineno -= 1
                    return
                seq = ev["seq"]
                if seq == self.expect and seq:  # the common case, inline (the hot loop)
                    self.expect = seq + 1
                else:
                    self._take(ev, lineno)
                offset += len(line)
                yield ev
            self.eof = True
        except DataError as exc:  # a line over the limit, numbered from where counting started
            raise BadLine(TOO_LONG, exc.line or lineno + 1) from None
        finally:
            self.offset = offset
            self.lineno = lineno

    def _accept(self, ev: Event, size: int) -> Iterator[Event]:
        self.lineno += 1
        self._take(ev, self.lineno)
        self.offset += size
        yield ev


# -- the worker ---------------------------------------------------------------------------


def _send(fd: int, meta: dict[str, Any], blob: bytes = b"") -> None:
    head = marshal.dumps(meta)
    for part in (_FRAME.pack(len(head), len(blob)) + head, blob):
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


def _work(
    session: Session, mid: int, gaps: frozenset[int], bounds: list[int], new_tally: Callable[[], Tally], fd: int, plan_fd: int
) -> None:
    _send(fd, {"markers": list(scan_markers(session.log_path, start=mid))})  # pass 1 of the second half
    got = _Inbox(plan_fd).get()
    if got is None:
        return
    plan = ViewPlan(**got[0])
    # A sending thread lets the fold run ahead while the parent is busy with its own chunk
    # (the write blocks without the GIL); OUTBOX chunks at most wait in memory.
    outbox: queue.Queue[tuple[dict[str, Any], bytes] | None] = queue.Queue(maxsize=OUTBOX)

    def ship() -> None:
        try:
            while (msg := outbox.get()) is not None:
                _send(fd, *msg)
        except BaseException:
            os._exit(1)  # the parent stopped listening: nothing is left to do, and the fold must not wait on a full outbox

    sender = threading.Thread(target=ship, daemon=True)
    sender.start()
    try:
        for msg in _fold_chunks(session, plan, gaps, bounds, new_tally):
            outbox.put(msg)
    finally:
        outbox.put(None)
        sender.join()


def _fold_chunks(
    session: Session, plan: ViewPlan, gaps: frozenset[int], bounds: list[int], new_tally: Callable[[], Tally]
) -> Iterator[tuple[dict[str, Any], bytes]]:
    """The worker's chunks (the odd ones), folded: each one's results and canonical bytes."""
    reader = ChunkReader(session.log_path, session.display, chunk_start(plan), gaps)
    for k in range(1, len(bounds), 2):
        until = bounds[k + 1] if k + 1 < len(bounds) else _END
        if not reader.seek_start(bounds[k]):
            return  # no start before the end: the chunk before reads to it
        meta: dict[str, Any] = {"k": k, "start": reader.offset}
        if reader.offset >= until:
            yield dict(meta, status="empty"), b""  # its first start opens the next chunk
            continue
        stats = ViewStats()
        tally = new_tally()
        canons: list[bytes] = []
        before_usage = 0
        try:
            for vi in iter_view(reader.events(until), plan, stats=stats, detached=True):
                if not stats.usage_seen:
                    before_usage += vi.tokens
                canons.append(vi.canon)
                tally.add(vi)
        except NeedsState:
            yield dict(meta, status="state"), b""
            continue
        except BadLine as exc:
            yield dict(meta, status="error", first_seq=reader.first_seq, line=exc.line, message=exc.message), b""
            return
        checker = tally.checker.finish()  # the next chunk opens with a message: it closes the run
        meta.update(
            status="ok",
            end=None if reader.eof else reader.offset,
            lines=reader.lineno,
            first_seq=reader.first_seq,
            last_seq=(reader.expect or 0) - 1,
            torn=reader.torn,
            events=stats.events,
            kinds=stats.kinds,
            roles=stats.roles,
            turns=stats.turns,
            items=stats.items,
            sum_tokens=stats.sum_tokens,
            before_usage=before_usage,
            usage=(stats.usage_context, stats.usage_seq, stats.since_usage) if stats.usage_seen else None,
            schema=stats.schema_tokens,
            problems=(checker.dangling, checker.orphan, checker.duplicate),
            found=[(p.kind, p.call_id, p.seq) for p in checker.found],
            largest=tally.top.heap,
            lengths=array("Q", map(len, canons)).tobytes(),
        )
        blob = b"".join(canons)
        del canons, tally, stats  # before the next chunk's: the worker's memory is chunks in flight
        yield meta, blob
        del blob
        if reader.eof:
            return


class _Inbox:
    """Chunk results from the worker's pipe, in order; None once the worker is gone."""

    def __init__(self, fd: int) -> None:
        self.f = os.fdopen(fd, "rb", buffering=0)

    def _read(self, n: int) -> bytearray | None:
        buf = bytearray(n)
        view = memoryview(buf)
        got = 0
        while got < n:
            r = self.f.readinto(view[got:])
            if not r:
                return None
            got += r
        return buf

    def get(self) -> tuple[dict[str, Any], bytearray] | None:
        head = self._read(_FRAME.size)
        if head is None:
            return None
        head_len, blob_len = _FRAME.unpack(head)
        meta = self._read(head_len)
        blob = self._read(blob_len)
        if meta is None or blob is None:
            return None
        return marshal.loads(meta), blob


# -- this process ------------------------------------------------------------------------


def chunk_bounds(size: int, chunk_bytes: int, worker_share: float) -> list[int]:
    """Chunk offsets: this process's chunks (even) and the worker's (odd, `worker_share` as large)."""
    sizes = (max(chunk_bytes, 1), max(int(chunk_bytes * worker_share), 1))
    bounds: list[int] = []
    at = 0
    while at < max(size, 1):
        bounds.append(at)
        at += sizes[len(bounds) % 2 == 0]
    return bounds


def fold_split(
    session: Session,
    stats: ViewStats,
    tally: Tally,
    *,
    warn: Callable[[str], None] | None = None,
    progress: Callable[[int], None] | None = None,
    chunk_bytes: int = CHUNK_BYTES,
    worker_share: float = WORKER_SHARE,
) -> ViewPlan:
    """Pass 1 and the fold of the whole log into `stats` and `tally`, as `plan_file` and
    `iter_view` would do them, on two processes; returns the plan."""
    display = session.display
    path = session.log_path
    size = path.stat().st_size
    bounds = chunk_bounds(size, chunk_bytes, worker_share)
    mid = line_start(path, size // 2)
    gaps = session.allowed_gaps() if not session.stdin else frozenset()
    r, w = os.pipe()
    plan_r, plan_w = os.pipe()
    if fcntl is not None:
        try:
            fcntl.fcntl(w, getattr(fcntl, "F_SETPIPE_SZ", 1031), 1 << 20)  # fewer, larger writes
        except OSError:
            pass

    def worker() -> None:  # a failed worker exits 1: the parent folds what it did not get
        os.close(r)
        os.close(plan_w)
        _work(session, mid, gaps, bounds, lambda: type(tally)(tally.top.n), w, plan_r)

    pid = start(worker)
    os.close(w)
    os.close(plan_r)
    inbox = _Inbox(r)
    try:
        markers = list(scan_markers(path, stop=mid))
        got = inbox.get()
        alive = got is not None
        if got is not None and not any(ev.get("kind") == "rewind" for ev in markers + got[0]["markers"]):
            plan = plan_view(markers + got[0]["markers"])
        else:
            plan = plan_file(path)  # a rewind needs the turns: the whole scan, here
        if alive:
            keys = ("compaction", "excluded", "compactions", "drops", "answers")
            try:
                _send(plan_w, {k: getattr(plan, k) for k in keys})
            except BrokenPipeError:
                alive = False  # the worker is gone: every chunk is folded here
    except BaseException:
        _stop(pid, inbox)
        raise
    finally:
        os.close(plan_w)
    reader = ChunkReader(path, display, chunk_start(plan), gaps)

    def events() -> Iterator[Any]:
        nonlocal alive
        for k in range(len(bounds)):
            until = bounds[k + 1] if k + 1 < len(bounds) else _END
            got = None
            if k % 2 and alive:
                if reader.eof:
                    return
                got = inbox.get()
                if got is None or got[0]["k"] != k:
                    alive, got = False, None
            if got is None or got[0]["status"] in ("state", "empty") or got[0]["start"] != reader.offset or reader.pending is None:
                yield from reader.events(until)
            else:
                meta = got[0]
                line = reader.lineno + 1  # the chunk's first line
                if meta["first_seq"] is not None:
                    reader.check_seq(meta["first_seq"], reader.expect, line)
                if meta["status"] == "error":
                    raise BadLine(meta["message"], reader.lineno + meta["line"])
                reader.skip(meta["lines"], meta["end"], meta["last_seq"])
                if meta["torn"] and warn:
                    warn(torn_warning(display, reader.lineno - meta["lines"] + meta["torn"][0], meta["torn"][1]))
                yield Join(got)
            if progress:
                progress(reader.offset)

    try:
        for vi in iter_view(events(), plan, stats=stats):
            if type(vi) is Join:
                _merge(stats, tally, *vi.result)
            else:
                tally.add(vi)
        if reader.torn and warn:
            warn(torn_warning(display, *reader.torn))
        if reader.expect == 0:
            raise DataError("no events: a log starts with its session event", path=display)
    except BadLine as exc:
        raise DataError(exc.message, path=display, line=exc.line) from None
    finally:
        reader.close()
        _stop(pid, inbox)
    return plan


def _stop(pid: int, inbox: _Inbox) -> None:
    inbox.f.close()
    try:
        os.kill(pid, signal.SIGKILL)  # done, or its work is no longer wanted
    except OSError:
        pass
    os.waitpid(pid, 0)


def _merge(stats: ViewStats, tally: Tally, meta: dict[str, Any], blob: bytearray) -> None:
    """Add a worker chunk's results at its place in the item order."""
    stats.events += meta["events"]
    for name, counts in (("kinds", stats.kinds), ("roles", stats.roles)):
        for key, n in meta[name].items():
            counts[key] = counts.get(key, 0) + n
    stats.turns += meta["turns"]
    if meta["items"]:
        checker = tally.checker
        checker.finish()  # the chunk's first item is a message: it closes the open run
        base = tally.index
        for tokens, neg_index, seq, role in meta["largest"]:
            tally.top.add_entry((tokens, neg_index - base, seq, role))
        tally.index += meta["items"]
        dangling, orphan, duplicate = meta["problems"]
        checker.dangling += dangling
        checker.orphan += orphan
        checker.duplicate += duplicate
        for kind, call_id, seq in meta["found"]:
            if len(checker.found) < checker.keep:
                checker.found.append(Problem(kind, call_id, seq))
        stats.items += meta["items"]
        stats.sum_tokens += meta["sum_tokens"]
        if stats.usage_seen:
            stats.since_usage += meta["before_usage"]  # every item of the chunk is past the last usage
    if meta["schema"] is not None:
        stats.schema_tokens = meta["schema"]
    if meta["usage"] is not None:
        stats.usage_seen = True
        stats.usage_context, stats.usage_seq, stats.since_usage = meta["usage"]
    h = xxh3_128_digest
    digest = stats.digest
    view = memoryview(blob)
    a = 0
    for n in array("Q", meta["lengths"]):
        b = a + n
        digest = h(digest + view[a:b])
        a = b
    stats.digest = digest
