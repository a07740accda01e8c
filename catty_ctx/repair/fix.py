"""Repair's fix (docs/design.md#m5, `repair`): `repair_session` applies a plan under the session
lock without losing a byte (quarantine first, then the log); the conversation fixes are `repair`
events the view applies, so the original events stay in the log. `repaired_view` gives the same
fixes in memory, for resume and compact, and `repair_stream` for a log read from a pipe."""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterator
from itertools import chain
from typing import Any

import orjson

from ..errors import DataError, WriteError
from ..formats.ownership import require_ours
from ..session.create import write_summary
from ..session.events import now_ts
from ..session.files import write_file
from ..session.jsonl import MAX_LINE_BYTES, raw_lines
from ..session.store import Session, append_quarantine_record, prepare_event, quarantine_bytes, session_folder
from ..view.fold import SHAPE_AND_TURN_MARKERS, iter_view, plan_view, scan_markers
from .plan import BadLine, RepairPlan, analyse, good_events, rebuild_summary, refuse_mostly_invalid


def _quarantine_text(what: str, lineno: int | None, offset: int, length: int, kept: Any, problem: str | None = None) -> str:
    where = f"line {lineno}, " if lineno is not None else ""
    text = f"{what}: {where}{length} bytes at offset {offset} kept in quarantine/{getattr(kept, 'name', '')}"
    return text + (f" ({problem})" if problem else "")


def _drop_lines(session: Session, bad: list[BadLine]) -> None:
    """Rewrite the log without the bad lines (already copied to quarantine), as one whole-file write."""
    cut = {b.offset: b.length for b in bad}
    path = session.log_path

    def fill(out: Any) -> None:
        with open(path, "rb") as src:
            pos = 0
            for offset in sorted(cut):
                _copy_range(src, out, pos, offset)
                pos = offset + cut[offset]
            src.seek(pos)
            while chunk := src.read(1 << 20):
                out.write(chunk)

    try:
        write_file(path, fill)
    except OSError as exc:
        raise WriteError(f"{path}: cannot rewrite the log ({exc.strerror})") from None


def _copy_range(src: Any, out: Any, start: int, stop: int) -> None:
    src.seek(start)
    left = stop - start
    while left > 0:
        chunk = src.read(min(left, 1 << 20))
        if not chunk:
            break
        out.write(chunk)
        left -= len(chunk)


def repair_session(session: Session, *, lock_timeout: float = 30.0, warn: Callable[[str], None] | None = None, force: bool = False) -> RepairPlan:
    """Apply the plan under the session lock. Order: quarantine copies, then the log, then
    the repair events (the commit point), then summary.json. A log in another agent's format
    is refused before anything is written, and so is a mostly invalid one unless `force`."""
    require_ours(session)
    with session.lock(lock_timeout):
        plan = analyse(session)
        refuse_mostly_invalid(plan, force=force)
        if not plan.found:
            return plan
        existing = None
        if plan.summary in ("stale",):
            existing = session.summary()
        elif plan.summary == "invalid" and (summary_path := session.summary_path) is not None:
            quarantine_bytes_file(session, summary_path)
            summary_path.unlink()  # kept in quarantine; the append below must not trip over it
        info: list[dict[str, Any]] = []
        if plan.torn is not None:
            offset, length = plan.torn
            kept = session.quarantine_torn_tail(None)  # the writer's own routine: quarantine, then truncate
            info.append({"kind": "repair", "action": "quarantine", "reason": "torn_line", "text": _quarantine_text("torn final line", None, offset, length, kept)})
        for b in plan.bad:
            kept = quarantine_bytes(session, b.offset, b.offset + b.length, reason=f"invalid line: {b.reason}", seq=b.seq, lineno=b.lineno)
            info.append({"kind": "repair", "action": "quarantine", "reason": "invalid_line", "text": _quarantine_text("invalid line", b.lineno, b.offset, b.length, kept, b.reason)})
        for s in plan.missing:  # lines lost before catty-ctx saw them: record the hole so readers accept it
            append_quarantine_record(session, {"seq": s, "bytes": 0, "reason": "missing seq (no line in the log)", "ts": now_ts()})
        if plan.bad:
            _drop_lines(session, plan.bad)  # every byte is in quarantine by now
        if plan.last_seq < 0:
            info = []  # no session event left to follow: the quarantine index is the record
        written = session.append_locked(info + plan.events, warn=None)
        if plan.summary and session.directory is not None:
            facts = dict(plan.facts)
            if written:
                facts["last_seq"] = written[-1]["seq"]
                facts["last_ts"] = written[-1]["ts"]
            write_summary(session.directory, rebuild_summary(facts, existing, session.log_path.stat().st_size))
    if warn:
        warn(f"{session.display}: repaired: " + ", ".join(plan.notes()))
    return plan


def quarantine_bytes_file(session: Session, path: Any) -> None:
    """Keep a copy of an unreadable summary.json in quarantine before it is rebuilt.

    Neither end follows a link: a summary.json that is a symbolic link is refused (it is not
    the session's to copy, nor to replace), and the copy is a new file whose name nothing
    planted can take (exclusive create), with the mode of the file it copies."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteError(f"{path}: is a symbolic link; repair never copies or replaces one") from None
        raise WriteError(f"{path}: cannot read ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise WriteError(f"{path}: not a regular file; repair never copies or replaces one")
        data = f.read(MAX_LINE_BYTES + 1)
    qdir = session_folder(session.quarantine_dir)  # never a link out of the session
    base = f"summary-{int(st.st_mtime)}"
    n = 0
    while True:
        target = qdir / (f"{base}.json" if n == 0 else f"{base}.{n}.json")
        try:
            out = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), st.st_mode & 0o777)
        except FileExistsError:
            n += 1
            continue
        except OSError as exc:
            raise WriteError(f"{target}: cannot write ({exc.strerror})") from None
        break
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(out, view):]
        os.fsync(out)
    except OSError as exc:
        raise WriteError(f"{target}: cannot write ({exc.strerror})") from None
    finally:
        os.close(out)


def repair_stream(session: Session, out: Any) -> RepairPlan:
    """`repair -`: the stream's complete lines, byte for byte, then its repair events."""
    plan = analyse(session)
    if plan.bad:
        b = plan.bad[0]
        raise DataError(b.reason, path=session.display, line=b.lineno)
    if plan.missing:
        raise DataError(f"seq {plan.missing[0]} is missing from the stream", path=session.display)
    for raw in raw_lines(session.log_path, session.display, warn=None):
        out.write(raw.data + b"\n")
    seq = plan.last_seq + 1
    ts = now_ts()
    for i, ev in enumerate(plan.events):
        out.write(orjson.dumps(prepare_event({**ev, "ts": ts}, seq + i)) + b"\n")
    return plan


def repaired_view(session: Session) -> tuple[RepairPlan, Iterator[Any]]:
    """The view with every fix of `analyse` applied in memory (the log is not touched):
    what resume and compact hand on. A torn tail is left out; an invalid line is a DataError.

    A session that needs no fix costs one read (the items of the analysis are handed on);
    one that does costs a second pass with the fixes applied."""
    seen: list[Any] = []
    plan = analyse(session, keep=seen)
    if plan.bad:  # invalid lines stay a data error for readers until `repair` quarantines them
        b = plan.bad[0]
        raise DataError(f"{b.reason}; 'catty-ctx repair' quarantines invalid lines", path=session.display, line=b.lineno)
    if not plan.events:
        return plan, iter(seen)
    seen.clear()
    ts = now_ts()
    extra = [prepare_event({**ev, "ts": ts}, plan.last_seq + 1 + i) for i, ev in enumerate(plan.events)]

    def markers() -> Iterator[dict[str, Any]]:
        for ev in scan_markers(session.log_path, SHAPE_AND_TURN_MARKERS):  # user lines: rewinds need turns
            if ev["seq"] <= plan.last_seq:
                yield ev
        yield from extra

    view_plan = plan_view(markers())
    return plan, iter_view(chain(good_events(session, set(), plan.end), extra), view_plan)


def repaired_items(session: Session) -> tuple[list[dict[str, Any]], list[str]]:
    """The repaired view as a list of items, and what was repaired (short phrases)."""
    plan, stream = repaired_view(session)
    return [vi.item for vi in stream], plan.notes()
