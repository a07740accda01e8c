"""The decisions (images, `tiered`, `cache-aware`) and the rewrite that applies them (pass 2)."""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from ..view.fingerprint import canonical
from ..view.fold import Item, ViewItem
from ..view.tokens import item_tokens, over_threshold
from .forms import Meta, cleared_args, images_removed_item, omit_reason, placeholder_item, trimmed_item
from .options import PruneOptions, PruneStats

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


def plan_cache_aware(metas: Sequence[Meta], call_ids: Sequence[str], usages: Sequence[Usage], window: int, opts: PruneOptions,
                     schema: int = 0) -> Plan:
    """Batches replayed over the view: at the high-water mark, clear oldest-first to the low one.
    SCHEMA (the tool definitions' tokens) counts until a usage, which counted them, is seen."""
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
    extra = schema  # overhead of the latest usage (before one: the tool schemas the request carries)

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
        if i in plan.images and i not in plan.omit:  # a trimmed screenshot result loses its images too
            n = plan.images[i]
            new = images_removed_item(new or item, n, ref)
            stats.images_removed += n
        stats.items += 1
        if new is None:
            yield vi
            continue
        canon = canonical(new)
        tokens = item_tokens(new, canon)
        delta += vi.tokens - tokens
        yield ViewItem(new, canon, tokens)
    stats.tokens_cleared = delta
