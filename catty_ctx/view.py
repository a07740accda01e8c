"""The context view: the fold from events to provider items (SPEC "The context view").

Two streaming passes, so a log of any size is folded in bounded memory:
1. `plan_view` reads only the lines a cheap byte search marks (compactions, rewinds,
   repairs, user messages) and decides what leaves the view: rewound seq ranges, events
   folded into the latest compaction, results dropped by `repair`, answers it added.
2. `iter_view` streams every event once and yields items in order, grouping an
   assistant message with its tool calls and the run of results after it.
grok-build rebuilds its view lossily at checkpoints (weakness #4); here the same log always
gives the same items, byte for byte.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from .events import Event
from .fingerprint import canonical
from .tokens import item_tokens, usage_context

Item = dict[str, Any]

# Lines that can change the shape of the view. A quoted word in a JSON string value is
# written with escaped quotes (\"word\"), so this only misses nothing and over-matches a
# little (a false match costs one parse).
_MARKER = re.compile(rb'"(?:compaction|rewind|repair|user)"')
_SCAN_CHUNK = 4 << 20


@dataclass(frozen=True)
class ViewItem:
    item: Item
    canon: bytes
    tokens: int


@dataclass
class ViewPlan:
    """What pass 1 decided: the latest compaction, rewound ranges, repair effects."""

    compaction: Event | None = None
    excluded: list[tuple[int, int]] = field(default_factory=list)  # [start, end) seq ranges, merged
    drops: frozenset[int] = frozenset()
    answers: dict[str, list[Event]] = field(default_factory=dict)
    turn_starts: list[int] = field(default_factory=list)  # seqs of real user messages still in view

    def is_excluded(self, seq: int) -> bool:
        return any(a <= seq < b for a, b in self.excluded)


@dataclass
class ViewStats:
    """Token accounting while the view streams (SPEC "Token estimates")."""

    items: int = 0
    sum_tokens: int = 0
    usage_seen: bool = False
    usage_context: int = 0
    usage_seq: int = -1
    since_usage: int = 0

    def add(self, tokens: int, pos: int) -> None:
        self.items += 1
        self.sum_tokens += tokens
        if self.usage_seen and pos > self.usage_seq:
            self.since_usage += tokens

    def on_usage(self, ev: Event) -> None:
        self.usage_seen = True
        self.usage_context = usage_context(ev)
        self.usage_seq = ev["seq"]
        self.since_usage = 0

    @property
    def tokens(self) -> int:
        """The last usage's context size + the items after it, else the sum of estimates."""
        if self.usage_seen:
            return self.usage_context + self.since_usage
        return self.sum_tokens


# -- pass 1 ------------------------------------------------------------------------------


def scan_markers(path: Path) -> Iterator[Event]:
    """Parse only the lines the marker search hits (complete lines; a torn tail is left out)."""
    loads = orjson.loads
    with open(path, "rb") as f:
        carry = b""
        while True:
            chunk = f.read(_SCAN_CHUNK)
            if not chunk:
                return
            data = carry + chunk if carry else chunk
            cut = data.rfind(b"\n") + 1
            body, carry = data[:cut], data[cut:]
            line_end = -1
            for m in _MARKER.finditer(body):
                if m.start() < line_end:
                    continue
                start = body.rfind(b"\n", 0, m.start()) + 1
                line_end = body.find(b"\n", m.end())
                try:
                    ev = loads(body[start:line_end])
                except orjson.JSONDecodeError:
                    continue  # pass 2 reports it with its line number
                if type(ev) is dict and type(ev.get("seq")) is int:
                    yield ev


def plan_view(markers: Iterable[Event], *, agent: str | None = None) -> ViewPlan:
    """Decide the view's shape from marker events (any superset of them, in seq order)."""
    turns: list[int] = []
    excluded: list[tuple[int, int]] = []
    compactions: list[Event] = []
    repairs: list[Event] = []
    for ev in markers:
        if ev.get("agent") != agent:
            continue
        kind = ev.get("kind")
        if kind == "message":
            if ev.get("role") == "user" and not ev.get("synthetic"):  # agent already matched
                turns.append(ev["seq"])
        elif kind == "rewind":
            k = ev.get("to_turn")
            if type(k) is int and 0 <= k < len(turns):
                excluded.append((turns[k], ev["seq"]))
                del turns[k:]
        elif kind == "compaction":
            compactions.append(ev)
        elif kind == "repair":
            repairs.append(ev)
    merged = _merge(excluded)
    plan = ViewPlan(excluded=merged, turn_starts=turns)

    def kept(e: Event) -> bool:
        return not any(a <= e["seq"] < b for a, b in merged)

    live = [c for c in compactions if kept(c) and type(c.get("through_seq")) is int]
    plan.compaction = live[-1] if live else None
    drops: set[int] = set()
    answers: dict[str, list[Event]] = {}
    for r in repairs:
        if not kept(r):
            continue
        action = r.get("action")
        if action == "drop" and type(r.get("target_seq")) is int:
            drops.add(r["target_seq"])
        elif action == "answer" and isinstance(r.get("call_id"), str):
            answers.setdefault(r["call_id"], []).append(r)
    plan.drops = frozenset(drops)
    plan.answers = answers
    return plan


def _merge(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


# -- items -------------------------------------------------------------------------------


def message_item(ev: Event) -> Item:
    item: Item = {"seq": ev["seq"], "role": ev["role"], "text": ev["text"]}
    if ev.get("synthetic"):
        item["synthetic"] = ev["synthetic"]
    if ev.get("images"):
        item["images"] = ev["images"]
    return item


def call_entry(ev: Event) -> dict[str, Any]:
    return {"call_id": ev["call_id"], "name": ev["name"], "args": ev["args"]}


def result_item(ev: Event) -> Item:
    item: Item = {"seq": ev["seq"], "role": "tool", "call_id": ev["call_id"], "is_error": ev["is_error"]}
    if "blob" in ev:
        item["output"] = ev.get("output") or f"[output stored as blob {ev['blob']}, {ev.get('bytes', 0)} bytes]"
        item["blob"] = ev["blob"]
    else:
        item["output"] = ev["output"]
    if ev.get("images"):
        item["images"] = ev["images"]
    return item


def answer_item(repair: Event) -> Item:
    return {
        "role": "tool",
        "call_id": repair["call_id"],
        "output": repair.get("text") or "This tool call was not executed: the session stopped before its result was recorded.",
        "is_error": True,
        "synthetic": repair.get("reason") or "dangling_call",
    }


class _Step:
    """An assistant message with its tool calls and the run of results after it."""

    __slots__ = ("assistant", "pos", "calls", "results")

    def __init__(self, assistant: Item, pos: int) -> None:
        self.assistant = assistant
        self.pos = pos
        self.calls: list[dict[str, Any]] = []
        self.results: list[tuple[Item, int]] = []


# -- pass 2 ------------------------------------------------------------------------------


def iter_view(
    events: Iterable[Event],
    plan: ViewPlan,
    *,
    agent: str | None = None,
    stats: ViewStats | None = None,
) -> Iterator[ViewItem]:
    """Stream the view's items from the events (in seq order) and the plan of pass 1."""
    from .compact.continuation import HeadState, build_head

    st = stats if stats is not None else ViewStats()
    comp = plan.compaction
    through = comp["through_seq"] if comp else -1
    comp_seq = comp["seq"] if comp else -1
    head = HeadState() if comp else None
    head_done = comp is None
    ranges = plan.excluded
    r_i = 0
    drops = plan.drops
    answers = plan.answers
    step: _Step | None = None

    def emit(item: Item, pos: int) -> ViewItem:
        canon = canonical(item)
        tokens = item_tokens(item, canon)
        st.add(tokens, pos)
        return ViewItem(item, canon, tokens)

    def flush(s: _Step) -> Iterator[ViewItem]:
        if s.calls:
            s.assistant["tool_calls"] = s.calls
        yield emit(s.assistant, s.pos)
        last = s.pos
        for item, pos in s.results:
            last = pos
            yield emit(item, pos)
        if answers:
            for call in s.calls:
                for rep in answers.get(call["call_id"], ()):
                    yield emit(answer_item(rep), last)

    for ev in events:
        seq = ev["seq"]
        while r_i < len(ranges) and seq >= ranges[r_i][1]:
            r_i += 1
        if r_i < len(ranges) and seq >= ranges[r_i][0]:
            continue
        if ev.get("agent") != agent:
            continue
        if seq <= through:
            head.track(ev)  # type: ignore[union-attr]
            continue
        if not head_done:
            head_done = True
            for item in build_head(comp, head):  # type: ignore[arg-type]
                yield emit(item, through)
        if seq in drops:
            continue
        kind = ev["kind"]
        if kind == "message":
            if step is not None:
                yield from flush(step)
                step = None
            item = message_item(ev)
            if ev["role"] == "assistant":
                step = _Step(item, seq)
            else:
                yield emit(item, seq)
        elif kind == "tool_call":
            if step is None:
                # Calls no assistant message carries get an empty assistant item (SPEC).
                step = _Step({"role": "assistant", "text": "", "synthetic": "implicit_assistant"}, seq)
            step.calls.append(call_entry(ev))
        elif kind == "tool_result":
            item = result_item(ev)
            if step is not None:
                step.results.append((item, seq))
            else:
                yield emit(item, seq)
        elif kind == "usage":
            if seq > comp_seq:
                st.on_usage(ev)
    if not head_done and comp is not None:
        for item in build_head(comp, head):  # type: ignore[arg-type]
            yield emit(item, through)
    if step is not None:
        yield from flush(step)


def view(source: Any, *, agent: str | None = None) -> list[Item]:
    """The items of a session (a Session, a path, or a list of events), fully materialised."""
    return [vi.item for vi in stream_view(source, agent=agent)]


def stream_view(source: Any, *, agent: str | None = None, stats: ViewStats | None = None) -> Iterator[ViewItem]:
    """The view of a Session, a path or a list of events, streamed."""
    from .store import Session

    if isinstance(source, (list, tuple)):
        plan = plan_view(source, agent=agent)
        yield from iter_view(source, plan, agent=agent, stats=stats)
        return
    session = source if isinstance(source, Session) else Session.open(source)
    plan = plan_view(scan_markers(session.log_path), agent=agent)
    yield from iter_view(session.events(), plan, agent=agent, stats=stats)
