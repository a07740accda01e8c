"""What compaction costs, as `usage` events the ledger reads (docs/design.md#w9).

grok-build records no summariser or prefire call, so its ledgers never show what compaction
cost. Here every answered model call of a summariser (each attempt, pass 1 included) becomes
a `usage` event of agent `compaction`, named by the summariser's model: the tokens the
provider reported, or the estimator's figure flagged `estimated` when it reported none.
The extractive summariser calls no model and costs nothing, so it records nothing.
"""
from __future__ import annotations

from ..session.events import Event, now_ts
from .ladder import Summarizer, SummaryResult

AGENT = "compaction"
_FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning", "request_id")


def spend_events(summarizer: Summarizer, result: SummaryResult, *, purpose: str) -> list[Event]:
    """One `usage` event per answered call of `result` (purpose: compaction | prefire)."""
    model = getattr(summarizer, "model", None) or summarizer.id
    out: list[Event] = []
    ts = now_ts()
    for attempt in result.attempts:
        used = attempt.get("usage")
        if not isinstance(used, dict):
            continue
        ev: Event = {"kind": "usage", "ts": ts, "agent": AGENT, "model": model, "purpose": purpose}
        ev.update({k: used[k] for k in _FIELDS if k in used})
        if used.get("estimated"):
            ev["estimated"] = True
        out.append(ev)
    return out
