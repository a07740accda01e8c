"""`search`: which session had that error? A pattern across every session under some ROOTs.

Catty sessions and the agents' own files (through `sources`, imported in memory) are read
alike, and so are the segments archives of catty sessions, where compacted spans are kept.
Most sessions hold no match, so each file is first searched as bytes (the pattern as JSON
writes it) and only a file that holds it is parsed; `--since`/`--until` skip a file by its
modification time before it is opened. A match names its session, agent, project folder,
date, seq, role or tool, and the line it is on.
"""
from __future__ import annotations

import mmap
import os
import re
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from .errors import UsageError
from .index import Index, Report, index_path, needles, ranked, unit_files
from .session.segments import grep_segments
from .sources import describe, open_session, resolve, root_sessions

CONTEXT_CHARS = 160  # a match's line is cut around the match to this many characters


@dataclass
class Match:
    session: str  # the session's id
    agent: str  # catty, claude, codex, gemini, opencode
    cwd: str
    date: str  # the event's timestamp (or the segment's)
    seq: int | None
    role: str  # user, assistant, tool:NAME, compaction, segment N
    line: str
    path: str  # where the session lies: what `inspect` takes

    def row(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class Query:
    pattern: str
    regex: bool = False
    ignore_case: bool = False
    since: str | None = None  # YYYY-MM-DD, inclusive
    until: str | None = None
    project: str | None = None  # a part of the session's cwd
    agent: str | None = None  # a format name: catty, claude, codex, ...
    limit: int | None = None

    def compile(self) -> re.Pattern[str]:
        try:
            return re.compile(self.pattern if self.regex else re.escape(self.pattern), re.I if self.ignore_case else 0)
        except re.error as exc:
            raise UsageError(f"bad regular expression {self.pattern!r}: {exc}") from None

    def needle(self) -> bytes | None:
        """The bytes a file holding a match must hold (the pattern as JSON escapes it), or None
        when no such prefilter is safe (a regular expression, a case-insensitive non-ASCII one)."""
        if self.regex or (self.ignore_case and not self.pattern.isascii()):
            return None
        escaped = orjson.dumps(self.pattern)[1:-1]
        return escaped


def _day(value: str | None, what: str) -> float | None:
    if value is None:
        return None
    try:
        day = datetime.strptime(value, "%Y-%m-%d").replace(tzinfo=timezone.utc)
    except ValueError:
        raise UsageError(f"{what} must be a day (YYYY-MM-DD), not {value!r}") from None
    return day.timestamp() + (86_400 if what == "--until" else 0)


def _holds(files: list[Path], needle: bytes | None, lower: bool) -> bool:
    """Whether any of FILES holds NEEDLE as bytes (mapped, not read into memory)."""
    if needle is None:
        return True
    folded = re.compile(re.escape(needle), re.I) if lower else None
    for f in files:
        if not f.is_file():
            return True  # a storage tree or database: only its reader knows
        try:
            with open(f, "rb") as fh:
                if os.fstat(fh.fileno()).st_size == 0:
                    continue
                with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                    if (folded.search(data) is not None) if folded is not None else data.find(needle) >= 0:
                        return True
        except (OSError, ValueError):
            return True  # the reader will say what is wrong
    return False


def _cut(line: str, m: re.Match[str]) -> str:
    if len(line) <= CONTEXT_CHARS:
        return line
    start = max(0, m.start() - CONTEXT_CHARS // 3)
    piece = line[start:start + CONTEXT_CHARS]
    return ("…" if start else "") + piece + ("…" if start + CONTEXT_CHARS < len(line) else "")


def _texts(ev: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(role or tool, text) of what an event says."""
    kind = ev["kind"]
    if kind == "message":
        yield str(ev.get("role")), str(ev.get("text") or "")
    elif kind == "tool_call":
        args = ev.get("args")
        yield f"tool:{ev.get('name')}", args if isinstance(args, str) else orjson.dumps(args).decode()
    elif kind == "tool_result":
        yield "tool result", str(ev.get("output") or "")
    elif kind == "compaction":
        yield "compaction", str(ev.get("summary") or "")


@dataclass
class Plan:
    """What the index gives a search: each ROOT's sessions (as last walked, brought up to date),
    and the files that may hold a match with their scores (None: every file may)."""

    units: dict[str, list[Any]]
    scores: dict[str, float] | None
    report: Report  # what bringing the index up to date read


def plan(roots: list[str], query: Query, *, use_index: bool | None = None) -> Plan | None:
    """The index's plan for QUERY over ROOTS, when an index (docs/search.md#the-index) covers
    every ROOT (or USE_INDEX says to build it); None otherwise: the search walks and reads."""
    if use_index is False or (use_index is None and not index_path().is_file()) or not roots:
        return None
    if not all(resolve(root).is_root for root in roots):
        return None
    with Index() as idx:
        cover = {root: idx.covering(root) or (os.path.abspath(root) if use_index else None) for root in roots}
        if any(c is None for c in cover.values()):
            return None
        report = idx.update(sorted({c for c in cover.values() if c is not None}))
        units = {root: [u for u in idx.units(str(cover[root])) if _under(u, root)] for root in roots}
        wanted = needles(query.pattern, regex=query.regex, ignore_case=query.ignore_case, needle=query.needle())
        return Plan(units, None if wanted is None else idx.candidates(wanted), report)


def _under(unit: Any, root: str) -> bool:
    top = os.path.abspath(root)
    where = os.path.abspath(str(getattr(unit, "path", unit)))
    return where == top or where.startswith(top.rstrip(os.sep) + os.sep)


def search(roots: Iterable[str], query: Query, *, warn: Any = None, use_index: bool | None = None) -> Iterator[Match]:
    """Every match of QUERY in the sessions under ROOTS (each a ROOT or one session), in walk
    order; with the index (when one covers the ROOTs, or USE_INDEX), only the sessions whose
    files may hold a match are read, best ranked first (BM25 weighed by recency)."""
    rx = query.compile()
    needle = query.needle()
    since, until = _day(query.since, "--since"), _day(query.until, "--until")
    left = query.limit
    roots = list(roots)
    indexed = plan(roots, query, use_index=use_index)
    for root in roots:
        if indexed is not None:
            units = indexed.units[root] if indexed.scores is None else list(ranked(indexed.units[root], indexed.scores))
        else:
            units = root_sessions(root, allow_empty=True) if resolve(root).is_root else [root]
        for unit in units:
            if query.agent is not None and query.agent != getattr(unit, "format", "catty"):
                continue
            files = unit_files(unit)
            if indexed is not None and indexed.scores is not None and all(f.is_file() for f in files) \
                    and not any(str(f) in indexed.scores for f in files):
                continue  # the index: no file of this session holds the pattern
            if since is not None:
                try:
                    mtime = max(os.stat(f).st_mtime for f in files if f.exists())
                except ValueError:
                    mtime = None
                if mtime is not None and since is not None and mtime < since:
                    continue  # nothing in it was written on or after --since
            if not _holds(files, needle, query.ignore_case):
                continue
            with open_session(unit, warn=warn) as s:
                who = describe(s)
                sid, cwd, last_ts = "", "", None
                found: list[Match] = []
                for ev in s.events(warn=warn):
                    ts = ev.get("ts") if isinstance(ev.get("ts"), str) else None
                    last_ts = ts or last_ts
                    if ev["kind"] == "session":
                        sid, cwd = str(ev.get("session_id") or ""), str(ev.get("cwd") or who.get("cwd") or "")
                        continue
                    if (since is not None and ts and _stamp(ts) < since) or (until is not None and ts and _stamp(ts) >= until):
                        continue
                    for role, text in _texts(ev):
                        for line in text.splitlines():
                            m = rx.search(line)
                            if m:
                                found.append(Match(sid, str(who.get("format")), cwd, ts or "", ev["seq"], role, _cut(line, m), str(who.get("path"))))
                if query.project is not None and query.project not in cwd:
                    continue
                if s.directory is not None and (s.directory / "segments").is_dir():
                    for g in grep_segments(s.directory, query.pattern, regex=query.regex, ignore_case=query.ignore_case):
                        found.append(Match(sid, str(who.get("format")), cwd, last_ts or "", g.seq, f"segment {g.segment}", g.line, str(who.get("path"))))
                for match in found:
                    yield match
                    if left is not None:
                        left -= 1
                        if left <= 0:
                            return


def _stamp(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
