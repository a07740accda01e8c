"""Usage records of a catty log: its `usage` events (grok-build §3.9's `agent` and `incomplete` kept)."""
from __future__ import annotations

import os

import orjson

from ..events import check_event
from .lines import json_object, NL, count, lines_with
from .records import MAIN_AGENT, Record
from .times import epoch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARK = b'"usage"'  # every usage event has it


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]]) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; returns the state to resume from.

    The state is what the session event says: session id, cwd, parent session, forked_from_seq.
    """
    if state is None:
        state = [os.path.basename(os.path.dirname(path)), "", "", ""]  # seq 0 says better, when it is a session event
        nl = mm.find(NL, 0, end)
        if nl > 0:
            try:
                first = orjson.loads(mm[0:nl])
            except orjson.JSONDecodeError:
                first = None
            if type(first) is dict and first.get("kind") == "session":
                fseq = first.get("forked_from_seq")
                state = [str(first.get("session_id") or state[0]), str(first.get("cwd") or ""),
                         str(first.get("parent_session_id") or ""), str(fseq) if type(fseq) is int else ""]
    session, cwd, parent, forked_at = state
    for off, line in lines_with(mm, start, end, MARK):
        ev = json_object(line, off, bad)
        if ev is None:
            continue
        if ev.get("kind") != "usage":
            continue
        problem = check_event(ev)
        ts = epoch(ev.get("ts"))
        if problem or ts is None:
            bad.append((off, problem or "bad 'ts'"))
            continue
        rid = ev.get("request_id")
        # A fork copies its parent's events keeping their seq: the ledger traces a copy to its origin.
        key = f"r\0{rid}" if rid else f"e\0{session}\0{ev['seq']}\0{parent}\0{forked_at}"
        cost = ev.get("cost_usd")
        recs.append(Record(ts, ev["model"], ev["input"], ev["output"], count(ev.get("cache_read")), count(ev.get("cache_write")),
                           count(ev.get("reasoning")), float(cost) if cost is not None else None, key, False,
                           ev.get("agent") or MAIN_AGENT, session, cwd, ev.get("incomplete") is True, None, None))
    return state
