"""What a session's report shows, gathered from the library in one fold of the log.

The fold is the view's own (`plan_file` + `iter_view`, as `inspect --items` runs it) with a
tap on the events for the timeline: each main-agent `usage` event is one provider request
(the estimate stands in where a session has none), compactions, and the cache-aware prune's
batches replayed over the view. Beside it: `repair --check` (repair.analyse), the usage
ledger and the segments index. A part that cannot be read says why instead of failing the page.
"""
from __future__ import annotations

import bisect
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import orjson

from ..compact.twopass import cache_path
from ..defaults import DEFAULT_THRESHOLD
from ..errors import CattyError, NoConversation
from ..prune.options import PruneOptions
from ..prune.pipeline import Measure
from ..repair.plan import analyse
from ..session.blobs import blob_path
from ..session.events import Event
from ..session.segments import list_segments
from ..session.store import Session, session_window
from ..sources import open_session
from ..usage.pipeline import build_ledger, scan
from ..view.fold import ViewStats, call_entry, iter_view, message_item, plan_file, result_item
from ..view.tokens import item_tokens, percent_of, usage_context

# The threshold line: compaction's default trigger (docs/spec.md#commands: `compact --threshold`).
THRESHOLD_PERCENT = DEFAULT_THRESHOLD


@dataclass
class Point:
    """One provider request on the timeline."""

    seq: int
    turn: int
    context: int  # its context size (usage) or the view's estimate then
    cached: int  # cache_read tokens of its input
    prompt: int  # input + cache_read + cache_write: the input it was billed for
    output: int
    model: str
    ts: str


@dataclass
class Report:
    """Everything one page shows; `errors` says which parts could not be read, and why."""

    path: str
    session_id: str | None = None
    source: str | None = None
    origin: dict[str, Any] | None = None  # another agent's session read in memory: its agent, id, path, cwd, title, model
    model: str | None = None
    window: int = 0
    events: int = 0
    turns: int = 0
    tokens: int = 0
    percent: float = 0.0
    fp: str = ""
    threshold: float = THRESHOLD_PERCENT
    estimated: bool = False  # the timeline's y values are estimates (no usage events)
    points: list[Point] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)  # main agent, with "at": requests before it
    other_compactions: int = 0  # subagents' compactions: counted, not drawn
    prunes: list[dict[str, Any]] = field(default_factory=list)  # {"at", "seq", "index"}
    prefires: list[dict[str, Any]] = field(default_factory=list)  # {"at", "state", "seq"?}
    items: list[dict[str, Any]] = field(default_factory=list)  # inspect --items rows: index, tokens, item
    problems: dict[str, int] = field(default_factory=dict)  # repair --check counts
    problem_actions: list[dict[str, Any]] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    usage_by_model: list[dict[str, Any]] = field(default_factory=list)
    usage_by_agent: list[dict[str, Any]] = field(default_factory=list)
    usage_totals: dict[str, Any] = field(default_factory=dict)
    blob_sizes: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        return not self.errors

    @property
    def cost(self) -> float | None:
        return self.usage_totals.get("cost_usd")


class _Timeline:
    """The tap: requests, turns and compactions as the events go by (main agent only)."""

    def __init__(self, excluded: list[tuple[int, int]]) -> None:
        self.excluded = excluded
        self.points: list[Point] = []
        self.guesses: list[Point] = []  # assistant messages with the running estimate
        self.compactions: list[dict[str, Any]] = []
        self.other_compactions = 0
        self.turn = 0
        self.estimate = 0
        self.models: list[str] = []

    def tap(self, events: Iterator[Event]) -> Iterator[Event]:
        ranges = self.excluded
        r_i = 0
        for ev in events:
            if ev.get("agent") is None:
                kind = ev["kind"]
                seq = ev["seq"]
                while r_i < len(ranges) and seq >= ranges[r_i][1]:
                    r_i += 1
                live = r_i >= len(ranges) or seq < ranges[r_i][0]
                if kind == "usage":
                    self._usage(ev)
                elif kind == "compaction":
                    self._compaction(ev)
                elif kind == "message":
                    if live and ev["role"] == "user" and not ev.get("synthetic"):
                        self.turn += 1
                    if not self.points:  # estimates matter only while no usage event was seen
                        self.estimate += item_tokens(message_item(ev))
                        if ev["role"] == "assistant":
                            self.guesses.append(Point(seq, self.turn, self.estimate, 0, self.estimate, 0, "", ev.get("ts", "")))
                elif not self.points and kind == "tool_call":
                    self.estimate += item_tokens(call_entry(ev))
                elif not self.points and kind == "tool_result":
                    self.estimate += item_tokens(result_item(ev))
            elif ev["kind"] == "compaction":
                self.other_compactions += 1
            yield ev

    def _usage(self, ev: Event) -> None:
        prompt = int(ev.get("input") or 0) + int(ev.get("cache_read") or 0) + int(ev.get("cache_write") or 0)
        model = str(ev.get("model") or "")
        self.points.append(Point(ev["seq"], self.turn, usage_context(ev), int(ev.get("cache_read") or 0), prompt, int(ev.get("output") or 0), model, ev.get("ts", "")))
        if model:
            self.models.append(model)

    def _compaction(self, ev: Event) -> None:
        keys = ("seq", "id", "mode", "through_seq", "trigger", "tokens_before", "tokens_after", "summarizer", "artifact", "segment", "two_pass")
        row = {k: ev[k] for k in keys if k in ev}
        # Requests before it, on either x axis (which one the chart uses is known at the end).
        row["at"], row["at_guess"] = len(self.points), len(self.guesses)
        self.compactions.append(row)
        after = ev.get("tokens_after")
        if isinstance(after, int):
            self.estimate = after  # the next request starts from the rebuilt head


def _request_at(points: list[Point], seq: int) -> int:
    """Index of the first request after event SEQ (the last request when none follows)."""

    i = bisect.bisect_right([p.seq for p in points], seq)
    return min(i, len(points) - 1) if points else 0


class _Fold:
    """One fold of the log: the view's items and stats, the timeline's tap, the prune replay.

    `collector` stands where the repair check keeps its view items, so the check's own fold
    (when it is the log's: see `gather`) serves the page too.
    """

    def __init__(self, session: Session, excluded: list[tuple[int, int]]) -> None:
        self.session = session
        self.line = _Timeline(excluded)
        self.stats = ViewStats()
        self.items: list[dict[str, Any]] = []
        # Each item with the latest usage as the fold stood then: what prune's replay reads.
        self.seen: list[tuple[Any, bool, int, int]] = []
        fold = self
        stats = self.stats

        class Collector(list):
            def append(self, vi: Any) -> None:
                fold.items.append({"index": len(fold.items), "tokens": vi.tokens, "item": vi.item})
                fold.seen.append((vi, stats.usage_seen, stats.usage_seq, stats.usage_context))

        self.collector = Collector()

    def run(self) -> _Fold:
        """Fold the log itself (a DataError names the first bad line)."""

        for vi in iter_view(self.line.tap(self.session.events(warn=None)), plan_file(self.session.log_path), stats=self.stats):
            self.collector.append(vi)
        return self

    def prune_batches(self, window: int) -> list[int]:
        """Where the cache-aware prune's replay rewrites the prefix (item indices).

        A batch needs a request at the high mark, and no request is larger than all the
        items plus the largest usage: below that the replay is skipped, its answer known."""

        opts = PruneOptions()
        largest = max([self.stats.usage_context] + [u for *_, u in self.seen])
        if window <= 0 or (sum(vi.tokens for vi, *_ in self.seen) + largest) * 100 < window * opts.high_percent:
            return []
        measure = Measure(opts, {})
        for vi, seen, seq, context in self.seen:
            measure.feed(vi, SimpleNamespace(usage_seen=seen, usage_seq=seq, usage_context=context))  # type: ignore[arg-type]  # the three fields feed reads
        measure.note_usage(self.stats, end=True)
        return measure.plan(window).batch_at

    def into(self, rep: Report) -> None:
        session, stats, line = self.session, self.stats, self.line
        first = stats.first or {}
        rep.items = self.items
        rep.session_id = first.get("session_id") if first.get("kind") == "session" else None
        source = first.get("source")  # (an import names its agent's format: {"format", "path"})
        rep.source = source if isinstance(source, str) else source.get("format") if isinstance(source, dict) and isinstance(source.get("format"), str) else None
        if session.origin is not None:
            rep.origin = session.origin
            rep.source = session.origin["format"]
        rep.window = session_window(session, stats.first)
        rep.events = stats.events
        rep.turns = stats.turns
        rep.tokens = stats.tokens
        rep.percent = percent_of(stats.tokens, rep.window)
        rep.fp = stats.fp
        summary_model = (session.summary() or {}).get("model")
        rep.model = next((m for m in (first.get("model"), summary_model, line.models[-1] if line.models else None) if isinstance(m, str) and m), None)
        rep.estimated = not line.points
        rep.points = line.points or line.guesses
        rep.compactions = line.compactions
        for comp in rep.compactions:
            guess = comp.pop("at_guess")
            if rep.estimated:
                comp["at"] = guess
        rep.other_compactions = line.other_compactions
        # Where the cache-aware prune would rewrite the prefix, were this view sent as it grew.
        for index in self.prune_batches(rep.window):
            seq = _item_seq(rep.items, index)
            rep.prunes.append({"index": index, "seq": seq, "at": _request_at(rep.points, seq)})
        for comp in rep.compactions:
            tp = comp.get("two_pass")
            if isinstance(tp, dict):
                state = "hit" if tp.get("hit") else "stale" if tp.get("stale") else "miss"
                rep.prefires.append({"at": comp["at"], "state": state, "seq": comp["seq"]})


def _check_and_fold(session: Session, rep: Report) -> None:
    """`repair --check`, whose fold is the page's when it read the log as it is; else a fold of its own."""

    fold = _Fold(session, plan_file(session.log_path).excluded)
    failed: str | None = None
    try:
        plan = analyse(session, keep=fold.collector, stats=fold.stats, watch=fold.line.tap)
    except CattyError as exc:
        plan, failed = None, str(exc)
    if plan is not None:
        rep.problems = dict(sorted(plan.counts.items()))
        rep.problem_actions = plan.actions()
    if plan is None or plan.bad or plan.missing or any(ev.get("action") == "drop" for ev in plan.events):
        # The check's view left lines or events out: the page shows the log's own view.
        fold = _Fold(session, plan_file(session.log_path).excluded).run()
    fold.into(rep)
    if failed is not None:  # the log folds, but the check could not be made: say so
        raise CattyError(f"repair --check: {failed}")
    if not rep.model and plan is not None and plan.facts.get("model"):
        rep.model = plan.facts["model"]


def _item_seq(items: list[dict[str, Any]], index: int) -> int:
    """The seq of item INDEX, or of the nearest item before it that has one (synthetic ones have none)."""
    for i in range(min(index, len(items) - 1), -1, -1):
        seq = items[i]["item"].get("seq")
        if isinstance(seq, int):
            return seq
    return -1


def _pending_prefire(directory: Path, rep: Report) -> None:
    """A pass-1 note waiting for the next compaction: a marker at the request it was made after."""

    path = cache_path(directory)
    if path.parent.is_symlink() or path.is_symlink() or not path.is_file():
        return  # none, or not the session's own: never read through a link
    try:
        doc = orjson.loads(path.read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return
    created = doc.get("created_at") if isinstance(doc, dict) else None
    at = len(rep.points) - 1
    if isinstance(created, str):
        before = [i for i, p in enumerate(rep.points) if p.ts and p.ts <= created]
        at = before[-1] if before else 0
    rep.prefires.append({"at": max(at, 0), "state": "pending", "prefix_len": doc.get("prefix_len") if isinstance(doc, dict) else None})


def _usage(session: Session, rep: Report) -> None:
    found = scan([str(session.log_path)], use_cache=False, jobs=1)
    by_model = build_ledger(found.records, by="model", running=found.running)
    rep.usage_by_model = by_model.rows
    rep.usage_totals = by_model.totals
    rep.usage_by_agent = build_ledger(found.records, by="agent", running=found.running).rows


def _blob_sizes(directory: Path, rep: Report) -> None:
    """The stored size of every blob the view names (the same checks as `catty-ctx blob`)."""

    for row in rep.items:
        handle = row["item"].get("blob")
        if isinstance(handle, str) and handle not in rep.blob_sizes:
            try:
                rep.blob_sizes[handle] = blob_path(directory, handle).stat().st_size
            except (CattyError, OSError):
                pass  # shown without a size


def gather(session: Session, *, on_error: Callable[[str], None] | None = None) -> Report:
    """The report of one open session; an unreadable part leaves its reason in `errors`."""
    rep = Report(path=str(session.directory or session.display))

    def attempt(part: Callable[[], None]) -> None:
        try:
            part()
        except CattyError as exc:
            rep.errors.append(str(exc))
            if on_error is not None:
                on_error(str(exc))

    attempt(lambda: _check_and_fold(session, rep))
    if rep.readable:
        attempt(lambda: _usage(session, rep))
    if session.directory is not None and rep.readable:
        directory = session.directory
        attempt(lambda: rep.segments.extend(list_segments(directory)))
        _pending_prefire(directory, rep)
        _blob_sizes(directory, rep)
    return rep


def gather_path(target: Any) -> Report:
    """The report of a session on disk; one that cannot even be opened still gets a report (one
    that holds no conversation is no session: its error is raised, and a ROOT skips it)."""
    try:
        with open_session(target) as session:  # (a native session's skipped lines named on stderr)
            return gather(session)
    except NoConversation:
        raise
    except CattyError as exc:
        return Report(path=str(target), errors=[str(exc)])
