"""A compaction's measure of the view: its size and fingerprint, the items to summarise and
the state the new head will carry (one streaming pass); and the head the view will rebuild
after it, checked against the pairing rules and the window (docs/design.md#m6, #m7).

The pairing checks and the repairs load where a measure or a head needs them: importing
`compact.segments` (fork, segment, report) runs the package, this module with it.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..repair.fix import repaired_items
from ..session.events import DEFAULT_WINDOW, SPAN_KINDS, Event
from ..session.store import Session, session_window
from ..view.announce import Announcer
from ..view.fingerprint import prefix_fp
from ..view.fold import ViewStats, exclusion, head_items, iter_view, plan_file
from ..view.head import HeadState, build_head
from ..view.integrity import PairingChecker
from ..view.pairing import repair_items
from ..view.tokens import item_tokens
from .ladder import WindowTooSmall


@dataclass
class Measure:
    """One pass over a session: the view's size and fingerprint, and the next head's state."""

    session_id: str | None
    window: int
    tokens: int
    fp: str
    last_seq: int
    previous: Event | None  # the latest compaction now in force
    head: HeadState
    first: Event | None = None  # the session event
    items: list[dict[str, Any]] = field(default_factory=list)
    span: list[Event] = field(default_factory=list)  # what a segment archives (segments mode)
    repaired: list[str] = field(default_factory=list)  # what the repaired view fixed, if anything
    schema: int = 0  # the tool definitions' tokens: the latest `prompt_context.tools` or `tools` facet (the view's rule)

    @property
    def span_from(self) -> int:
        """The first seq this compaction folds that no earlier one did."""
        return self.previous["through_seq"] + 1 if self.previous is not None else 0

    @property
    def nothing_new(self) -> bool:
        """No event after the last compaction (or nothing but the session event)."""
        if self.previous is not None:
            return self.last_seq <= self.previous["seq"]
        return self.last_seq <= 0




def measure(session: Session, *, keep_items: bool = True, keep_span: bool = False) -> Measure:
    """Stream the view once; tap the events for the state of a head that would fold them all
    (and, for a segment, the events after the previous compaction)."""
    plan = plan_file(session.log_path)
    head = HeadState()
    last = [-1]
    span: list[Event] = []
    span_from = plan.compaction["through_seq"] + 1 if plan.compaction else 0

    def tap(events: Iterator[Event]) -> Iterator[Event]:
        excluded = exclusion(plan.excluded)  # the view's own rule, before it tracks its head
        track = head.track
        for ev in events:
            seq = ev["seq"]
            last[0] = seq
            if not excluded(seq) and ev.get("agent") is None:
                track(ev)
                if keep_span and seq >= span_from and ev["kind"] in SPAN_KINDS:
                    span.append(ev)
            yield ev

    stats = ViewStats()
    items: list[dict[str, Any]] = []
    checker = PairingChecker()
    for vi in iter_view(tap(session.events()), plan, stats=stats):
        if keep_items:
            items.append(vi.item)
            checker.feed(vi.item)
    fp = stats.fp
    repaired: list[str] = []
    if keep_items and not checker.finish().ok:
        # A summariser gets what a provider would: the repaired view (dangling calls
        # answered, orphans and duplicates gone). Only a broken view pays this second pass.
        items, repaired = repaired_items(session)
        fp = prefix_fp(items)
    if keep_items:
        # What the summariser gets must be a request a provider takes; the log's repairs
        # above cover what it records, this covers what the view makes of it (a compaction
        # made while a call ran leaves its result after the head) and empty messages.
        items, fixed = repair_items(items)
        if fixed:
            repaired += fixed
            fp = prefix_fp(items)
    ev0 = stats.first
    return Measure(
        session_id=ev0.get("session_id") if ev0 else None,
        window=session_window(session, ev0),
        tokens=stats.tokens,
        schema=stats.schema_tokens or 0,
        fp=fp,
        last_seq=last[0],
        previous=plan.compaction,
        head=head,
        first=ev0,
        items=items,
        span=span,
        repaired=repaired,
    )


def checked_head(comp: Event, head: HeadState) -> str:
    """Validate the new head with the pairing rules: `full`, or `minimal` (grok-build's
    minimal safe history: system items and the summary) when the full one would break them."""
    checker = PairingChecker()
    for it in build_head(comp, head):
        checker.feed(it)
    return "full" if checker.finish().ok else "minimal"


def choose_head(comp: Event, m: Measure) -> str:
    """The post-compaction check: the full head when it pairs and fits the window; else the
    minimal safe history (system items and the summary); and when not even that fits, a
    WindowTooSmall error: nothing is committed."""
    kind = checked_head(comp, m.head)
    if kind == "full" and m.window > 0 and head_tokens(comp, m) > m.window:
        kind = "minimal"
    if kind == "minimal" and m.window > 0:
        need = head_tokens({**comp, "head": "minimal"}, m)
        if need > m.window:
            raise WindowTooSmall(
                f"the window ({m.window:,} tokens) is too small: even the minimal history after "
                f"compaction (system items and the summary) takes {need:,} tokens; nothing was compacted"
            )
    return kind


def head_tokens(comp: Event, m: Measure) -> int:
    return sum(item_tokens(it) for it in new_head(comp, m))


def new_head(comp: Event, m: Measure) -> list[dict[str, Any]]:
    """The head the view will rebuild for `comp`, exactly (announcer listing included)."""

    window = m.first.get("window") if m.first else None
    return head_items(comp, m.head, Announcer(window if type(window) is int and window > 0 else DEFAULT_WINDOW))
