"""`usage --by block`: the calls in 5-hour windows, as Claude's plans count them (docs/usage.md#blocks).

A block begins at its first call's time floored to the UTC hour and lasts 5 hours; a call
more than 5 hours after the block's start, or more than 5 hours after the call before it,
begins the next block (ccusage's rule, so the windows are ccusage's `blocks`). Each block's
row adds its window, its first and last activity, the burn rate over that span, and for the
block still running, a projection to its end at that rate.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .records import Record

BLOCK_SECONDS = 5 * 3600
_HOUR = 3600


def iso(ts: float) -> str:
    """TS (epoch seconds) as the rows name times: UTC, milliseconds, `Z`."""
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def block_keys(calls: list[Record]) -> tuple[list[str], dict[str, list[float]]]:
    """Each call's block (its start, `iso`), in CALLS' order, and each block's [start, first, last] (epoch seconds)."""
    keys = [""] * len(calls)
    spans: dict[str, list[float]] = {}
    start = last = 0.0
    key = ""
    for i in sorted(range(len(calls)), key=lambda i: calls[i].ts):
        t = calls[i].ts
        if not key or t - start > BLOCK_SECONDS or t - last > BLOCK_SECONDS:
            start = t - t % _HOUR
            key = iso(start)
            spans[key] = [start, t, t]
        keys[i] = key
        spans[key][2] = last = t
    return keys, spans


def describe(rows: list[dict[str, Any]], spans: dict[str, list[float]], now: float | None = None) -> list[dict[str, Any]]:
    """ROWS (by block) with each block's window, activity, burn rate and, while it runs, projection."""
    now = time.time() if now is None else now
    out = []
    for row in rows:
        start, first, last = spans[row["block"]]
        end = start + BLOCK_SECONDS
        tokens = row["input"] + row["output"] + row["cache_read"] + row["cache_write"]
        hours = (last - first) / _HOUR
        cost = row["cost_usd"]
        tokens_hour = tokens / hours if hours > 0 else None
        cost_hour = cost / hours if hours > 0 and cost is not None else None
        active = now < end and now - last < BLOCK_SECONDS
        projection = None
        if active and tokens_hour is not None:
            left = (end - now) / _HOUR
            projection = {"tokens": round(tokens + tokens_hour * left),
                          "cost_usd": None if cost is None or cost_hour is None else round(cost + cost_hour * left, 6),
                          "minutes_left": round(left * 60, 1)}
        out.append({**row, "end": iso(end), "first": iso(first), "last": iso(last), "active": active,
                    "tokens": tokens, "tokens_per_hour": None if tokens_hour is None else round(tokens_hour, 1),
                    "cost_per_hour": None if cost_hour is None else round(cost_hour, 6), "projection": projection})
    return out


def current(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The block still running among ROWS (described), or None."""
    return next((r for r in reversed(rows) if r.get("active")), None)
