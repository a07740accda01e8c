"""The matches of a search as reading every session finds them, written apart from `search`:
what its index and its kept texts must answer alike (tests/index)."""
from __future__ import annotations

from pathlib import Path

import orjson

from catty_ctx.errors import CattyError
from catty_ctx.index import event_texts
from catty_ctx.search import Match, Query, _cut
from catty_ctx.session.segments import grep_segments
from catty_ctx.sources import describe, open_session, root_sessions


def oracle(root: Path, query: Query) -> list[str]:
    """The matches as `search` found them before it kept texts: every session read, every text
    and segment line asked (no prefilter, no index), written apart from it."""
    rx = query.compile()
    out = []
    for unit in root_sessions(root, allow_empty=True):
        try:
            s = open_session(unit, warn=None)
        except CattyError:
            continue
        with s:
            who, sid, cwd, last, found = describe(s), "", "", "", []
            try:
                events = list(s.events(warn=None))
            except CattyError:
                continue
            for ev in events:
                ts = ev.get("ts") if isinstance(ev.get("ts"), str) else None
                last = ts or last
                if ev["kind"] == "session":
                    sid, cwd = str(ev.get("session_id") or ""), str(ev.get("cwd") or who.get("cwd") or "")
                for role, text in event_texts(ev):
                    for line in text.splitlines():
                        m = rx.search(line)
                        if m:
                            found.append(Match(sid, str(who["format"]), cwd, ts or "", ev["seq"], role, _cut(line, m), str(who["path"])))
            if s.directory is not None and (s.directory / "segments").is_dir():
                for g in grep_segments(s.directory, query.pattern, matcher=rx):
                    found.append(Match(sid, str(who["format"]), cwd, last, g.seq, f"segment {g.segment}", g.line, str(who["path"])))
            out += found
    return sorted(orjson.dumps(m.row()).decode() for m in out)
