"""Repair's plan: find what makes a session unloadable or unsendable (docs/design.md#m5, `repair`).

The repair planner (`analyse`) goes further than grok-build, which repairs only at fixed
boundaries: in two streaming passes it finds a torn tail, invalid lines, duplicated calls
and streaming snapshots, duplicate, orphan and displaced results, dangling calls and a
missing or stale summary.json. `fix` applies the plan.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from ..errors import DataError, ExitCode
from ..formats.ownership import import_hint, require_ours
from ..session.batch import cut_span
from ..session.events import check_event
from ..session.jsonl import json_problem, last_newline_end, raw_lines
from ..session.store import Session, new_summary, session_title
from ..view.fold import iter_view, plan_file, plan_view
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
    cut: tuple[int, int] | None = None  # (offset, bytes) of a batch a killed writer cut short (settled by any writer's lock)
    bad: list[BadLine] = field(default_factory=list)
    missing: list[int] = field(default_factory=list)  # seqs with no line at all
    events: list[dict[str, Any]] = field(default_factory=list)  # repair events to append
    summary: str | None = None  # missing | stale | invalid, when summary.json needs a rebuild
    counts: dict[str, int] = field(default_factory=dict)
    end: int = 0  # bytes of complete lines when analysed
    lines: int = 0  # complete lines when analysed
    last_seq: int = -1
    facts: dict[str, Any] = field(default_factory=dict)  # what a rebuilt summary.json needs
    unread: list[str] = field(default_factory=list)  # a native session's source lines its reading skipped

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
        if self.cut is not None:
            rows.append({"action": "quarantine", "reason": "cut_batch", "offset": self.cut[0], "bytes": self.cut[1]})
        for b in self.bad:
            rows.append({"action": "quarantine", "reason": "invalid_line", "line": b.lineno, "offset": b.offset, "bytes": b.length, "seq": b.seq, "problem": b.reason})
        for s in self.missing:
            rows.append({"action": "gap", "reason": "missing_seq", "seq": s})
        for ev in self.events:
            if ev["action"] in ("drop", "answer"):
                rows.append({k: ev[k] for k in ("action", "reason", "target_seq", "call_id") if k in ev})
        for where in self.unread:  # (the agent's file is not ours to change: named, never fixed)
            rows.append({"action": "none", "reason": "unread_source_line", "source": where})
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
    cut = cut_span(session.log_path) if not session.stdin else None
    if cut is not None:  # (its torn line, if any, is part of it)
        plan.cut = (cut[0], cut[1] - cut[0])
        plan._count("cut_batch")
    elif size > complete:
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
        view_plan = plan_view(good_events(session, skip, plan.end))
        _fold(plan, view_plan, good_events(session, skip, plan.end), keep)
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


def good_events(session: Session, skip: set[int], end: int) -> Iterator[dict[str, Any]]:
    """Pass 2: the lines pass 1 found good, up to where pass 1 stopped (a concurrent append is left out)."""
    loads = orjson.loads
    for raw in raw_lines(session.log_path, session.display, warn=None):
        if raw.offset >= end:
            return
        if raw.lineno not in skip:
            yield loads(raw.data)


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
    if session.origin is not None and session.origin.get("unread"):  # a check never says "fine" over what it skipped
        plan.unread = list(session.origin["unread"])
        plan.counts["unread_source_line"] = len(plan.unread)
    return plan


