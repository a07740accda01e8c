"""Request-copy pruning (reference 3.3): grok-build's age tiers and a cache-aware strategy.

Pruning rewrites the *request*, never the log: the output is the view with some tool results
shortened, and every shortened text names the original's seq and the command that prints it.

Age. A tool result's age is the number of real user messages (role user, not synthetic)
that come after it in the view. Results of the current turn have age 0, those of the turn
before age 1, and so on. Synthetic user items (the compaction summary carrier, the
continuation reminder, instructions) never count. grok-build counted every user item and
then subtracted one, so its "age < 3" protected four turns and a compaction's synthetic
items aged everything (weakness #6); here `--keep-turns 3` protects exactly the current
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

Request size: the items' estimates (SPEC "Token estimates") plus the provider overhead the
latest `usage` event shows (see `usage_overhead`): its excess over the unpruned items before
it, or, when it measured a smaller (pruned) request, its excess over the pruned items as the
replay had them then. Without usage events it is the sum of the item estimates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Sequence

import orjson

from .fingerprint import canonical
from .tokens import item_tokens, over_threshold
from .view import Item, ViewItem, ViewStats

MIB = 1 << 20
STRATEGIES = ("cache-aware", "tiered")


@dataclass(frozen=True)
class PruneOptions:
    """Every constant of the mechanism; the defaults are grok-build's (and Anthropic's)."""

    strategy: str = "cache-aware"
    min_percent: float = 50.0  # tiered runs only when the request is at least this % of the window
    keep_turns: int = 3  # results younger than this many turns are never touched
    omit_age: int = 10  # tiered: from this age on, a placeholder
    trim_over: int = 4000  # tiered: in between, results longer than this (characters) are trimmed
    trim_head: int = 1500
    trim_tail: int = 1500
    high_percent: float = 90.0  # cache-aware: a batch starts when the request reaches this %
    low_percent: float = 30.0  # cache-aware: ... and clears until it is at most this %
    image_high: int = 47 * MIB
    image_low: int = 25 * MIB
    keep: int = 0  # the most recent tool results never touched (clear_tool_uses `keep`; keep_turns already guards)
    clear_at_least: int = 0  # a rewrite must clear at least this many tokens
    exclude_tools: frozenset[str] = frozenset()
    clear_inputs: bool = False
    session_ref: str = "SESSION"  # how placeholders name the session in their command

    def check(self) -> str | None:
        """A reason these options make no sense, or None."""
        if self.strategy not in STRATEGIES:
            return f"unknown strategy {self.strategy!r} (choose {' or '.join(STRATEGIES)})"
        if self.low_percent > self.high_percent:
            return "--low must not be above --high"
        if self.image_low > self.image_high:
            return "--image-low must not be above --image-high"
        if self.keep_turns < 0 or self.omit_age < 0 or self.keep < 0:
            return "ages and counts must not be negative"
        return None


@dataclass
class PruneStats:
    strategy: str = ""
    window: int = 0
    items: int = 0
    tokens_before: int = 0
    tokens_after: int = 0
    trimmed: int = 0  # results kept head + tail
    tool_uses_cleared: int = 0  # results replaced by a placeholder
    inputs_cleared: int = 0  # calls whose arguments were cleared
    images_removed: int = 0
    tokens_cleared: int = 0
    batches: int = 0  # cache-aware: rewrites of the prefix over the session's history
    over_window: bool = False

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# -- the rewritten forms -------------------------------------------------------------------


def _where(seq: Any, ref: str) -> str:
    """How to get the original back: its seq and the command that prints it."""
    if isinstance(seq, int):
        return f"original: seq {seq}, print it with `catty-ctx inspect {ref} --seq {seq}`"
    return "original: a synthetic item, not in the log"


def placeholder_item(item: Item, reason: str, ref: str) -> Item:
    """A tool result whose output is replaced by a note that says how to get it back."""
    out = dict(item)
    n = len(item.get("output", ""))
    out["output"] = f"[tool result {reason} by catty-ctx prune ({n:,} characters); {_where(item.get('seq'), ref)}]"
    out.pop("images", None)
    out["pruned"] = "omitted"
    return out


def trimmed_item(item: Item, head: int, tail: int, ref: str) -> Item:
    """A tool result that keeps its first `head` and last `tail` characters around a marker."""
    text = item["output"]
    cut = len(text) - head - tail
    out = dict(item)
    out["output"] = (
        text[:head]
        + f"\n[… {cut:,} characters trimmed by catty-ctx prune; {_where(item.get('seq'), ref)} …]\n"
        + (text[-tail:] if tail else "")
    )
    out["pruned"] = "trimmed"
    return out


def cleared_args(seq: Any, ref: str) -> dict[str, str]:
    return {"cleared": f"arguments cleared by catty-ctx prune; {_where(seq, ref)}"}


def images_removed_item(item: Item, count: int, ref: str) -> Item:
    """A user item whose `count` oldest images are replaced by a note in its text."""
    out = dict(item)
    rest = item["images"][count:]
    if rest:
        out["images"] = rest
    else:
        out.pop("images")
    noun = "image was" if count == 1 else f"{count} images were"
    out["text"] = (
        item.get("text", "")
        + f"\n[An earlier {noun} removed from this request by catty-ctx prune; do not describe "
        + f"{'it' if count == 1 else 'them'}; {_where(item.get('seq'), ref)}]"
    )
    return out


# -- pass 1: what each item weighs -----------------------------------------------------------


class Meta:
    """The few facts about one item that the strategies decide on (the item itself is not kept)."""

    __slots__ = ("tokens", "real_user", "result", "tool", "chars", "omit_saves", "trim_saves", "call_ids", "args_saves", "body", "images")

    def __init__(self) -> None:
        self.tokens = 0
        self.real_user = False
        self.result = False
        self.tool = ""
        self.chars = 0
        self.omit_saves = 0
        self.trim_saves = 0
        self.call_ids: tuple[str, ...] = ()
        self.args_saves: dict[str, int] = {}
        self.body = 0
        self.images: list[int] = []


def omit_reason(opts: PruneOptions) -> str:
    if opts.strategy == "tiered":
        return f"omitted (older than {opts.omit_age} turns)"
    return "cleared to keep the request within the window"


def describe(vi: ViewItem, opts: PruneOptions, names: dict[str, str], call_seqs: dict[str, int]) -> Meta:
    """Measure an item and its rewritten forms; `names` maps call ids to tool names as calls pass."""
    item = vi.item
    m = Meta()
    m.tokens = vi.tokens
    m.body = len(vi.canon)
    role = item.get("role")
    ref = opts.session_ref
    if role == "user":
        m.real_user = not item.get("synthetic")
        imgs = item.get("images")
        if imgs:
            m.images = [len(canonical(im)) for im in imgs]
    elif role == "tool":
        m.result = True
        m.tool = names.get(item.get("call_id", ""), "")
        out = item.get("output")
        if isinstance(out, str):
            m.chars = len(out)
            m.omit_saves = vi.tokens - item_tokens(placeholder_item(item, omit_reason(opts), ref))
            if m.chars > opts.trim_over and opts.trim_head + opts.trim_tail < m.chars:
                m.trim_saves = vi.tokens - item_tokens(trimmed_item(item, opts.trim_head, opts.trim_tail, ref))
    elif role == "assistant" and item.get("tool_calls"):
        ids = []
        for c in item["tool_calls"]:
            cid = c.get("call_id", "")
            ids.append(cid)
            names[cid] = c.get("name", "")
            if opts.clear_inputs:
                before = len(canonical(c.get("args")))
                after = len(canonical(cleared_args(call_seqs.get(cid, item.get("seq")), ref)))
                m.args_saves[cid] = (before - after) // 4
        m.call_ids = tuple(ids)
    return m


# -- the decisions ---------------------------------------------------------------------------


@dataclass
class Plan:
    """What to rewrite: results by view index, call ids whose arguments go, images per item."""

    omit: set[int] = field(default_factory=set)
    trim: set[int] = field(default_factory=set)
    clear_calls: set[str] = field(default_factory=set)
    images: dict[int, int] = field(default_factory=dict)
    batches: int = 0
    batch_at: list[int] = field(default_factory=list)  # cache-aware: the item index at which each batch fired
    reason: str = "omitted"
    overhead: int = 0  # provider tokens beyond the items' estimate, at the end


def plan_images(metas: Sequence[Meta], opts: PruneOptions) -> dict[int, int]:
    """Oldest user images out, replayed item by item: high mark reached → down to the low mark."""
    removed: dict[int, int] = {}
    queue: list[tuple[int, int]] = []  # (item index, image bytes), oldest first
    q = 0
    body = 0
    for i, m in enumerate(metas):
        body += m.body
        for size in m.images:
            queue.append((i, size))
        if body >= opts.image_high:
            while body > opts.image_low and q < len(queue):
                idx, size = queue[q]
                q += 1
                body -= size
                removed[idx] = removed.get(idx, 0) + 1
    return removed


def _ages(metas: Sequence[Meta]) -> list[int]:
    ages = [0] * len(metas)
    later = 0
    for i in range(len(metas) - 1, -1, -1):
        ages[i] = later
        if metas[i].real_user:
            later += 1
    return ages


def _call_of(metas: Sequence[Meta]) -> dict[str, int]:
    return {cid: i for i, m in enumerate(metas) for cid in m.call_ids}


def _args_saved(metas: Sequence[Meta], calls: dict[str, int], cid: str) -> int:
    i = calls.get(cid)
    return metas[i].args_saves.get(cid, 0) if i is not None else 0


def plan_tiered(metas: Sequence[Meta], call_ids: Sequence[str], total: int, window: int, opts: PruneOptions) -> Plan:
    """grok-build's tiers on the request as it stands (see the module docstring for the age)."""
    plan = Plan(reason=omit_reason(opts))
    if not over_threshold(total, window, opts.min_percent):
        return plan
    ages = _ages(metas)
    results = [i for i, m in enumerate(metas) if m.result]
    protected = set(results[len(results) - opts.keep :]) if opts.keep else set()
    calls = _call_of(metas) if opts.clear_inputs else {}
    saved = 0
    for i in results:
        m = metas[i]
        if i in protected or m.tool in opts.exclude_tools or ages[i] < opts.keep_turns:
            continue
        if ages[i] >= opts.omit_age:
            if m.omit_saves > 0:
                plan.omit.add(i)
                saved += m.omit_saves
                if opts.clear_inputs:
                    plan.clear_calls.add(call_ids[i])
                    saved += _args_saved(metas, calls, call_ids[i])
        elif m.trim_saves > 0:
            plan.trim.add(i)
            saved += m.trim_saves
    if saved < opts.clear_at_least or not saved:
        return Plan(reason=plan.reason)
    plan.batches = 1
    return plan


@dataclass(frozen=True)
class Usage:
    """A `usage` event as seen from the view: what the provider counted for a request."""

    first: int  # index of the first item it applies to (it came after item first - 1)
    context: int  # its context size (input + cache_read + cache_write + output)
    unpruned: int  # estimate of the unpruned items before it


def usage_overhead(u: Usage | None, pruned_before: int) -> int:
    """Tokens a provider counts beyond the items' estimate (tool schemas, framing).

    A usage at least as large as the unpruned items measured an unpruned request: the excess
    is overhead. A smaller one measured a pruned request (a runtime sending prune's output):
    the excess over the pruned items as they stood then is overhead.
    """
    if u is None:
        return 0
    if u.context >= u.unpruned:
        return u.context - u.unpruned
    return max(0, u.context - pruned_before)


def plan_cache_aware(metas: Sequence[Meta], call_ids: Sequence[str], usages: Sequence[Usage], window: int, opts: PruneOptions) -> Plan:
    """Batches replayed over the view: at the high-water mark, clear oldest-first to the low one."""
    plan = Plan(reason=omit_reason(opts))
    high = window * opts.high_percent
    low = window * opts.low_percent / 100
    content = 0
    content_at: list[int] = []  # the pruned estimate as it stood after each item
    users = 0
    users_at: list[int] = []  # real users up to each result
    results: list[int] = []  # view indices of results, in order
    calls: dict[str, int] = {}
    frontier = 0  # results before it are cleared or never will be
    failed: tuple[int, int] | None = None
    u_i = 0
    extra = 0  # overhead of the latest usage

    def batch(total: int) -> int:
        """Clear the oldest eligible results until the request is under the low mark."""
        nonlocal frontier, failed
        picked: list[int] = []
        saved = 0
        j = frontier
        last_kept = len(results) - opts.keep
        while j < len(results) and total - saved > low:
            if users - users_at[j] < opts.keep_turns or j >= last_kept:
                break  # every later result is younger still
            i = results[j]
            mi = metas[i]
            if mi.tool not in opts.exclude_tools and mi.omit_saves > 0:
                picked.append(i)
                saved += mi.omit_saves
                if opts.clear_inputs:
                    saved += _args_saved(metas, calls, call_ids[i])
            j += 1
        if picked and saved >= opts.clear_at_least:
            plan.omit.update(picked)
            if opts.clear_inputs:
                plan.clear_calls.update(call_ids[i] for i in picked)
            plan.batches += 1
            plan.batch_at.append(min(p, len(metas) - 1))
            frontier = j
            failed = None
            return saved
        failed = (users, len(results))
        return 0

    for p in range(len(metas) + 1):
        while u_i < len(usages) and usages[u_i].first <= p:
            u = usages[u_i]
            extra = usage_overhead(u, content_at[u.first - 1] if u.first else 0)
            u_i += 1
        if p < len(metas):
            m = metas[p]
            content += m.tokens
            if m.real_user:
                users += 1
            for cid in m.call_ids:
                calls[cid] = p
            if m.result:
                results.append(p)
                users_at.append(users)
        elif not (usages and usages[-1].first == p):
            break  # the end: re-checked only for a usage after the last item
        total = content + extra
        if window > 0 and total * 100 >= high and failed != (users, len(results)):
            content -= batch(total)
        if p < len(metas):
            content_at.append(content)
    plan.overhead = extra
    return plan


# -- pass 2: rewriting ------------------------------------------------------------------------


def apply_plan(items: Iterable[ViewItem], plan: Plan, opts: PruneOptions, stats: PruneStats, call_seqs: dict[str, int]) -> Iterator[ViewItem]:
    """The pruned items, in order; `stats` counts what changed (exact, from the output)."""
    ref = opts.session_ref
    delta = 0
    for i, vi in enumerate(items):
        item = vi.item
        new: Item | None = None
        if i in plan.omit:
            new = placeholder_item(item, plan.reason, ref)
            stats.tool_uses_cleared += 1
        elif i in plan.trim:
            new = trimmed_item(item, opts.trim_head, opts.trim_tail, ref)
            stats.trimmed += 1
        elif i in plan.images:
            n = plan.images[i]
            new = images_removed_item(item, n, ref)
            stats.images_removed += n
        elif plan.clear_calls and item.get("tool_calls"):
            tcs = item["tool_calls"]
            if any(c.get("call_id") in plan.clear_calls for c in tcs):
                new = dict(item)
                new["tool_calls"] = [
                    {**c, "args": cleared_args(call_seqs.get(c.get("call_id", ""), item.get("seq")), ref)}
                    if c.get("call_id") in plan.clear_calls
                    else c
                    for c in tcs
                ]
                stats.inputs_cleared += sum(1 for c in tcs if c.get("call_id") in plan.clear_calls)
        stats.items += 1
        if new is None:
            yield vi
            continue
        canon = canonical(new)
        tokens = item_tokens(new, canon)
        delta += vi.tokens - tokens
        yield ViewItem(new, canon, tokens)
    stats.tokens_cleared = delta


# -- the whole mechanism ---------------------------------------------------------------------


class Measure:
    """Pass 1 over a view stream: metas, call ids of results, and the usage events between."""

    def __init__(self, opts: PruneOptions, call_seqs: dict[str, int]) -> None:
        self.opts = opts
        self.call_seqs = call_seqs
        self.metas: list[Meta] = []
        self.call_ids: list[str] = []
        self.usages: list[Usage] = []
        self.names: dict[str, str] = {}
        self.content = 0
        self._usage_seq = -1
        self._seq = -1
        self._pending: tuple[int, int] | None = None

    def feed(self, vi: ViewItem, stats: ViewStats | None = None) -> None:
        seq = vi.item.get("seq")
        if isinstance(seq, int):
            self._seq = seq
        if stats is not None:
            self.note_usage(stats)
        self.metas.append(describe(vi, self.opts, self.names, self.call_seqs))
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
        """The overhead of the last usage against the unpruned items."""
        return usage_overhead(self.usages[-1], self.usages[-1].unpruned) if self.usages else 0

    def plan(self, window: int) -> Plan:
        opts = self.opts
        if opts.strategy == "tiered":
            plan = plan_tiered(self.metas, self.call_ids, self.content + self.overhead, window, opts)
            plan.overhead = self.overhead
        else:
            plan = plan_cache_aware(self.metas, self.call_ids, self.usages, window, opts)
        plan.images = plan_images(self.metas, opts)
        return plan


def prune_items(items: Sequence[ViewItem], opts: PruneOptions, window: int, *, call_seqs: dict[str, int] | None = None, stats: PruneStats | None = None) -> tuple[list[ViewItem], PruneStats]:
    """Prune a view held in memory (a list of ViewItems, no usage events); items and stats."""
    measure = Measure(opts, call_seqs or {})
    for vi in items:
        measure.feed(vi)
    st = stats if stats is not None else PruneStats()
    return list(_apply(measure, items, window, st)), st


def _apply(measure: Measure, items: Iterable[ViewItem], window: int, stats: PruneStats) -> Iterator[ViewItem]:
    stats.strategy, stats.window = measure.opts.strategy, window
    stats.tokens_before = measure.content + measure.overhead
    plan = measure.plan(window)
    stats.batches = plan.batches
    yield from apply_plan(items, plan, measure.opts, stats, measure.call_seqs)
    stats.tokens_after = measure.content - stats.tokens_cleared + plan.overhead
    stats.over_window = window > 0 and stats.tokens_after > window


def call_event_seqs(events: Iterable[dict[str, Any]]) -> dict[str, int]:
    """call_id → seq of its tool_call event (main loop), so cleared arguments can point at it."""
    return {ev["call_id"]: ev["seq"] for ev in events if ev.get("kind") == "tool_call" and not ev.get("agent")}


def prune(source: Any, opts: PruneOptions, *, window: int | None = None, stats: PruneStats | None = None) -> Iterator[ViewItem]:
    """Prune the view of a Session, a path or a list of events, in two streaming passes (the
    view is never held whole). `window` defaults to the session's.

    `stats` is filled in as the output streams; it is complete when the iterator ends.
    """
    from .store import Session, session_window
    from .view import iter_view, plan_file, plan_view

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
    measure = Measure(opts, seqs)
    vstats = ViewStats()
    for vi in iter_view(events(False), vplan, stats=vstats):
        measure.feed(vi, vstats)
    measure.note_usage(vstats, end=True)  # a usage after the last item
    if window is None:
        window = session_window(source, first) if not isinstance(source, (list, tuple)) else _event_window(first)
    yield from _apply(measure, iter_view(events(True), vplan), window, st)


def _event_window(first: dict[str, Any] | None) -> int:
    from .events import DEFAULT_WINDOW

    w = (first or {}).get("window")
    return w if isinstance(w, int) and w > 0 else DEFAULT_WINDOW


def prune_item_stream(items: Iterable[Item], opts: PruneOptions, window: int, stats: PruneStats | None = None) -> list[ViewItem]:
    """Prune a request read as items (what `resume --format items` or `prune` printed)."""
    vis = []
    for item in items:
        canon = canonical(item)
        vis.append(ViewItem(item, canon, item_tokens(item, canon)))
    return prune_items(vis, opts, window, stats=stats)[0]


# -- comparing requests ----------------------------------------------------------------------


@dataclass
class PrefixReuse:
    items: int = 0  # items of the common prefix
    tokens: int = 0  # their tokens
    request_items: int = 0
    request_tokens: int = 0
    first_change_index: int | None = None
    first_change_seq: Any = None

    @property
    def ratio(self) -> float:
        return self.tokens / self.request_tokens if self.request_tokens else 0.0

    def as_dict(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["reuse"] = round(self.ratio, 4)
        return d


    def track(self, previous: Iterable[bytes], current: Iterable[ViewItem]) -> Iterator[ViewItem]:
        """Pass `current` through, measuring its common prefix with `previous` on the way."""
        prev = iter(previous)
        same = True
        for vi in current:
            self.request_items += 1
            self.request_tokens += vi.tokens
            if same:
                if next(prev, None) == vi.canon:
                    self.items += 1
                    self.tokens += vi.tokens
                else:
                    same = False
                    self.first_change_index = self.request_items - 1
                    self.first_change_seq = vi.item.get("seq")
            yield vi


def prefix_reuse(previous: Iterable[bytes], current: Iterable[ViewItem]) -> PrefixReuse:
    """The longest common prefix of two requests (canonical item equality, which is what the
    fingerprint chain hashes), in items and in the current request's tokens."""
    res = PrefixReuse()
    for _ in res.track(previous, current):
        pass
    return res


def item_lines_canon(path: str) -> list[bytes]:
    """Canonical forms of the items of an item stream file (an earlier prune output)."""
    from .errors import DataError, UsageError

    out = []
    try:
        with open(path, "rb") as f:
            for lineno, line in enumerate(f, 1):
                if not line.strip():
                    continue
                try:
                    item = orjson.loads(line)
                except orjson.JSONDecodeError as exc:
                    raise DataError(f"invalid JSON ({exc})", path=path, line=lineno) from None
                if not isinstance(item, dict) or "role" not in item:
                    raise DataError("not a view item (an object with 'role')", path=path, line=lineno)
                out.append(canonical(item))
    except OSError as exc:
        raise UsageError(f"{path}: {exc.strerror}") from None
    return out
