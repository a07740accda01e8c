"""Usage records of a Grok Build session's `updates.jsonl`: each `turn_completed` line carrying
`usage` gives one record per model of its `modelUsage` (docs/usage.md#grok-build).

Grok folds a turn's calls, its subagents' included, into that line: `inputTokens` is the whole
prompt (cached reads included, so the record's input is the uncached rest), `reasoningTokens`
a part of `outputTokens`, `costUsdTicks` the server's own cost in 10⁻¹⁰ USD (none when absent,
partial or zero: absent is not free). A subagent child's own folder repeats what its parent's
turn already counts: a walk passes children over (`walk`), a child named as the PATH counts, as
`grok usage CHILD` does. A fork copies its parent's lines: the
prompt id keys each record, so the copies collapse into one call when both are read.
Side calls (titles, turn summaries) and compactions are recorded by no release so far.
"""
from __future__ import annotations

import os
from typing import Any

from ..formats import grok as layout
from ..session.jsonl import marked_lines
from .lines import count, json_object
from .records import MAIN_AGENT, UNKNOWN_MODEL, Record
from .times import epoch

MARK = b'"turn_completed"'
TICKS_PER_USD = 10_000_000_000


def project_of(path: str) -> str:
    """The working directory the session's bucket stands for ('' when it tells none)."""
    return layout.bucket_cwd(os.path.dirname(os.path.dirname(os.path.abspath(path)))) or ""


def records_of(update: dict[str, Any], stamp: float, session: str, project: str) -> list[Record]:
    """The records of one `turn_completed` update (none without usage: an unbilled error turn)."""
    u = update.get("usage")
    if type(u) is not dict:
        return []
    per_model = u.get("modelUsage")
    rows: Any = per_model.items() if type(per_model) is dict and per_model else [(None, u)]
    pid = update.get("prompt_id")
    out = []
    for model, m in rows:
        if type(m) is not dict:
            continue
        cached = count(m.get("cachedReadTokens"))
        ticks = m.get("costUsdTicks")
        cost = ticks / TICKS_PER_USD if type(ticks) is int and ticks > 0 and not u.get("costIsPartial") else None
        name = model if type(model) is str and model else UNKNOWN_MODEL
        out.append(Record(stamp, name, max(count(m.get("inputTokens")) - cached, 0), count(m.get("outputTokens")), cached,
                          count(m.get("cacheCreationTokens")), count(m.get("reasoningTokens")), cost,
                          f"x\0{pid}\0{name}" if type(pid) is str and pid else None, False, MAIN_AGENT, session, project,
                          False, None, None))
    return out


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of [start, end) to RECS and the bad lines to BAD; the state is the session id."""
    folder = os.path.dirname(os.path.abspath(path))
    session = state if type(state) is str else os.path.basename(folder)
    project = project_of(path)
    for off, line in marked_lines(mm, start, end, MARK):
        obj = json_object(line, off, bad)
        if obj is None:
            continue
        params = obj.get("params") if "method" in obj else obj
        update = params.get("update") if type(params) is dict else None
        if type(update) is not dict or update.get("sessionUpdate") != "turn_completed":
            continue
        assert type(params) is dict  # (it holds the update)
        sid = params.get("sessionId")
        if type(sid) is str and sid:
            session = sid
        meta = params.get("_meta")
        ms = meta.get("agentTimestampMs") if type(meta) is dict else None
        ts = obj.get("timestamp")
        stamp = ms / 1000 if type(ms) is int else float(ts) if type(ts) is int and ts > 0 else epoch(ts)
        if stamp is None:
            bad.append((off, "a turn's usage without a timestamp"))
            continue
        recs.extend(records_of(update, stamp, session, project))
    return session
