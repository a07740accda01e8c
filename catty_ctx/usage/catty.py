"""Usage records of a catty log: its `usage` events (docs/design.md#m9: `agent` and `incomplete` kept),
and whether a subagent is running by its `subagents` facets (docs/usage.md#incomplete-and-partial-grok-builds-rules).

Marked lines are decoded into a msgspec Struct of the envelope and the usage fields; only an
event that is valid as the store checks it (`events.check_event`) is taken from it. Any other
line (another shape, a field missing, null where it may not be, negative or past 64 bits) is
read again by the general decoder and checked there, so a bad line is named the same way.
"""
from __future__ import annotations

import os
from datetime import datetime
from typing import Annotated

import msgspec
from msgspec import UNSET, UnsetType

from ..formats.calls import CODEX_CALL, CODEX_RUNNING, CODEX_SESSION, codex_running
from ..session.events import SCHEMA_VERSION, check_event
from ..session.jsonl import marked_lines
from .claude import Int64
from .lines import MISMATCH, NL, UNDECODABLE, count, json_object, whole
from .records import MAIN_AGENT, Record
from .times import epoch, moment

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARK = b'"usage"'  # every usage event has it
FACET_MARK = b'"subagents"'  # every `subagents` facet has it
RUNNING = 4  # the parser state's place of the owners ("" the main loop) whose last `subagents` facet lists one running

Count = Annotated[int, msgspec.Meta(ge=0, le=2**63 - 1)] | UnsetType  # (null is not allowed: the general reader says so)


class _Event(msgspec.Struct, gc=False):
    v: int | UnsetType = UNSET
    seq: Count = UNSET
    ts: datetime | UnsetType = UNSET  # RFC 3339, parsed in C (another form: read by the general decoder)
    kind: str | UnsetType = UNSET
    agent: str | None = None
    model: str | UnsetType = UNSET
    input: Count = UNSET
    output: Count = UNSET
    cache_read: Count = UNSET
    cache_write: Count = UNSET
    cache_write_1h: Count = UNSET
    reasoning: Count = UNSET
    cost_usd: Int64 | float | None = None
    request_id: str | None = None
    incomplete: bool | UnsetType = UNSET
    off_branch: bool | UnsetType = UNSET
    prefire_call: str | None = None  # a two-pass pass-1 call: its identity (see `_key`)


_decode_event = msgspec.json.Decoder(_Event).decode


def _general_only(line: bytes) -> _Event:
    raise msgspec.ValidationError("typed decoding off")


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; returns the state to resume from.

    The state is what the session event says: session id, cwd, parent session, forked_from_seq;
    then the owners of a running subagent (`running_session`).
    TYPED False reads every line with the general decoder (what a typed read must equal).
    """
    if state is None:
        nl = mm.find(NL, 0, end)
        state = session_state(mm[0:nl] if nl > 0 else None, path)
    session, cwd, parent, forked_at = state[:RUNNING]
    state = [*state[:RUNNING], _running(mm, start, end, state[RUNNING] if len(state) > RUNNING else [])]
    decode = _decode_event if typed else _general_only
    for off, line in marked_lines(mm, start, end, MARK):
        try:
            e = decode(line)
        except MISMATCH:
            e = None
        if e is not None:
            if e.kind != "usage":
                if type(e.kind) is str:
                    continue  # (a non-empty kind that is not usage; an empty one is the general reader's to name)
            elif (e.v == SCHEMA_VERSION and e.seq is not UNSET and e.ts is not UNSET and e.model is not UNSET
                  and e.input is not UNSET and e.output is not UNSET):  # (a valid usage event: else the general reader says why not)
                ts = moment(e.ts)
                rid = e.request_id
                cost = e.cost_usd
                recs.append(Record(ts, e.model, e.input, e.output, count(e.cache_read), count(e.cache_write), count(e.reasoning),
                                   float(cost) if cost is not None else None, _key(rid, session, e.seq, parent, forked_at, e.prefire_call), False,
                                   e.agent or MAIN_AGENT, session, cwd, e.incomplete is True, None, _alias(rid, session),
                                   min(count(e.cache_write_1h), count(e.cache_write))))
                continue
        ev = json_object(line, off, bad)
        if ev is None:
            continue
        if ev.get("kind") != "usage":
            continue
        problem = check_event(ev) or _past_int64(ev)
        at = epoch(ev.get("ts"))
        if problem or at is None:
            bad.append((off, problem or "bad 'ts'"))
            continue
        cost = ev.get("cost_usd")
        recs.append(Record(at, ev["model"], ev["input"], ev["output"], count(ev.get("cache_read")), count(ev.get("cache_write")),
                           count(ev.get("reasoning")), float(cost) if cost is not None else None,
                           _key(ev.get("request_id"), session, ev["seq"], parent, forked_at, ev.get("prefire_call")), False,
                           ev.get("agent") or MAIN_AGENT, session, cwd, ev.get("incomplete") is True, None, _alias(ev.get("request_id"), session),
                           min(count(ev.get("cache_write_1h")), count(ev.get("cache_write")))))
    return state


def _running(mm: Any, start: int, end: int, owners: list[str]) -> list[str]:
    """OWNERS (running before START) as the `subagents` facets of [start, end) leave them: the main
    loop ("") or a subagent (its name) whose last facet lists a subagent with status running."""
    now = dict.fromkeys(owners, True)
    for _off, line in marked_lines(mm, start, end, FACET_MARK):
        if b'"facet"' not in line:
            continue  # (a message that speaks of subagents: not decoded)
        try:
            ev = msgspec.json.decode(line)
        except UNDECODABLE:
            continue  # (not a usage line: the log's own check names it)
        if type(ev) is dict and ev.get("kind") == "state" and ev.get("facet") == "subagents":
            value = ev.get("value")
            now[str(ev.get("agent") or "")] = type(value) is list and any(type(a) is dict and a.get("status") == "running" for a in value)
    return sorted(owner for owner, running in now.items() if running)


def running_session(state: Any) -> str | None:
    """The session of a catty log's parser STATE when a subagent of it is running (its calls are
    not all logged yet: the bill is incomplete), else None."""
    if type(state) is list and len(state) > RUNNING and state[RUNNING]:
        return str(state[0])
    return None


def session_state(first_line: bytes | None, log_path: str) -> list[str]:
    """What the session event (seq 0, FIRST_LINE of the log at LOG_PATH) says: [session id, cwd,
    parent session id, forked_from_seq]; the folder's name for the id when it is not one."""
    state = [os.path.basename(os.path.dirname(log_path)), "", "", ""]
    if first_line:
        try:
            first = msgspec.json.decode(first_line)
        except UNDECODABLE:
            first = None
        if type(first) is dict and first.get("kind") == "session":
            fseq = first.get("forked_from_seq")
            state = [str(first.get("session_id") or state[0]), str(first.get("cwd") or ""),
                     str(first.get("parent_session_id") or ""), str(fseq) if type(fseq) is int else ""]
    return state


def _past_int64(ev: dict[str, Any]) -> str | None:
    """What the store's own reader (orjson, which reads such a number as a float) would find wrong."""
    for name in ("input", "output"):
        if not whole(ev[name]):
            return f"usage field '{name}' must be an integer"
    return None


def _alias(rid: Any, session: str) -> str | None:
    """The uuid of a Codex call: the name its session's running totals give it (`formats.calls.codex_running`),
    which the rollout's record carries too, so `copies.collapse` meets a proxy's copy of it (named so) and
    an import's (named by its time and totals, in a session of the rollout's id) however they are mixed."""
    if type(rid) is not str or rid[:5] != "codex":
        return None
    if rid.startswith(CODEX_SESSION):
        return rid
    if rid.startswith(CODEX_CALL):
        return codex_running(session, rid.rsplit(":", 1)[1].split(",")[:len(CODEX_RUNNING)])
    return None


def _key(rid: Any, session: str, seq: int, parent: str, forked_at: str, call: Any = None) -> str:
    # A fork copies its parent's events keeping their seq: the ledger traces a copy to its origin.
    # A pass-1 call of two-pass compaction is named by `prefire_call` (its pass's artifact id and
    # its index) from the start: it is counted from the prefire cache before it has a seq here.
    if rid:
        return f"r\0{rid}"
    return f"p\0{call}" if call and type(call) is str else f"e\0{session}\0{seq}\0{parent}\0{forked_at}"


def pending_key(rid: Any, call: str) -> str:
    """The key of a pass-1 call read from the prefire cache: the one its appended event will have."""
    return _key(rid, "", 0, "", "", call)
