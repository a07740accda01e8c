"""The ledger: the calls (one per provider call, see `copies`) folded into priced rows by a key.

Imports nothing heavy at load (a cached answer is returned as a `Ledger`).
"""
from __future__ import annotations

import math

from ..defaults import USAGE_BY
from ..errors import UsageError
from .blocks import block_keys, describe
from .copies import dedupe
from .outcome import Ledger
from .prices import DAY, TIER_TOKENS, Prices, cost_at, load_prices
from .times import day_of, iso_week

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from datetime import tzinfo
    from typing import Any

    from .records import Record

    # The buckets of `fold_calls`: plain containers, so that the kept ledger is written with marshal.
    Folded = dict[str, Any]

BY_CHOICES = USAGE_BY
_FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning", "calls")


def build_ledger(records: Iterable[Record], *, by: str = "model", tz: tzinfo | None = None, since: str | None = None,
                 until: str | None = None, prices: Prices | None = None, running: Iterable[str] = ()) -> Ledger:
    """Fold calls into rows: input, output, cache_read, cache_write, reasoning, calls, cost_usd, partial.

    A row is partial when some of its calls have no price (its cost counts the priced ones;
    with none priced it is null).
    A session holding an `incomplete` usage, or RUNNING a subagent, makes the ledger incomplete:
    every row with calls of that session is partial and shows no cost, and neither do the totals.
    """
    if by not in BY_CHOICES:
        raise UsageError(f"--by must be one of {', '.join(BY_CHOICES)}")
    records = list(records)
    kept = dedupe(records)
    folded = fold_calls(kept, by=by, tz=tz, since=since, until=until, running=running)
    return ledger_of(folded, by=by, prices=prices or load_prices(), calls_read=len(records), duplicates=len(records) - len(kept))


def fold_calls(kept: list[Record], *, by: str, tz: tzinfo | None = None, since: str | None = None, until: str | None = None,
               into: Folded | None = None, running: Iterable[str] = ()) -> Folded:
    """The deduped calls summed into (row, model, tier, unpriced, UTC day) buckets, INTO's when given.

    What the rows are made of (`ledger_of`), kept between runs so that calls appended to a log
    can be added to it (see `kept`). Reported costs are added in call order. The sessions
    RUNNING a subagent (`Scan.running`) are incomplete as a session with an `incomplete` call is.
    """
    folded = into if into is not None else {"buckets": {}, "reported": {}, "incomplete_rows": [], "incomplete_sessions": []}
    day = day_of(tz)
    if since or until:
        lo, hi = since or "0000-00-00", until or "9999-99-99"
        kept = [r for r in kept if lo <= day(r.ts) <= hi]
    incomplete_sessions = {r.session for r in kept if r.incomplete}.union(running)

    if by in ("day", "week", "month"):
        keys = [day(r.ts) for r in kept]
        if by == "week":
            weeks = {d: iso_week(d) for d in dict.fromkeys(keys)}
            keys = [weeks[d] for d in keys]
        elif by == "month":
            keys = [d[:7] for d in keys]
    elif by == "block":  # (a block depends on every call before it: never folded into a kept fold)
        keys, folded["spans"] = block_keys(kept)
    else:
        keys = [getattr(r, by) for r in kept]

    buckets: dict[tuple[str, str, bool, bool, int], list[int]] = folded["buckets"]
    reported: dict[str, float] = folded["reported"]
    bucket, tier, day_seconds = buckets.get, TIER_TOKENS, DAY  # (bound once: this runs per call)
    for r, k in zip(kept, keys):
        inp, cr, cw, cost = r.input, r.cache_read, r.cache_write, r.cost
        # (the UTC day: prices apply at the call's date; a reported cost needs none)
        bk = (k, r.model, inp + cr + cw > tier, cost is None, int(r.ts // day_seconds) if cost is None else 0)
        b = bucket(bk)
        if b is None:
            b = buckets[bk] = [0, 0, 0, 0, 0, 0, 0]
        b[0] += inp
        b[1] += r.output
        b[2] += cr
        b[3] += cw
        b[4] += r.reasoning
        b[5] += 1
        b[6] += r.cache_write_1h  # (of b[3]: priced at the one-hour rate)
        if cost is not None:
            reported[k] = reported.get(k, 0.0) + cost
    if incomplete_sessions:
        rows = set(folded["incomplete_rows"])
        rows.update(k for r, k in zip(kept, keys) if r.session in incomplete_sessions)
        folded["incomplete_rows"] = sorted(rows)
        folded["incomplete_sessions"] = sorted(incomplete_sessions.union(folded["incomplete_sessions"]))
    return folded


def ledger_of(folded: Folded, *, by: str, prices: Prices, calls_read: int, duplicates: int) -> Ledger:
    """The priced rows and totals of folded buckets; each unpriced bucket is priced once."""
    buckets, reported = folded["buckets"], folded["reported"]
    acc: dict[str, list[Any]] = {}  # per group: 6 counts, cost, unpriced calls, incomplete
    for (k, _model, _above, _unpriced, _day), b in buckets.items():
        a = acc.get(k)
        if a is None:
            a = acc[k] = [0, 0, 0, 0, 0, 0, reported.get(k, 0.0), 0, False]
        for i in range(6):
            a[i] += b[i]
    prices.prepare(model for (_k, model, _a, unpriced, _d) in buckets if unpriced)  # (each new name resolved once)
    known: dict[tuple[str, bool, int], Any] = {}  # (model, tier, day) → its rates: looked up once
    for (k, model, above, unpriced, day), b in buckets.items():
        if unpriced:
            r = known.get((model, above, day), known)
            if r is known:
                r = known[model, above, day] = prices.rates(model, day, above)
            if r is None:
                acc[k][7] += b[5]
            else:
                acc[k][6] += cost_at(r, b[0], b[1], b[2], b[3], b[6])
    for k in folded["incomplete_rows"]:
        acc[k][8] = True

    def row(a: list[Any]) -> dict[str, Any]:
        out = dict(zip(_FIELDS, a[:6]))
        # Withheld when incomplete; unknown (not zero) when no call of the row has a price, or
        # when the prices given overflow (an infinite cost is no amount to print or add up).
        overflow = not math.isfinite(a[6])
        out["cost_usd"] = None if a[8] or overflow or (a[7] and a[7] == a[5]) else round(a[6], 6)
        out["partial"] = bool(a[7]) or a[8] or overflow
        return out

    rows = [{by: k, **row(a)} for k, a in sorted(acc.items())]
    if by == "block":
        rows = describe(rows, folded["spans"])
    tot = [sum(a[i] for a in acc.values()) for i in range(8)] + [any(a[8] for a in acc.values())]
    return Ledger(by=by, rows=rows, totals=row(tot), incomplete=bool(folded["incomplete_sessions"]), calls_read=calls_read,
                  duplicates=duplicates, prices_date=prices.date, prices_source=prices.source)
