"""Repair at the write boundaries, persisted (docs/design.md#m5b).

A conversation's calls and results pair up only once its turn is over: while a turn runs,
a call without its result is a tool still running, parallel calls included. So the repairs
a provider needs are written where a turn is known to be over — a new user turn, a
cancellation, a compaction's replacement, a fork — and nowhere else. Each boundary that
finds something appends one `repair` event (action `answer` with the calls it answers, or
`drop` for a result no call in the view declares) with its `count` and `reason`
(`new_turn`, `cancelled`, `compaction`, `fork`), under the same lock as the event that
closes the turn, so the same provider refusal never recurs and the record says why.

An append at a new turn reads only the turn it closes (backwards from the end: every
earlier turn was closed by a boundary of its own); only a turn with a call or result left
over pays for the view (rewinds, compactions and earlier repairs applied) that decides what
is really dangling.
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from typing import Any

import orjson

from ..defaults import DEFAULT_LOCK_TIMEOUT
from ..session.event_ids import KnownIds, event_key, split_known
from ..session.jsonl import Warn, last_newline_end, scan_marked
from ..session.store import Session, prepare_event
from .fold import SHAPE_AND_TURN_MARKERS, iter_view, plan_view, scan_markers
from .integrity import NOT_EXECUTED, PairingChecker

BOUNDARY_TEXT = {
    "new_turn": NOT_EXECUTED,
    "cancelled": "This tool call was cancelled before its result was recorded (answer added by catty-ctx).",
    "compaction": NOT_EXECUTED,
    "fork": NOT_EXECUTED,
}
# A user message whose `synthetic` says the turn was stopped (the importers' word, and the runtimes').
CANCEL_MARKS = frozenset({"interrupted", "cancelled", "canceled"})
_TOOL_LINES = re.compile(rb'"(?:tool_call|tool_result|repair)"')


def boundary_reason(ev: dict[str, Any]) -> str | None:
    """`new_turn` or `cancelled` when EV closes its agent's turn, else None."""
    if ev.get("kind") != "message" or ev.get("role") != "user":
        return None
    synthetic = ev.get("synthetic")
    if not synthetic:
        return "new_turn"
    return "cancelled" if synthetic in CANCEL_MARKS else None


_CHUNK = 1 << 20


def turn_start(log_path: Any, agents: set[str | None]) -> int:
    """The offset of the line of the last real user message of one of AGENTS (0: none): read
    backwards by chunks, so an append at a new turn costs the turn it closes, not the log."""
    fd = os.open(log_path, os.O_RDONLY)
    try:
        end = os.fstat(fd).st_size
        tail = b""  # the start of a line the previous chunk cut
        while end > 0:
            start = max(0, end - _CHUNK)
            data = os.pread(fd, end - start, start) + tail
            first = data.find(b"\n") + 1 if start > 0 else 0  # a line cut at the chunk's start is read with the next chunk
            if start > 0 and first == 0:  # no line starts in this chunk: all of it belongs to a line begun earlier
                tail, end = data, start
                continue
            lines_end = len(data)
            while True:
                at = data.rfind(b'"user"', first, lines_end)
                if at < 0:
                    break
                nl = data.rfind(b"\n", first, at)
                line_start = nl + 1 if nl >= 0 else first
                line_end = data.find(b"\n", at)
                try:
                    ev = orjson.loads(data[line_start:line_end if line_end >= 0 else len(data)])
                except orjson.JSONDecodeError:
                    ev = None
                if isinstance(ev, dict) and boundary_reason(ev) == "new_turn" and ev.get("agent") in agents:
                    return start + line_start
                lines_end = line_start
            tail = data[:first]
            end = start
        return 0
    finally:
        os.close(fd)


def _leftover_agents(session: Session, extra: list[dict[str, Any]], *, start: int = 0) -> set[str | None]:
    """The agents with a call or result not matched by id in the log from START and in EXTRA
    (cheap: a byte scan of the tool lines)."""
    open_calls: dict[str | None, set[str]] = {}
    results: dict[str | None, set[str]] = {}

    def feed(ev: dict[str, Any]) -> None:
        kind = ev.get("kind")
        agent = ev.get("agent")
        if kind == "tool_call" and isinstance(ev.get("call_id"), str):
            open_calls.setdefault(agent, set()).add(ev["call_id"])
        elif kind == "tool_result" and isinstance(ev.get("call_id"), str):
            results.setdefault(agent, set()).add(ev["call_id"])
        elif kind == "repair":
            for cid in _answered(ev):
                results.setdefault(agent, set()).add(cid)

    for _, line in scan_marked(session.log_path, _TOOL_LINES, start=start):
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if isinstance(ev, dict):
            feed(ev)
    for ev in extra:
        feed(ev)
    agents = {a for a, calls in open_calls.items() if calls - results.get(a, set())}
    return agents | {a for a, got in results.items() if got - open_calls.get(a, set())}


def _answered(ev: dict[str, Any]) -> list[str]:
    if ev.get("action") != "answer":
        return []
    ids = ev.get("call_ids")
    if isinstance(ids, list):
        return [c for c in ids if isinstance(c, str)]
    return [ev["call_id"]] if isinstance(ev.get("call_id"), str) else []


def view_problems(events: Iterable[dict[str, Any]], markers: list[dict[str, Any]], *, agent: str | None) -> tuple[PairingChecker, int]:
    """The pairing problems of AGENT's view of EVENTS, and the seq of its last real user message."""
    plan = plan_view(markers, agent=agent)
    checker = PairingChecker(keep=1 << 30)
    last_user = -1
    for vi in iter_view(events, plan, agent=agent):
        item = vi.item
        if item.get("role") == "user" and not item.get("synthetic") and isinstance(item.get("seq"), int):
            last_user = item["seq"]
        checker.feed(item)
    return checker.finish(), last_user


def plan_repairs(problems: PairingChecker, reason: str, *, open_after: int | None = None, agent: str | None = None) -> list[dict[str, Any]]:
    """The repair events for PROBLEMS: dangling calls answered (except those made after
    OPEN_AFTER, a turn still open: tools running), results no call declares dropped."""
    answer: list[str] = []
    drops: list[int] = []
    for p in problems.found:
        if p.kind == "dangling" and (open_after is None or p.seq is None or p.seq < open_after):
            if p.call_id not in answer:
                answer.append(p.call_id)
        elif p.kind == "orphan" and isinstance(p.seq, int):
            drops.append(p.seq)
    out: list[dict[str, Any]] = []
    tag = {"agent": agent} if agent is not None else {}
    if answer:
        out.append({"kind": "repair", "action": "answer", "call_ids": answer, "count": len(answer), "reason": reason,
                    "text": BOUNDARY_TEXT[reason], **tag})
    for seq in drops:
        out.append({"kind": "repair", "action": "drop", "target_seq": seq, "count": 1, "reason": reason, **tag})
    return out


def _markers(session: Session) -> list[dict[str, Any]]:
    return list(scan_markers(session.log_path, SHAPE_AND_TURN_MARKERS))


def _session_events(session: Session, batch: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    yield from session.events(warn=None)
    yield from batch


def with_boundary_repairs(session: Session, pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """PENDING with the repairs its turn boundaries need put before the last boundary of
    each agent (the caller holds the lock; nothing is written here)."""
    last: dict[str | None, int] = {}
    for i, ev in enumerate(pending):
        if boundary_reason(ev) is not None:
            last[ev.get("agent")] = i
    if not last or last_newline_end(session.log_path) == 0:
        return pending
    # Every earlier turn was closed by a boundary that repaired it (an older log: `repair`), so
    # only the turn this batch closes can hold a call left over.
    leftover = _leftover_agents(session, pending, start=turn_start(session.log_path, set(last)))
    inserts: dict[int, list[dict[str, Any]]] = {}
    next_seq = session.next_seq()
    for agent, at in last.items():
        if agent not in leftover:
            continue
        before = [prepare_event(ev, next_seq + i) for i, ev in enumerate(pending[:at])]
        markers = [*_markers(session), *before]
        problems, _ = view_problems(_session_events(session, before), markers, agent=agent)
        reason = boundary_reason(pending[at])
        assert reason is not None
        found = plan_repairs(problems, reason, agent=agent)
        if found:
            inserts.setdefault(at, []).extend(found)
    if not inserts:
        return pending
    out: list[dict[str, Any]] = []
    for i, ev in enumerate(pending):
        out.extend(inserts.get(i, ()))
        out.append(ev)
    return out


def append_with_repairs(
    session: Session,
    events: Iterable[dict[str, Any]],
    *,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    warn: Warn | None = None,
    allow_duplicate_ids: bool = False,
    repair: bool = True,
) -> list[dict[str, Any]]:
    """`Session.append` with the boundary repairs (REPAIR) written in the same locked step:
    events already in the log (by id) are left out first, so a retried append repairs nothing twice."""
    pending = [dict(ev) for ev in events]
    if not repair:
        return session.append(pending, lock_timeout=lock_timeout, warn=warn, allow_duplicate_ids=allow_duplicate_ids)
    with session.lock(lock_timeout):
        if not allow_duplicate_ids and any(event_key(ev) is not None for ev in pending):
            known = KnownIds(session.log_path, last_newline_end(session.log_path))
            pending, skipped = split_known(pending, known)
            if skipped and warn:
                warn(f"{session.display}: {len(skipped)} event(s) already in the log (same id) not appended again")
        return session.append_locked(with_boundary_repairs(session, pending), warn=warn)


def _late_results(session: Session, through: int | None) -> bool:
    """Whether a main-loop result after THROUGH (the latest compaction's) answers a call at or
    before it: a result that came in while the summariser ran, an orphan once the head replaces
    its call, though the raw log pairs it by id (a byte scan of the tool lines)."""
    if through is None:
        return False
    calls: dict[str, int] = {}
    late: list[str] = []
    for _, line in scan_marked(session.log_path, _TOOL_LINES):
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        if not isinstance(ev, dict) or ev.get("agent") is not None or not isinstance(ev.get("call_id"), str) or type(ev.get("seq")) is not int:
            continue
        if ev.get("kind") == "tool_call":
            calls.setdefault(ev["call_id"], ev["seq"])
        elif ev.get("kind") == "tool_result" and ev["seq"] > through:
            late.append(ev["call_id"])
    return any(calls.get(cid, through + 1) <= through for cid in late)


def new_view_repairs(session: Session, pending: list[dict[str, Any]], reason: str, *, closed_only: bool) -> list[dict[str, Any]]:
    """The repairs the main loop's view needs once PENDING (a compaction, say) is appended: the
    caller holds the lock and appends them right after PENDING, in the same write. With
    CLOSED_ONLY, calls of the turn still open are left alone (tools running)."""
    next_seq = session.next_seq()
    before = [prepare_event(ev, next_seq + i) for i, ev in enumerate(pending)]
    markers = [*_markers(session), *before]
    folds = [m for m in markers if m.get("kind") == "compaction" and m.get("agent") is None and type(m.get("through_seq")) is int]
    through = folds[-1]["through_seq"] if folds else None
    if None not in _leftover_agents(session, before) and not _late_results(session, through):
        return []
    problems, last_user = view_problems(_session_events(session, before), markers, agent=None)
    return plan_repairs(problems, reason, open_after=last_user if closed_only else None)


def repair_new_head(session: Session, reason: str, *, closed_only: bool, lock_timeout: float = DEFAULT_LOCK_TIMEOUT) -> list[dict[str, Any]]:
    """After a fork's commit: the repairs the new view needs, appended (see new_view_repairs)."""
    with session.lock(lock_timeout):
        found = new_view_repairs(session, [], reason, closed_only=closed_only)
        return session.append_locked(found, warn=None) if found else []


def repair_count(events: Iterable[dict[str, Any]]) -> int:
    """How many calls and results the repair events among EVENTS fixed."""
    n = 0
    for ev in events:
        if ev.get("kind") == "repair" and ev.get("action") in ("answer", "drop"):
            n += ev["count"] if type(ev.get("count")) is int else 1
    return n
