"""Usage records of a prefire cache: the spend of two-pass compaction's pass 1 before it reaches the log.

`compact --prefire` makes model calls but appends no event: the `usage` events of its calls wait
in `compaction_requests/prefire.json` until the compaction that uses the note (or finds it
stale) appends them to `updates.jsonl` and deletes the cache. Meanwhile the ledger reads them
here. Each event is named by `prefire_call` (`prefire-<uuid>:<i>`: its pass's artifact id and
its index there), which it keeps when appended, so the pending record and the appended one
share a dedupe key (`catty._key`: the provider's request id when there is one, else that name)
and the call counts once whether it sits in the cache, in the log, or in both (a crash between
the append and the cache's removal).

The cache is one small JSON document, rewritten whole (temp + rename): the scan reads it whole
each time it changes (`filescan.scan_file` never resumes this kind). The session and project
of its calls are those of the session's log (its first line, the `session` event).
"""
from __future__ import annotations

import os

from ..session.events import SCHEMA_VERSION, check_event
from ..session.jsonl import first_line
from ..session.layout import LOG_NAME, prefire_spend
from .catty import pending_key, session_state
from .lines import count, json_object, whole
from .records import MAIN_AGENT, Record
from .times import epoch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MARK = b'"spend"'  # (what --strict's line check would look for: this kind is never line-checked)


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of the prefire cache at PATH (read whole: [0, end)) to RECS, what is wrong to BAD."""
    if end <= 0:
        return state
    doc = json_object(mm[0:end], 0, bad)
    if doc is None:
        return state
    if state is None:
        log = os.path.join(os.path.dirname(os.path.dirname(path)), LOG_NAME)
        line = first_line(log)  # (the session event)
        state = session_state(line[:-1] if line and line.endswith(b"\n") else None, log)
    session, cwd = state[0], state[1]
    for ev in prefire_spend(doc):
        problem = check_event({**ev, "v": SCHEMA_VERSION, "seq": 0, "kind": "usage"})
        if problem is None and not (whole(ev["input"]) and whole(ev["output"])):
            problem = "usage count past 64 bits"
        ts = epoch(ev.get("ts"))
        if problem or ts is None:
            bad.append((0, f"prefire spend: {problem or 'bad ts'}"))
            continue
        cost = ev.get("cost_usd")
        recs.append(Record(ts, ev["model"], ev["input"], ev["output"], count(ev.get("cache_read")), count(ev.get("cache_write")),
                           count(ev.get("reasoning")), float(cost) if cost is not None else None,
                           pending_key(ev.get("request_id"), ev["prefire_call"]), False,
                           ev.get("agent") or MAIN_AGENT, session, cwd, ev.get("incomplete") is True, None, None))
    return state
