"""Request-copy pruning (docs/design.md#m3): grok-build's age tiers and a cache-aware strategy.

Pruning rewrites the *request*, never the log: the output is the view with some tool results
shortened, and every shortened text names the original's seq and the command that prints it.

Age. A tool result's age is the number of real user messages (role user, not synthetic)
that come after it in the view. Results of the current turn have age 0, those of the turn
before age 1, and so on. Synthetic user items (the compaction summary carrier, the
continuation reminder, instructions) never count. grok-build counted every user item and
then subtracted one, so its "age < 3" protected four turns and a compaction's synthetic
items aged everything (docs/design.md#w6); here `--keep-turns 3` protects exactly the current
turn and the two before it.

Strategies, both pure functions of the view (the same log always gives the same request):
- `tiered`: grok-build's rule on the request as it stands now. Above `min_percent` of the
  window, results of age >= `omit_age` become a placeholder, and younger ones (age >=
  `keep_turns`) longer than `trim_over` characters keep their head and tail around a marker.
  Every turn moves results across a tier boundary, so the prefix changes on every request.
- `cache-aware`: the same budget, with the prefix changed as rarely as possible. The view
  is replayed item by item as if requests were made at every point; whenever the request
  reaches the high-water mark, one batch clears the oldest eligible results (oldest first)
  until it is back under the low-water mark. Between batches earlier decisions are final,
  so consecutive requests share everything but their new tail. Replaying makes the batch
  boundaries a function of the log alone: no state file, no dependence on when prune ran.

Anthropic's `clear_tool_uses` knobs apply to both: the `keep` most recent tool results are
never touched, `exclude_tools` are never touched, `clear_inputs` also clears the arguments
of the calls whose results became placeholders, and a rewrite that would clear fewer than
`clear_at_least` tokens is not made (a broken cache prefix must be worth it).

Images (both strategies): the request body is the canonical bytes of the view's items.
When it reaches `image_high` bytes, the oldest user images are replaced by a note until the
body is at most `image_low`. This is also replayed item by item, so the set of removed
images only grows when the high mark is crossed again (hysteresis that holds across
requests, not only within one).

Request size: the items' estimates (docs/spec.md#token-estimates) plus the provider overhead the
latest `usage` event shows (see `usage_overhead`): its excess over the unpruned items before
it, or, when it measured a smaller (pruned) request, its excess over the pruned items as the
replay had them then. Without usage events it is the sum of the item estimates.
"""
from __future__ import annotations

import os
import stat
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from ..session.blobs import BLOBS_DIR, is_handle
from ..session.events import DEFAULT_WINDOW
from ..session.store import Session, session_window
from ..view.fingerprint import canonical
from ..view.fold import Item, ViewItem, ViewStats, iter_view, plan_file, plan_view
from ..view.pairing import view_item_repair
from ..view.tokens import item_tokens
from .forms import BlobSize, Meta, describe
from .options import MIB, STRATEGIES, PruneOptions, PruneStats
from .reuse import PrefixReuse, item_lines_canon, prefix_reuse
from .strategies import Plan, Usage, apply_plan, plan_cache_aware, plan_images, plan_tiered, usage_overhead

__all__ = [
    "MIB",
    "STRATEGIES",
    "Measure",
    "Meta",
    "Plan",
    "PrefixReuse",
    "PruneOptions",
    "PruneStats",
    "Usage",
    "call_event_seqs",
    "item_lines_canon",
    "prefix_reuse",
    "prune",
    "prune_item_stream",
    "prune_items",
]


# -- the whole mechanism ---------------------------------------------------------------------


class Measure:
    """Pass 1 over a view stream: metas, call ids of results, and the usage events between."""

    def __init__(self, opts: PruneOptions, call_seqs: dict[str, int], blob_size: BlobSize | None = None) -> None:
        self.opts = opts
        self.call_seqs = call_seqs
        self.blob_size = blob_size
        self.metas: list[Meta] = []
        self.call_ids: list[str] = []
        self.usages: list[Usage] = []
        self.names: dict[str, str] = {}
        self.content = 0
        self._usage_seq = -1
        self._seq = -1
        self._pending: tuple[int, int] | None = None
        self.schema = 0  # the tool definitions' tokens (the view's: the latest state event declaring them)

    def feed(self, vi: ViewItem, stats: ViewStats | None = None) -> None:
        seq = vi.item.get("seq")
        if isinstance(seq, int):
            self._seq = seq
        if stats is not None:
            self.note_usage(stats)
        self.metas.append(describe(vi, self.opts, self.names, self.call_seqs, self.blob_size))
        self.call_ids.append(vi.item.get("call_id", "") if vi.item.get("role") == "tool" else "")
        self.content += vi.tokens

    def note_usage(self, stats: ViewStats, *, end: bool = False) -> None:
        """Place the latest usage event before the first item that follows it in the log.

        The view yields an assistant item only when its step ends, so a usage can be seen
        before items that precede it; the item's seq says which side it is on.
        """
        if stats.usage_seen and stats.usage_seq != self._usage_seq:
            self._pending = (stats.usage_seq, stats.usage_context)
        if self._pending and (end or self._seq > self._pending[0]):
            self._usage_seq = self._pending[0]
            self.usages.append(Usage(len(self.metas), self._pending[1], self.content))
            self._pending = None

    @property
    def overhead(self) -> int:
        """The overhead of the last usage against the unpruned items; without one, the tool
        schemas the request carries (counted as inspect and compact count them)."""
        return usage_overhead(self.usages[-1], self.usages[-1].unpruned) if self.usages else self.schema

    def plan(self, window: int) -> Plan:
        opts = self.opts
        if opts.strategy == "tiered":
            plan = plan_tiered(self.metas, self.call_ids, self.content + self.overhead, window, opts)
            plan.overhead = self.overhead
        else:
            plan = plan_cache_aware(self.metas, self.call_ids, self.usages, window, opts, self.schema)
        plan.images = plan_images(self.metas, opts)
        return plan


def prune_items(items: Sequence[ViewItem], opts: PruneOptions, window: int, *, call_seqs: dict[str, int] | None = None, stats: PruneStats | None = None) -> tuple[list[ViewItem], PruneStats]:
    """Prune a view held in memory (a list of ViewItems, no usage events); items and stats."""
    fix = view_item_repair()
    items = list(fix(items))  # a request must pair its calls and results (see pairing.py)
    measure = Measure(opts, call_seqs or {})
    for vi in items:
        measure.feed(vi)
    st = stats if stats is not None else PruneStats()
    st.repaired = fix.notes()
    return list(_apply(measure, items, window, st)), st


def _apply(measure: Measure, items: Iterable[ViewItem], window: int, stats: PruneStats) -> Iterator[ViewItem]:
    stats.strategy, stats.window = measure.opts.strategy, window
    stats.request_tokens_before = measure.content + measure.overhead
    stats.item_tokens_before = measure.content
    plan = measure.plan(window)
    stats.batches = plan.batches
    for vi in apply_plan(items, plan, measure.opts, stats, measure.call_seqs):
        stats.item_tokens_after += vi.tokens
        yield vi
    stats.request_tokens_after = measure.content - stats.tokens_cleared + plan.overhead
    stats.over_window = window > 0 and stats.request_tokens_after > window


def call_event_seqs(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """call_id → seq of its tool_call event (main loop), so cleared arguments can point at it."""
    return {ev["call_id"]: ev["seq"] for ev in events if ev.get("kind") == "tool_call" and not ev.get("agent")}


def prune(source: Any, opts: PruneOptions, *, window: int | None = None, stats: PruneStats | None = None) -> Iterator[ViewItem]:
    """Prune the view of a Session, a path or a list of events, in two streaming passes (the
    view is never held whole). `window` defaults to the session's.

    `stats` is filled in as the output streams; it is complete when the iterator ends.
    """

    if isinstance(source, (list, tuple)):
        first = source[0] if source else None
        vplan = plan_view(source)

        def events(quiet: bool) -> Any:
            return source
    else:
        source = source if isinstance(source, Session) else Session.open(source)
        first = source.first_event()
        vplan = plan_file(source.log_path)

        def events(quiet: bool) -> Any:
            # Warnings (a torn tail) once, on the first pass only.
            return source.events(warn=None) if quiet else source.events()

    st = stats if stats is not None else PruneStats()
    seqs = call_event_seqs(events(True)) if opts.clear_inputs else {}
    directory = None if isinstance(source, (list, tuple)) else source.directory
    measure = Measure(opts, seqs, _blob_sizes(directory) if directory is not None else None)
    vstats = ViewStats()
    # Both passes see the view through the same in-memory pairing repair (deterministic, so
    # the indices the plan names are the same): the request printed is one a provider takes.
    fix = view_item_repair()
    for vi in fix(iter_view(events(False), vplan, stats=vstats)):
        measure.feed(vi, vstats)
    measure.note_usage(vstats, end=True)  # a usage after the last item
    measure.schema = vstats.schema_tokens or 0
    st.repaired = fix.notes()
    if window is None:
        window = session_window(source, first) if not isinstance(source, (list, tuple)) else _event_window(first)
    yield from _apply(measure, view_item_repair()(iter_view(events(True), vplan)), window, st)


def _blob_sizes(directory: Any) -> BlobSize:
    """Sizes of the session's blobs, by handle (an image kept as a blob weighs what it holds)."""

    sizes: dict[str, int | None] = {}

    def size(handle: str) -> int | None:
        if handle not in sizes:
            try:
                st = os.lstat(directory / BLOBS_DIR / handle) if is_handle(handle) else None
            except OSError:
                st = None
            sizes[handle] = st.st_size if st is not None and stat.S_ISREG(st.st_mode) else None
        return sizes[handle]

    return size


def _event_window(first: dict[str, Any] | None) -> int:
    w = (first or {}).get("window")
    return w if isinstance(w, int) and w > 0 else DEFAULT_WINDOW


def prune_item_stream(items: Iterable[Item], opts: PruneOptions, window: int, stats: PruneStats | None = None) -> list[ViewItem]:
    """Prune a request read as items (what `resume --format items` or `prune` printed)."""
    vis = []
    for item in items:
        canon = canonical(item)
        vis.append(ViewItem(item, canon, item_tokens(item, canon)))
    return prune_items(vis, opts, window, stats=stats)[0]
