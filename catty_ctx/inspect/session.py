"""`inspect`: what a session (or a request read from a pipe) holds, in one streaming pass.

Counts by kind and role, turns, the view's estimated tokens against the window, the largest
items, compactions, pairing problems and the prefix fingerprint, without holding the log or
the view in memory.
"""
from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..defaults import DEFAULT_THRESHOLD
from ..errors import CattyError, DataError, UsageError
from ..fleet.cluster import Engine
from ..fleet.runner import RootRun
from ..session.events import DEFAULT_WINDOW, Event
from ..session.jsonl import json_problem, raw_lines
from ..session.store import Session, session_window
from ..sources import open_session, root_sessions
from ..view.fingerprint import Chain, canonical
from ..view.fold import ViewItem, ViewStats, iter_view, plan_file
from ..view.integrity import PairingChecker
from ..view.tokens import item_tokens, percent_of, threshold_status
from .two_cores import CHUNK_BYTES, can_split, fold_split

if TYPE_CHECKING:
    from ..fleet.cluster import Engine

LARGEST = 5


class _Largest:
    """The n largest items by tokens (earlier index first on ties), kept in a small heap."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.heap: list[tuple[int, int, int | None, str]] = []

    def add(self, index: int, tokens: int, item: dict[str, Any]) -> None:
        self.add_entry((tokens, -index, item.get("seq"), item["role"]))

    def add_entry(self, entry: tuple[int, int, int | None, str]) -> None:
        if len(self.heap) < self.n:
            heapq.heappush(self.heap, entry)
        elif entry > self.heap[0]:
            heapq.heapreplace(self.heap, entry)

    def rows(self) -> list[dict[str, Any]]:
        return [{"index": -neg, "seq": seq, "role": role, "tokens": t} for t, neg, seq, role in sorted(self.heap, reverse=True)]


class Tally:
    """What inspect keeps of each view item: pairing problems and the largest items."""

    def __init__(self, largest: int = LARGEST) -> None:
        self.checker = PairingChecker()
        self.top = _Largest(largest)
        self.index = 0

    def add(self, vi: ViewItem) -> None:
        self.checker.feed(vi.item)
        self.top.add(self.index, vi.tokens, vi.item)
        self.index += 1


# Where a report's `tokens` comes from: the context size the provider reported for the last
# request (plus the estimates of the items after it), or the sum of the items' estimates.
PROVIDER_USAGE, ESTIMATE = "provider_usage", "estimate"


def _tokens_origin(stats: ViewStats) -> dict[str, Any]:
    return {
        "tokens_from": PROVIDER_USAGE if stats.usage_seen else ESTIMATE,
        "usage_seq": stats.usage_seq if stats.usage_seen else None,
        "pending_tokens": stats.since_usage if stats.usage_seen else 0,
        "estimated_tokens": stats.sum_tokens,
    }


def _compaction_row(ev: Event) -> dict[str, Any]:
    keys = ("seq", "id", "mode", "through_seq", "trigger", "tokens_before", "tokens_after", "agent")
    return {k: ev.get(k) for k in keys}  # every key, null where the event has none (docs/json.md)


def is_item_stream(session: Session) -> bool:
    """An item stream (prune / resume output) has `role` and no `kind` on its lines."""
    for raw in raw_lines(session.log_path, session.display, warn=None):
        try:
            first = orjson.loads(raw.data)
        except orjson.JSONDecodeError:
            return False
        return isinstance(first, dict) and "role" in first and "kind" not in first
    return False


def _torn_counter(problems: dict[str, int], warn: Callable[[str], None] | None) -> Callable[[str], None]:
    def on_warn(message: str) -> None:
        problems["torn"] += 1
        if warn:
            warn(message)

    return on_warn


def inspect_session(
    session: Session,
    *,
    warn: Callable[[str], None] | None = None,
    largest: int = LARGEST,
    progress: Callable[[int], None] | None = None,
    parallel: bool | None = None,
    chunk_bytes: int | None = None,
) -> dict[str, Any]:
    """The inspect report of a session or of a piped event or item stream.

    `parallel` (default: for a large log, where a second CPU and fork exist) folds every
    other chunk of `chunk_bytes` in a forked worker; the report is the same either way.
    """
    if session.stdin and is_item_stream(session):
        return inspect_items(session, warn=warn, largest=largest)
    problems = {"dangling": 0, "orphan": 0, "duplicate": 0, "torn": 0, "invalid": 0}
    stats = ViewStats()
    tally = Tally(largest)
    on_torn = _torn_counter(problems, warn)
    if parallel is None:
        parallel = can_split(session.log_path.stat().st_size)
    if parallel:
        plan = fold_split(session, stats, tally, warn=on_torn, progress=progress, chunk_bytes=chunk_bytes or CHUNK_BYTES)
    else:
        plan = plan_file(session.log_path)
        for vi in iter_view(session.events(warn=on_torn, progress=progress), plan, stats=stats):
            tally.add(vi)
    checker = tally.checker.finish()
    top = tally.top
    problems.update(checker.counts)
    window = session_window(session, stats.first)
    tokens = stats.tokens
    first = stats.first or {}
    return {
        "path": str(session.directory or session.display),
        "session_id": first.get("session_id") if first.get("kind") == "session" else None,
        "agent": session.origin["format"] if session.origin else "catty",
        "source": session.origin,
        "stream": "events",
        "events": stats.events,
        "kinds": dict(sorted(stats.kinds.items())),
        "roles": dict(sorted(stats.roles.items())),
        "turns": stats.turns,
        "items": stats.items,
        "tokens": tokens,
        **_tokens_origin(stats),
        "window": window,
        "percent": percent_of(tokens, window),
        "threshold": DEFAULT_THRESHOLD,
        "status": threshold_status(tokens, window, DEFAULT_THRESHOLD),
        "fp": stats.fp,
        "largest": top.rows(),
        "compactions": [_compaction_row(c) for c in plan.compactions],
        "repairs": {"count": sum(plan.repairs.values()), "reasons": dict(sorted(plan.repairs.items()))},
        "problems": problems,
        "problem_details": [p.__dict__ for p in checker.found[:20]],
    }


def iter_item_lines(session: Session, *, warn: Callable[[str], None] | None = None) -> Iterator[dict[str, Any]]:
    """Items of an item stream; a line that is not an item is a data error naming file:line."""
    for raw in raw_lines(session.log_path, session.display, warn=warn):
        try:
            item = orjson.loads(raw.data)
        except orjson.JSONDecodeError as exc:
            raise DataError(json_problem(exc), path=session.display, line=raw.lineno) from None
        if not isinstance(item, dict) or not isinstance(item.get("role"), str):
            raise DataError("not a view item (an object with 'role')", path=session.display, line=raw.lineno)
        yield item


def inspect_items(session: Session, *, warn: Callable[[str], None] | None = None, largest: int = LARGEST) -> dict[str, Any]:
    """Report on a request read as items: tokens, fingerprint, pairing problems."""
    problems = {"dangling": 0, "orphan": 0, "duplicate": 0, "torn": 0, "invalid": 0}
    chain = Chain()
    checker = PairingChecker()
    roles: dict[str, int] = {}
    total = 0
    turns = 0
    top = _Largest(largest)
    index = 0
    for item in iter_item_lines(session, warn=_torn_counter(problems, warn)):
        canon = canonical(item)
        chain.add_canonical(canon)
        tokens = item_tokens(item, canon)
        total += tokens
        role = item["role"]
        roles[role] = roles.get(role, 0) + 1
        if role == "user" and not item.get("synthetic"):
            turns += 1
        checker.feed(item)
        top.add(index, tokens, item)
        index += 1
    checker.finish()
    problems.update(checker.counts)

    return {
        "path": session.display,
        "session_id": None,
        "agent": "catty",
        "source": None,
        "stream": "items",
        "events": 0,
        "kinds": {},
        "roles": dict(sorted(roles.items())),
        "turns": turns,
        "items": index,
        "tokens": total,
        "tokens_from": ESTIMATE,
        "usage_seq": None,
        "pending_tokens": 0,
        "estimated_tokens": total,
        "window": DEFAULT_WINDOW,
        "percent": percent_of(total, DEFAULT_WINDOW),
        "threshold": DEFAULT_THRESHOLD,
        "status": threshold_status(total, DEFAULT_WINDOW, DEFAULT_THRESHOLD),
        "fp": chain.hex,
        "largest": top.rows(),
        "compactions": [],
        "repairs": {"count": 0, "reasons": {}},
        "problems": problems,
        "problem_details": [p.__dict__ for p in checker.found[:20]],
    }


def view_rows(session: Session) -> Iterator[dict[str, Any]]:
    """`inspect --items`: each view item with its tokens and the fingerprint through it."""
    if session.stdin and is_item_stream(session):
        items: Iterator[tuple[dict[str, Any], bytes]] = ((it, canonical(it)) for it in iter_item_lines(session))
    else:
        plan = plan_file(session.log_path)
        items = ((vi.item, vi.canon) for vi in iter_view(session.events(), plan))
    chain = Chain()
    for index, (item, canon) in enumerate(items):
        yield {"index": index, "tokens": item_tokens(item, canon), "fp": chain.add_canonical(canon).hex(), "item": item}


def find_event(session: Session, seq: int) -> Event:
    last = -1
    for ev in session.events():
        if ev["seq"] == seq:
            return ev
        last = ev["seq"]
    # The log is whole and reads fine: asking for a seq it does not hold is the caller's slip.
    raise UsageError(f"{session.display}: no event with seq {seq} (its seqs run 0..{last})" if last >= 0 else f"{session.display}: no event with seq {seq} (it holds none)")


def root_row(directory: Any) -> dict[str, Any]:
    """One session's object of `inspect ROOT`: its `inspect S` report, with PATH as given (a catty
    session's folder or a native session, run here or on a cluster worker)."""
    with open_session(directory) as s:  # (a native session's skipped lines named, as `search ROOT` names them)
        rep = inspect_session(s)
    rep["path"] = str(directory)
    return rep


def inspect_root(root: Path, *, on_error: Callable[[Path, CattyError], None], sessions: Iterable[Path] | None = None,
                 engine: Engine | None = None, progress: Callable[[Iterator[Any]], Iterator[Any]] | None = None) -> RootRun:
    """A row per session under ROOT (or of `sessions`), in order, here or on ENGINE's cluster;
    a broken session is reported and skipped (its code counts toward the run's `exit_code`).
    PROGRESS wraps the per-session outcomes."""
    return RootRun(root_row, sessions if sessions is not None else root_sessions(root, allow_empty=True), engine, on_error=on_error, progress=progress)


