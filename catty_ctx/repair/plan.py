"""Repair: find and fix what makes a session unloadable or unsendable (docs/design.md#m5, `repair`).

The repair planner (`analyse`) goes further than grok-build, which repairs only at fixed
boundaries: in two streaming passes it finds a torn tail, invalid lines, duplicated calls
and streaming snapshots, duplicate, orphan and displaced results, dangling calls and a
missing or stale summary.json. `repair_session` applies the plan under the session lock
without losing a byte (quarantine first, then the log); the conversation fixes are
`repair` events the view applies, so the original events stay in the log.
`repaired_view` gives the same fixes in memory, for resume and compact.
"""
from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import orjson

from ..errors import DataError, ExitCode, WriteError
from ..formats.ownership import import_hint, require_ours
from ..session.events import check_event, now_ts
from ..session.files import write_file
from ..session.jsonl import MAX_LINE_BYTES, json_problem, last_newline_end, raw_lines
from ..session.store import Session, append_quarantine_record, new_summary, prepare_event, quarantine_bytes, session_folder, session_title, write_summary
from ..view.fold import SHAPE_AND_TURN_MARKERS, iter_view, plan_file, plan_view, scan_markers
from ..view.integrity import NOT_EXECUTED as DANGLING_TEXT

# A seq jump larger than this is a corrupt seq, not lost lines: the line is quarantined.
MAX_GAP = 10_000


@dataclass
class BadLine:
    """An invalid complete line: it goes to quarantine, and its seq becomes an accepted gap."""

    lineno: int
    offset: int
    length: int  # bytes, newline included
    reason: str
    seq: int | None = None


@dataclass
class RepairPlan:
    """Everything `repair` would do to one session, found without writing anything."""

    display: str
    torn: tuple[int, int] | None = None  # (offset, bytes) of a torn final line
    bad: list[BadLine] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # seqs with no line at all
    events: list[dict[str, Any]] = field(default_factory=list)  # repair events to append
    summary: str | None = None  # missing | stale | invalid, when summary.json needs a rebuild
    counts: dict[str, int] = field(default_factory=dict)
    end: int = 0  # bytes of complete lines when analysed
    lines: int = 0  # complete lines when analysed
    last_seq: int = -1
    facts: dict[str, Any] = field(default_factory=dict)  # what a rebuilt summary.json needs

    @property
    def found(self) -> int:
        return sum(self.counts.values())

    def exit_code(self, *, check: bool) -> int:
        """`repair S`'s exit: with CHECK, a check's finding (1) when anything was found; else 0."""
        return int(ExitCode.CHECK_FAILED) if check and self.found else 0

    def _count(self, kind: str) -> None:
        self.counts[kind] = self.counts.get(kind, 0) + 1

    def actions(self) -> list[dict[str, Any]]:
        """What the plan does, one row per action (the CLI's output)."""
        rows: list[dict[str, Any]] = []
        if self.torn is not None:
            rows.append({"action": "quarantine", "reason": "torn_line", "offset": self.torn[0], "bytes": self.torn[1]})
        for b in self.bad:
            rows.append({"action": "quarantine", "reason": "invalid_line", "line": b.lineno, "offset": b.offset, "bytes": b.length, "seq": b.seq, "problem": b.reason})
        for s in self.missing:
            rows.append({"action": "gap", "reason": "missing_seq", "seq": s})
        for ev in self.events:
            if ev["action"] in ("drop", "answer"):
                rows.append({k: ev[k] for k in ("action", "reason", "target_seq", "call_id") if k in ev})
        if self.summary:
            rows.append({"action": "rebuild", "reason": f"{self.summary}_summary", "file": "summary.json"})
        return rows

    def notes(self) -> list[str]:
        """One short phrase per kind of fix, for a stderr line."""
        return problem_notes(self.counts)

    def document(self, path: str, *, applied: bool) -> dict[str, Any]:
        """The `repair S --json` document (also each session's of `repair ROOT --json`)."""
        return {"path": path, "found": self.found, "problems": self.counts, "applied": applied and self.found > 0,
                "actions": self.actions()}


def problem_notes(counts: dict[str, int]) -> list[str]:
    """COUNTS of problems by kind as short phrases ("1 dangling call")."""
    return [f"{n} {kind.replace('_', ' ')}{'s' if n > 1 else ''}" for kind, n in sorted(counts.items()) if n]


def _line_problem(data: bytes) -> tuple[dict[str, Any] | None, str | None]:
    try:
        ev = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return None, json_problem(exc)
    return ev, check_event(ev)


def _scan_lines(session: Session, plan: RepairPlan, *, gaps: frozenset[int]) -> Iterator[dict[str, Any]]:
    """Pass 1: every complete line checked as the reader would; bad ones recorded, good ones yielded."""
    expect = 0
    run: list[BadLine] = []
    end = 0
    for raw in raw_lines(session.log_path, session.display, warn=None):
        end = raw.offset + len(raw.data) + 1
        plan.lines = raw.lineno
        ev, problem = _line_problem(raw.data)
        if problem is None:
            assert ev is not None
            seq = ev["seq"]
            if seq == 0 and ev["kind"] != "session":
                problem = "seq 0 must be the session event"
            elif seq < expect:
                problem = f"seq {seq} where {expect} was expected (repeated or out of order)"
            elif seq - expect > MAX_GAP:
                problem = f"seq {seq} where {expect} was expected"
        if problem is not None:
            run.append(BadLine(raw.lineno, raw.offset, len(raw.data) + 1, problem))
            continue
        assert ev is not None
        seq = ev["seq"]
        holes = [s for s in range(expect, seq) if s not in gaps]
        # The seqs a run of bad lines stood for are the holes before the next good line.
        for bad, hole in zip(run, holes):
            bad.seq = hole
        plan.missing.extend(holes[len(run):])
        plan.bad.extend(run)
        run = []
        expect = seq + 1
        plan.last_seq = seq
        yield ev
    plan.bad.extend(run)
    plan.end = end


class _Facts:
    """What summary.json holds, gathered while pass 1 streams (store's rules for each field)."""

    def __init__(self) -> None:
        self.first: dict[str, Any] | None = None
        self.title = ""
        self.model: str | None = None
        self.last_ts: str | None = None
        self.count = 0

    def wrap(self, events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        for ev in events:
            if self.first is None:
                self.first = ev
            self.count += 1
            self.last_ts = ev["ts"]
            kind = ev["kind"]
            if kind == "message" and not self.title and ev.get("role") == "user" and not ev.get("synthetic") and not ev.get("agent"):
                self.title = ev.get("text", "")
            elif kind == "usage" and not ev.get("agent") and ev.get("model"):
                self.model = ev["model"]
            yield ev


def rebuild_summary(facts: dict[str, Any], existing: dict[str, Any] | None, log_size: int) -> dict[str, Any]:
    """summary.json from the log's facts; fields the log cannot know (fork kind, …) are kept."""
    first = facts.get("first") or {}
    session_ev = first if first.get("kind") == "session" else {}
    out = dict(existing or {})
    out.update(new_summary(session_ev))
    if not session_ev.get("window") and existing and isinstance(existing.get("window"), int):
        out["window"] = existing["window"]
    out["title"] = session_title(facts.get("title") or "")
    out["model"] = facts.get("model") or session_ev.get("model")
    out["updated_at"] = facts.get("last_ts") or out["created_at"]
    out["last_seq"] = facts.get("last_seq", -1)
    out["events"] = out["last_seq"] + 1  # store's convention: seqs are contiguous (gaps aside)
    out["log_size"] = log_size
    if out.get("parent_session_id") and "session_kind" not in out:
        out["session_kind"] = "fork"
        out.setdefault("forked_at", out["created_at"])
    return out


def _summary_state(session: Session, plan: RepairPlan) -> str | None:
    if session.directory is None or session.stdin or session.origin is not None:  # (a subagent's view has its parent's)
        return None
    raw = session.summary_bytes()  # (one that cannot be read is not ours to judge, nor to replace)
    if raw is None:
        return "missing"
    try:
        data = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return "invalid"
    if not isinstance(data, dict):
        return "invalid"
    first = plan.facts.get("first") or {}
    expected_size = plan.end - sum(b.length for b in plan.bad)
    # A field another writer did not fill in is not a disagreement; a summary with neither
    # size nor last seq cannot say whether it is current.
    if "log_size" not in data and "last_seq" not in data:
        return "stale"
    if (
        ("log_size" in data and data["log_size"] != expected_size)
        or ("last_seq" in data and data["last_seq"] != plan.last_seq)
        or (first.get("kind") == "session" and "session_id" in data and data["session_id"] != first.get("session_id"))
    ):
        return "stale"
    return None


class _EventFixes:
    """Event-level fixes made before the view groups items: repeated call ids and streaming
    snapshots (an earlier copy of a message whose later copy, with the same id and role,
    extends its text, with no call or result between them). Dropped events are left out of
    the stream, so the item planner sees the view as it will be after the repair."""

    def __init__(self, view_plan: Any, plan: RepairPlan) -> None:
        self.vp = view_plan
        self.plan = plan
        comp = view_plan.compaction
        self.through = comp["through_seq"] if comp else -1
        self.declared: set[str] = set()

    def _in_view(self, ev: dict[str, Any]) -> bool:
        seq = ev["seq"]
        vp = self.vp
        return ev.get("agent") is None and seq > self.through and seq not in vp.drops and not (vp.excluded and vp.is_excluded(seq))

    def _drop(self, ev: dict[str, Any], reason: str) -> None:
        rep: dict[str, Any] = {"kind": "repair", "action": "drop", "target_seq": ev["seq"], "reason": reason}
        if ev["kind"] == "tool_call":
            rep["call_id"] = ev["call_id"]
        self.plan.events.append(rep)
        self.plan._count(reason)

    def wrap(self, events: Iterable[dict[str, Any]]) -> Iterator[dict[str, Any]]:
        held: list[dict[str, Any]] = []  # a message that may be a snapshot, + non-item events after it
        for ev in events:
            kind = ev["kind"]
            if kind not in ("message", "tool_call", "tool_result") or not self._in_view(ev):
                if held:
                    held.append(ev)
                else:
                    yield ev
                continue
            if kind == "tool_call":
                if ev["call_id"] in self.declared:
                    self._drop(ev, "duplicate_call")
                    continue
                self.declared.add(ev["call_id"])
            if held:
                prev = held[0]
                if (
                    kind == "message"
                    and prev["id"] == ev["id"]
                    and prev["role"] == ev["role"]
                    and prev.get("synthetic") == ev.get("synthetic")
                    and ev["text"].startswith(prev["text"])
                ):
                    self._drop(prev, "streaming_snapshot")
                    del held[0]
                yield from held
                held = []
            if kind == "message":
                held = [ev]
            else:
                yield ev
        yield from held


class _PairPlanner:
    """Item-level fixes: in each run, keep the last result of a call, answer dangling calls
    in call order, and drop results outside the run of the assistant that declared them."""

    def __init__(self, plan: RepairPlan) -> None:
        self.plan = plan
        self.calls: list[str] = []
        self.results: dict[str, list[dict[str, Any]]] = {}
        self.declared: set[str] = set()

    def _drop(self, item: dict[str, Any], reason: str) -> None:
        self.plan.events.append({"kind": "repair", "action": "drop", "target_seq": item["seq"], "call_id": item["call_id"], "reason": reason})
        self.plan._count(reason)

    def _close(self) -> None:
        for cid in self.calls:
            got = self.results.get(cid, [])
            if not got:
                self.plan.events.append({"kind": "repair", "action": "answer", "call_id": cid, "text": DANGLING_TEXT, "reason": "dangling_call"})
                self.plan._count("dangling_call")
            for item in got[:-1]:
                if "seq" in item:  # a synthetic answer has no seq to drop by
                    self._drop(item, "duplicate_result")
        self.calls = []
        self.results = {}

    def feed(self, item: dict[str, Any]) -> None:
        if item.get("role") == "tool":
            cid = item.get("call_id")
            if cid in self.results:
                self.results[cid].append(item)
            elif "seq" in item:
                self._drop(item, "displaced_result" if cid in self.declared else "orphan_result")
            return
        self._close()
        for call in item.get("tool_calls") or ():
            cid = call["call_id"]
            if cid not in self.results:
                self.calls.append(cid)
                self.results[cid] = []
            self.declared.add(cid)

    def finish(self) -> None:
        self._close()


def analyse(
    session: Session,
    *,
    keep: list[Any] | None = None,
    stats: Any = None,
    watch: Callable[[Iterator[dict[str, Any]]], Iterable[dict[str, Any]]] | None = None,
) -> RepairPlan:
    """Find every problem of a session and the fixes for it, reading only.

    One marker scan plans the view and one pass validates every line and folds the view,
    as `inspect` reads; only a log with invalid lines costs a second pass (the plan must
    then be made from the good lines alone). `keep` collects the view items as they were
    before any fix (ViewItem objects). `watch` wraps the first pass's event stream (every
    good event, before the event fixes) and `stats` (a ViewStats) is its fold's, so a
    reader such as the report needs no fold of its own when the log has no invalid line,
    no missing seq and no event the fixes drop."""
    plan = RepairPlan(display=session.display)
    size = session.log_path.stat().st_size
    complete = last_newline_end(session.log_path)
    if size > complete:
        plan.torn = (complete, size - complete)
        plan._count("torn_line")
    before = dict(plan.counts)
    gaps = session.allowed_gaps() if not session.stdin else frozenset()
    facts = _Facts()
    view_plan = plan_file(session.log_path)
    events = facts.wrap(_scan_lines(session, plan, gaps=gaps))
    _fold(plan, view_plan, watch(events) if watch is not None else events, keep, stats)
    if plan.bad:
        plan.counts = dict(before)
        plan.events = []
        if keep is not None:
            keep.clear()
        skip = {b.lineno for b in plan.bad}
        view_plan = plan_view(_good_events(session, skip, plan.end))
        _fold(plan, view_plan, _good_events(session, skip, plan.end), keep)
        plan.counts["invalid_line"] = len(plan.bad)
    elif plan.last_seq < 0 and plan.torn is None:
        raise DataError("no events: a log starts with its session event", path=session.display)
    if plan.missing:
        plan.counts["missing_seq"] = len(plan.missing)
    plan.facts = {"first": facts.first, "title": facts.title, "model": facts.model, "last_ts": facts.last_ts, "count": facts.count, "last_seq": plan.last_seq}
    plan.summary = _summary_state(session, plan)
    if plan.summary:
        plan._count(f"{plan.summary}_summary")
    return plan


def _fold(plan: RepairPlan, view_plan: Any, events: Iterable[dict[str, Any]], keep: list[Any] | None, stats: Any = None) -> None:
    """The view pass: event-level fixes on the way in, pairing fixes on the items out."""
    pairs = _PairPlanner(plan)
    fixes = _EventFixes(view_plan, plan)
    for vi in iter_view(fixes.wrap(events), view_plan, stats=stats):
        pairs.feed(vi.item)
        if keep is not None:
            keep.append(vi)
    pairs.finish()


def _good_events(session: Session, skip: set[int], end: int) -> Iterator[dict[str, Any]]:
    """Pass 2: the lines pass 1 found good, up to where pass 1 stopped (a concurrent append is left out)."""
    loads = orjson.loads
    for raw in raw_lines(session.log_path, session.display, warn=None):
        if raw.offset >= end:
            return
        if raw.lineno not in skip:
            yield loads(raw.data)


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


def refuse_mostly_invalid(plan: RepairPlan, *, force: bool) -> None:
    """Quarantining most of a log is never silent: more than half of its complete lines
    invalid is a data error unless forced (it is likely not a catty-ctx log at all)."""
    if force or not plan.bad or len(plan.bad) * 2 <= plan.lines:
        return

    raise DataError(
        f"{len(plan.bad)} of {plan.lines} lines are not valid catty-ctx events; nothing was changed "
        f"(another agent's session? '{import_hint('auto', plan.display)}' reads it; "
        f"'repair --force' quarantines them)",
        path=plan.display,
    )


def repair_plan(session: Session, *, force: bool = False) -> RepairPlan:
    """What `repair` would do (its --check and --dry-run), refused as `repair` itself refuses:
    a log in another agent's format, or one mostly invalid unless `force`. (A native session
    read in memory, `sources`, is checked as its import: nothing is written.)"""
    if session.origin is None:
        require_ours(session)
    plan = analyse(session)
    refuse_mostly_invalid(plan, force=force)
    return plan


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
    return plan, iter_view(chain(_good_events(session, set(), plan.end), extra), view_plan)


def repaired_items(session: Session) -> tuple[list[dict[str, Any]], list[str]]:
    """The repaired view as a list of items, and what was repaired (short phrases)."""
    plan, stream = repaired_view(session)
    return [vi.item for vi in stream], plan.notes()
