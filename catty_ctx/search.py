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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from .errors import CattyError, NoConversation, UsageError
from .index import Index, Report, Texts, index_path, needles, ranked, read_texts, unit_files
from .index.literals import folds_case
from .patterns import Pattern
from .session.segments import Match as SegmentLine
from .session.segments import matching_lines
from .sources import resolve, root_sessions

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

    def compile(self) -> Pattern:
        """The pattern, its matching time bounded (`patterns`): a bad one is a UsageError."""
        return Pattern(self.pattern, regex=self.regex, ignore_case=self.ignore_case)

    def needle(self) -> bytes | None:
        """The bytes a file holding a match must hold (the pattern as JSON escapes it), or None
        when no such prefilter is safe (a regular expression, a case-insensitive non-ASCII one)."""
        if self.regex or (self.ignore_case and not self.pattern.isascii()):
            return None
        escaped = orjson.dumps(self.pattern)[1:-1]
        return escaped

    def strings(self) -> tuple[list[str] | None, bool]:
        """The strings every line that matches holds, as the text says them (None: none known),
        and whether they are to be found in any case."""
        if not self.regex:
            return ([self.pattern] if self.pattern and (self.pattern.isascii() or not self.ignore_case) else None), self.ignore_case
        return needles(self.pattern, regex=True, ignore_case=self.ignore_case, needle=None), self.ignore_case or folds_case(self.pattern)


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


def _cut(line: str, m: Any) -> str:
    if len(line) <= CONTEXT_CHARS:
        return line
    start = max(0, m.start() - CONTEXT_CHARS // 3)
    piece = line[start:start + CONTEXT_CHARS]
    return ("…" if start else "") + piece + ("…" if start + CONTEXT_CHARS < len(line) else "")


@dataclass
class Plan:
    """What the index gives a search: each ROOT's sessions (as last walked, brought up to date)
    that may hold a match, and the files that may with their scores (None: every file may)."""

    units: dict[str, list[Any]]
    scores: dict[str, float] | None
    report: Report  # what bringing the index up to date read
    files: dict[str, list[str]]  # each session's indexed files, by str(session)


def plan(roots: list[str], query: Query, *, use_index: bool | None = None, idx: Index | None = None) -> Plan | None:
    """The index's plan for QUERY over ROOTS, when an index (docs/search.md#the-index) covers
    every ROOT (or USE_INDEX says to build it); None otherwise: the search walks and reads.
    IDX: the index, open (else it is opened and closed here)."""
    if use_index is False or (use_index is None and idx is None and not index_path().is_file()) or not roots:
        return None
    if not all(resolve(root).is_root for root in roots):
        return None
    if idx is None:
        with Index() as opened:
            return plan(roots, query, use_index=use_index, idx=opened)
    cover = {root: idx.covering(root) or (os.path.abspath(root) if use_index else None) for root in roots}
    if any(c is None for c in cover.values()):
        return None
    report = idx.update(sorted({c for c in cover.values() if c is not None}))
    files = {k: v for c in {c for c in cover.values() if c is not None} for k, v in idx.unit_paths(c).items()}
    wanted = needles(query.pattern, regex=query.regex, ignore_case=query.ignore_case, needle=query.needle())
    scores = None if wanted is None else idx.candidates(wanted)
    units = {root: idx.units(str(cover[root]), _picker(root, scores, files)) for root in roots}
    return Plan(units, scores, report, files)


def _picker(root: str, scores: dict[str, float] | None, files: dict[str, list[str]]) -> Callable[[str, str], bool]:
    """Whether a session (its key and path, as the index keeps them: absolute) lies under ROOT
    and may hold a match (a file of it the index returned, or no file the index knows)."""
    top = os.path.abspath(root)
    inside = top.rstrip(os.sep) + os.sep

    def pick(key: str, path: str) -> bool:
        if path != top and not path.startswith(inside):
            return False
        known = files.get(key) if scores is not None else None
        return not known or any(p in scores for p in known)  # type: ignore[operator]

    return pick


def search(roots: Iterable[str], query: Query, *, warn: Any = None, use_index: bool | None = None,
           on_error: Callable[[Any, CattyError], None] | None = None) -> Iterator[Match]:
    """Every match of QUERY in the sessions under ROOTS (each a ROOT or one session), in walk
    order; with the index (when one covers the ROOTs, or USE_INDEX), only the sessions whose
    files may hold a match are read, best ranked first (BM25 weighed by recency). Under a ROOT, a
    file that holds no conversation is skipped (a note to WARN), and a session that cannot be
    read goes to ON_ERROR (without it, its error is raised)."""
    rx = query.compile()
    for day, what in ((query.since, "--since"), (query.until, "--until")):
        _day(day, what)  # (a bad day is said before the index is opened)
    roots = list(roots)
    store = Index() if use_index is True or (use_index is None and index_path().is_file()) else None
    try:
        indexed = None if store is None else plan(roots, query, use_index=use_index, idx=store)
        yield from _search(roots, query, rx, indexed, store if indexed is not None else None, warn, on_error)
    finally:
        if store is not None:
            store.close()


def _search(roots: list[str], query: Query, rx: Pattern, indexed: Plan | None, store: Index | None, warn: Any,
            on_error: Callable[[Any, CattyError], None] | None) -> Iterator[Match]:
    needle = query.needle()
    since, until = _day(query.since, "--since"), _day(query.until, "--until")
    left = query.limit
    for root in roots:
        if indexed is not None:
            units = indexed.units[root] if indexed.scores is None else list(ranked(indexed.units[root], indexed.scores, indexed.files))
        else:
            units = root_sessions(root, allow_empty=True) if resolve(root).is_root else [root]
        for unit in units:
            if query.agent is not None and query.agent != getattr(unit, "format", "catty"):
                continue
            files = unit_files(unit)
            if since is not None:
                try:
                    mtime = max(os.stat(f).st_mtime for f in files if f.exists())
                except ValueError:
                    mtime = None
                if mtime is not None and since is not None and mtime < since:
                    continue  # nothing in it was written on or after --since
            if not _holds(files, needle, query.ignore_case):
                continue
            rx.reset()  # each session its budget of matching time
            try:
                found = _matches(read_texts(unit, warn) if store is None else store.texts(unit, warn), rx, query, since, until)
            except NoConversation as exc:
                if unit is root:
                    raise
                if warn is not None:  # (an agent's bookkeeping file under a ROOT: no session, a note)
                    warn(f"skipped {exc.source}: it holds no conversation (no message or tool call)")
                continue
            except CattyError as exc:
                if unit is root or on_error is None:
                    raise
                on_error(unit, exc)  # (named; the other sessions are searched, the output stays whole)
                continue
            for match in found:
                yield match
                if left is not None:
                    left -= 1
                    if left <= 0:
                        return


def _matches(texts: Texts, rx: Pattern, query: Query, since: float | None, until: float | None) -> list[Match]:
    """The matches in one session's TEXTS (read whole before any is shown: a session that fails shows none)."""
    found: list[Match] = []
    events, lines = texts.holding(*query.strings())
    for seq, ts, role, context, start, end in events:
        if (since is not None and ts and _stamp(ts) < since) or (until is not None and ts and _stamp(ts) >= until):
            continue
        text = texts.text(start, end)
        if not rx.holds(text):
            continue
        sid, cwd = texts.contexts[context]
        for line in text.splitlines():
            m = rx.search(line)
            if m:
                found.append(Match(sid, texts.format, cwd, ts or "", seq, role, _cut(line, m), texts.path))
    sid, cwd = texts.contexts[-1]
    if query.project is not None and query.project not in cwd:
        return []
    if texts.segments_error is not None:
        raise texts.segments_error
    segment_lines = (SegmentLine(segment, seq, role, n, texts.text(start, end)) for segment, seq, role, n, start, end in lines)
    for g in matching_lines(rx, segment_lines):
        found.append(Match(sid, texts.format, cwd, texts.last_ts, g.seq, f"segment {g.segment}", g.line, texts.path))
    return found


def _stamp(ts: str) -> float:
    try:
        return datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0
