"""The context view: the fold from events to provider items (docs/spec.md#the-context-view).

Two streaming passes, so a log of any size is folded in bounded memory:
1. `plan_file` parses only the lines a byte search marks (compactions, rewinds, repairs;
   user messages only when a rewind needs them) and `plan_view` decides what leaves the
   view: rewound seq ranges, events folded into the latest compaction, results dropped by
   `repair`, answers it added.
2. `iter_view` streams every event once and yields items in order, grouping an
   assistant message with its tool calls and the run of results after it, and keeps the
   fingerprint chain and token total as it goes.
grok-build rebuilds its view lossily at checkpoints (docs/design.md#w4); here the same log always
gives the same items, byte for byte.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

import orjson
from xxhash import xxh3_128_digest

from ..session.events import Event, check_event
from ..session.jsonl import scan_marked
from ..session.store import Session
from .announce import ANNOUNCED_FACETS, Announcer
from .fingerprint import seed
from .head import HeadState, build_head
from .tokens import item_tokens, usage_context

Item = dict[str, Any]

# Lines that can change the shape of the view hold one of these quoted words. Inside a JSON
# string a quoted word is written with escaped quotes (\"word\"), so the search misses no
# marker and over-matches a little (a false match costs one parse).
SHAPE_MARKERS = re.compile(rb'"(?:compaction|rewind|repair)"')
SHAPE_AND_TURN_MARKERS = re.compile(rb'"(?:compaction|rewind|repair|user)"')  # turns only matter to rewinds


class NeedsState(Exception):
    """A detached fold met an event whose item depends on the fold before its chunk."""


class Join:
    """Placed in the event stream where a chunk folded elsewhere (a `detached` fold) goes.

    `iter_view` completes what that chunk's first event would have completed in one
    stream (the pending step, the compaction head), then yields the marker itself so the
    consumer can merge the chunk's results at that point of the item order.
    """

    __slots__ = ("result",)

    def __init__(self, result: Any) -> None:
        self.result = result


class ViewItem(NamedTuple):
    item: Item
    canon: bytes  # canonical(item), computed once for tokens and fingerprints
    tokens: int


@dataclass
class ViewPlan:
    """What pass 1 decided: the latest compaction, rewound ranges, repair effects."""

    compaction: Event | None = None
    excluded: list[tuple[int, int]] = field(default_factory=list)  # [start, end) seq ranges, merged
    compactions: list[Event] = field(default_factory=list)  # all on the live branch, oldest first
    drops: frozenset[int] = frozenset()
    answers: dict[str, list[Event]] = field(default_factory=dict)
    repairs: dict[str, int] = field(default_factory=dict)  # reason -> calls and results fixed (or lines kept aside)

    def is_excluded(self, seq: int) -> bool:
        return any(a <= seq < b for a, b in self.excluded)


def exclusion(ranges: list[tuple[int, int]]) -> Callable[[int], bool]:
    """seq → whether the view leaves its event out: it falls in one of RANGES (a plan's merged
    [start, end) ranges of rewound turns). Asked in ascending seq order, as a log is read."""
    at = 0
    count = len(ranges)

    def excluded(seq: int) -> bool:
        nonlocal at
        while at < count and seq >= ranges[at][1]:
            at += 1
        return at < count and seq >= ranges[at][0]

    return excluded


@dataclass
class ViewStats:
    """Token accounting while the view streams (docs/spec.md#token-estimates)."""

    events: int = 0  # every event read, before any filtering
    kinds: dict[str, int] = field(default_factory=dict)
    roles: dict[str, int] = field(default_factory=dict)  # message events by role
    first: Event | None = None
    items: int = 0
    turns: int = 0  # real user messages on the live branch (compacted ones included)
    sum_tokens: int = 0
    digest: bytes = field(default_factory=seed)  # the fingerprint chain through the items so far
    usage_seen: bool = False
    usage_context: int = 0
    usage_seq: int = -1
    since_usage: int = 0
    schema_tokens: int | None = None  # the tool definitions the last state event declares (None: none did)

    def on_usage(self, ev: Event) -> None:
        self.usage_seen = True
        self.usage_context = usage_context(ev)
        self.usage_seq = ev["seq"]
        self.since_usage = 0

    @property
    def fp(self) -> str:
        """Hex fingerprint of the view so far (docs/spec.md#fingerprints)."""
        return self.digest.hex()

    @property
    def tokens(self) -> int:
        """The last usage's context size + the items after it, else the sum of estimates and
        the tool definitions a request carries beside the items (a usage counted them)."""
        if self.usage_seen:
            return self.usage_context + self.since_usage
        return self.sum_tokens + (self.schema_tokens or 0)


TOOL_FACETS = ("prompt_context", "tools")  # the state facets that declare the request's tools


def tool_schema_tokens(prompt_context: Any) -> int:
    """Tokens of the tool definitions a request carries (the `prompt_context` facet's `tools`):
    they share the window with the input, so the view's total and the ladder's budgets count them."""
    tools = prompt_context.get("tools") if isinstance(prompt_context, dict) else None
    if not isinstance(tools, list):
        return 0
    return sum(item_tokens(t) for t in tools if isinstance(t, dict))


def state_schema_tokens(ev: Event) -> int | None:
    """The tool schemas' tokens a state event declares (`prompt_context.tools`, or a `tools`
    facet's list), None when it declares none."""
    value = ev.get("value")
    if ev.get("facet") == "tools":
        value = {"tools": value}
    if not isinstance(value, dict) or not isinstance(value.get("tools"), list):
        return None
    return tool_schema_tokens(value)


# -- pass 1 ------------------------------------------------------------------------------


def scan_markers(
    path: Path, pattern: re.Pattern[bytes] = SHAPE_MARKERS, *, start: int = 0, stop: int | None = None
) -> Iterator[Event]:
    """Parse only the complete lines the pattern hits, in file order (a torn tail is left out).

    `start` and `stop`, line starts (`line_start`), limit the scan to the lines between them.
    """
    loads = orjson.loads
    for _, line in scan_marked(path, pattern, start=start, stop=stop):
        try:
            ev = loads(line)
        except orjson.JSONDecodeError:
            continue  # pass 2 reports it with its line number
        if check_event(ev) is None:  # every field the plan reads is valid; pass 2 reports an invalid line with its number
            yield ev


def plan_file(path: Path, *, agent: str | None = None) -> ViewPlan:
    """Pass 1 over a log file; the turn scan runs only when the log holds a rewind."""
    markers = list(scan_markers(path))
    if any(ev.get("kind") == "rewind" for ev in markers):
        markers = list(scan_markers(path, SHAPE_AND_TURN_MARKERS))
    return plan_view(markers, agent=agent)


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
    plan = ViewPlan(excluded=merged)

    def kept(e: Event) -> bool:
        return not any(a <= e["seq"] < b for a, b in merged)

    live = [c for c in compactions if kept(c) and type(c.get("through_seq")) is int]
    plan.compactions = live
    plan.compaction = live[-1] if live else None
    drops: set[int] = set()
    answers: dict[str, list[Event]] = {}
    for r in repairs:
        if not kept(r):
            continue
        reason = r.get("reason")
        if isinstance(reason, str):
            n = r.get("count")
            plan.repairs[reason] = plan.repairs.get(reason, 0) + (n if type(n) is int and n >= 0 else 1)
        action = r.get("action")
        if action == "drop" and type(r.get("target_seq")) is int:
            drops.add(r["target_seq"])
        elif action == "answer":
            ids = r.get("call_ids")  # a boundary's repair answers several calls (`boundary`)
            for cid in (ids if isinstance(ids, list) else [r.get("call_id")]):
                if isinstance(cid, str):
                    answers.setdefault(cid, []).append(r)
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


def chunk_start(plan: ViewPlan, *, agent: str | None = None) -> Callable[[Event], bool]:
    """Whether a valid event may open a chunk that a `detached` fold takes: a message that
    enters the view past the compaction, so everything pending before it is complete there."""
    through = plan.compaction["through_seq"] if plan.compaction else -1
    drops = plan.drops
    is_excluded = plan.is_excluded

    def starts(ev: Event) -> bool:
        seq = ev["seq"]
        return ev["kind"] == "message" and ev.get("agent") == agent and seq > through and seq not in drops and not is_excluded(seq)

    return starts


# -- items -------------------------------------------------------------------------------


def message_item(ev: Event) -> Item:
    item: Item = {"seq": ev["seq"], "role": ev["role"], "text": ev["text"]}
    if ev.get("synthetic"):
        item["synthetic"] = ev["synthetic"]
    if ev.get("images"):
        item["images"] = ev["images"]
    if "blob" in ev:  # an externalised message: `text` is its preview
        item["blob"] = ev["blob"]
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


def answer_item(repair: Event, call_id: str) -> Item:
    return {
        "role": "tool",
        "call_id": call_id,
        "output": repair.get("text") or "This tool call was not executed: the session stopped before its result was recorded.",
        "is_error": True,
        "synthetic": repair.get("reason") or "dangling_call",
    }


class _Step:
    """An assistant message with its tool calls and the run of results after it."""

    __slots__ = ("after", "assistant", "calls", "pos", "results")

    def __init__(self, assistant: Item, pos: int) -> None:
        self.assistant = assistant
        self.pos = pos
        self.calls: list[dict[str, Any]] = []
        self.results: list[tuple[Item, int]] = []
        self.after: list[tuple[Item, int]] = []  # announcements held until the results are in


# -- pass 2 ------------------------------------------------------------------------------


def _step_items(s: _Step, answers: dict[str, list[Event]], out: list[tuple[Item, int]]) -> None:
    """The step's assistant item (with its calls), its run of results, then repair answers."""
    if s.calls:
        s.assistant["tool_calls"] = s.calls
    out.append((s.assistant, s.pos))
    last = s.pos
    for entry in s.results:
        out.append(entry)
        last = entry[1]
    if answers:
        for call in s.calls:
            for rep in answers.get(call["call_id"], ()):
                out.append((answer_item(rep, call["call_id"]), last))
    out.extend(s.after)


def iter_view(
    events: Iterable[Event],
    plan: ViewPlan,
    *,
    agent: str | None = None,
    stats: ViewStats | None = None,
    detached: bool = False,
) -> Iterator[ViewItem]:
    """Stream the view's items from the events (in seq order) and the plan of pass 1.

    The events may hold `Join` markers (yielded back in place). `detached` folds a chunk
    that starts at a chunk start (`chunk_start`): the head is someone else's, and an event
    whose item would depend on the fold before the chunk raises NeedsState.
    """
    announcer = Announcer()
    st = stats if stats is not None else ViewStats()
    comp = plan.compaction
    through = comp["through_seq"] if comp else -1
    comp_seq = comp["seq"] if comp else -1
    head = HeadState() if comp and not detached else None
    head_done = comp is None or detached
    excluded = exclusion(plan.excluded) if plan.excluded else None
    drops = plan.drops
    answers = plan.answers
    step: _Step | None = None
    out: list[tuple[Item, int]] = []  # items ready to emit, with their position (seq) for tokens
    kinds = st.kinds
    roles = st.roles
    dumps = orjson.dumps
    sort_keys = orjson.OPT_SORT_KEYS
    h = xxh3_128_digest
    at_end = object()

    def rebuilt_head() -> list[tuple[Item, int]]:
        return [(item, through) for item in head_items(comp, head, announcer)]  # type: ignore[arg-type]  # rebuilt after a compaction only

    for ev in _with_end(events, at_end):
        if type(ev) is dict:
            seq = ev["seq"]
            kind = ev["kind"]
            st.events += 1
            kinds[kind] = kinds.get(kind, 0) + 1
            if kind == "message":
                roles[ev["role"]] = roles.get(ev["role"], 0) + 1
            elif st.first is None and kind == "session":
                if detached:
                    raise NeedsState("a session event")  # the announcer's window comes from the first
                st.first = ev
                if type(ev.get("window")) is int and ev["window"] > 0:
                    announcer.window = ev["window"]  # the listing's budget is a share of it
            if excluded is not None and excluded(seq):
                continue
            if ev.get("agent") != agent:
                continue
            if kind == "message" and ev["role"] == "user" and not ev.get("synthetic"):
                st.turns += 1
            elif kind == "state" and ev.get("facet") in TOOL_FACETS:
                schema = state_schema_tokens(ev)
                if schema is not None:
                    st.schema_tokens = schema
            if seq <= through:
                if detached:
                    raise NeedsState("an event the compaction folded")
                head.track(ev)  # type: ignore[union-attr]  # `through` is past -1 once a compaction made a head
                continue
            if not head_done:
                head_done = True
                out.extend(rebuilt_head())
            if seq in drops:
                continue
            if kind == "message":
                if step is not None:
                    _step_items(step, answers, out)
                    step = None
                item = message_item(ev)
                if ev["role"] == "assistant":
                    step = _Step(item, seq)
                else:
                    out.append((item, seq))
            elif kind == "tool_call":
                if step is None:
                    # Calls no assistant message carries get an empty assistant item (docs/spec.md#events).
                    step = _Step({"role": "assistant", "text": "", "synthetic": "implicit_assistant"}, seq)
                step.calls.append(call_entry(ev))
            elif kind == "tool_result":
                item = result_item(ev)
                if step is not None:
                    step.results.append((item, seq))
                else:
                    out.append((item, seq))
            elif kind == "usage":
                if seq > comp_seq and ev.get("off_branch") is not True:  # an abandoned branch's call measured another context
                    st.on_usage(ev)
            elif kind == "state":
                if detached and ev.get("facet") in ANNOUNCED_FACETS:
                    raise NeedsState("an announcement")  # it lists only what is new since earlier ones
                listing = announcer.feed(ev)
                if listing is not None:
                    (step.after if step is not None else out).append((listing, seq))
            if not out:
                continue
        else:  # the end, or a join: what the next event would have completed
            if not head_done:
                head_done = True
                out.extend(rebuilt_head())
            if step is not None:
                _step_items(step, answers, out)
                step = None
        for item, pos in out:
            canon = dumps(item, option=sort_keys)
            tokens = item_tokens(item, canon)
            st.items += 1
            st.sum_tokens += tokens
            if st.usage_seen and pos > st.usage_seq:
                st.since_usage += tokens
            if not detached:  # a detached chunk's chain needs the digest before it: its consumer extends it
                st.digest = h(st.digest + canon)
            yield ViewItem(item, canon, tokens)
        out.clear()
        if type(ev) is Join:
            yield ev  # type: ignore[misc]  # the marker passes on to the consumer that asked for joins


def head_items(comp: Event, head: Any, announcer: Any) -> list[Item]:
    """A compaction's rebuilt head (build_head, then the announcer's listing): one place for
    the view and for the compactor measuring the head it is about to commit."""
    items = build_head(comp, head)
    listing = announcer.head(head.facets)
    return [*items, listing] if listing is not None else items


def _with_end(events: Iterable[Event], end: Any) -> Iterator[Any]:
    yield from events
    yield end


def view(source: Any, *, agent: str | None = None) -> list[Item]:
    """The items of a session (a Session, a path, or a list of events), fully materialised."""
    return [vi.item for vi in stream_view(source, agent=agent)]


def stream_view(source: Any, *, agent: str | None = None, stats: ViewStats | None = None) -> Iterator[ViewItem]:
    """The view of a Session, a path or a list of events, streamed."""
    if isinstance(source, (list, tuple)):
        plan = plan_view(source, agent=agent)
        yield from iter_view(source, plan, agent=agent, stats=stats)
        return
    session = source if isinstance(source, Session) else Session.open(source)
    plan = plan_file(session.log_path, agent=agent)
    yield from iter_view(session.events(), plan, agent=agent, stats=stats)
