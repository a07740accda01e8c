"""Pairing repair in memory, on any request a command emits (docs/design.md#m5, "at every request build").

Providers take a request only when every tool call of an assistant is answered exactly once
in the run of tool results right after it, and when no message is empty. The log keeps what
happened; a request built from it must still be valid: a compaction made while a call was
running leaves its result after the new head (an orphan), a crash leaves a call unanswered,
a retried tool leaves two results. `repair_stream` fixes a stream of items on the way out,
holding one assistant and its run at a time, with grok-build's rules:

- a repeated call id within one assistant keeps its first declaration;
- a repeated result within a run keeps the last one (at its own place in the run);
- a result outside the run of the assistant that declared it is dropped (orphan, displaced);
- an unanswered call gets a synthetic error result at the end of its run, in call order;
- an empty message (no text, no images, no calls) is dropped.

It is deterministic, so a command that reads its items twice (prune's two passes) gets the
same repaired stream both times, and a valid stream passes through unchanged.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from .fingerprint import canonical
from .fold import ViewItem
from .providers import is_empty
from .tokens import item_tokens

Item = dict[str, Any]
T = TypeVar("T")

ANSWER_TEXT = (
    "This tool call was not executed: no result for it was recorded before this request "
    "was built (answer added by catty-ctx)."
)


class PairRepair(Generic[T]):
    """Counts of what was fixed, and the fixing generator; `item_of` reads a T's item and
    `make` wraps a new (synthetic) item as a T."""

    def __init__(self, item_of: Callable[[T], Item], make: Callable[[Item], T]) -> None:
        self.item_of = item_of
        self.make = make
        self.fixed: Counter[str] = Counter()

    def notes(self) -> list[str]:
        words = {"dangling": ("dangling call", "answered"), "orphan": ("orphan result", "dropped"), "duplicate": ("duplicate result", "dropped"),
                 "repeated_call": ("repeated call", "dropped"), "empty": ("empty message", "dropped")}
        return [f"{n} {words[k][0]}{'s' if n > 1 else ''} {words[k][1]}" for k, n in sorted(self.fixed.items())]

    def _flush(self, head: T | None, calls: list[str], results: dict[str, T]) -> Iterator[T]:
        if head is None:
            return
        yield head
        yield from results.values()
        for cid in calls:
            if cid not in results:
                self.fixed["dangling"] += 1
                yield self.make({"role": "tool", "call_id": cid, "output": ANSWER_TEXT, "is_error": True, "synthetic": "dangling_call"})

    def __call__(self, stream: Iterable[T]) -> Iterator[T]:
        head: T | None = None  # the assistant whose run is open
        calls: list[str] = []
        results: dict[str, T] = {}  # call id -> its last result, in arrival order of the kept ones
        for x in stream:
            item = self.item_of(x)
            if item.get("role") == "tool":
                cid = item.get("call_id")
                if head is not None and cid in calls:
                    if cid in results:
                        self.fixed["duplicate"] += 1
                        del results[cid]  # the last one stays, at its own place
                    results[cid] = x
                else:
                    self.fixed["orphan"] += 1
                continue
            yield from self._flush(head, calls, results)
            head, calls, results = None, [], {}
            if is_empty(item):
                self.fixed["empty"] += 1
                continue
            tcs = item.get("tool_calls")
            if item.get("role") == "assistant" and tcs:
                ids = [c.get("call_id") for c in tcs]
                if len(set(ids)) != len(ids):
                    seen: set[Any] = set()
                    kept = []
                    for c in tcs:
                        if c.get("call_id") not in seen:
                            seen.add(c.get("call_id"))
                            kept.append(c)
                    self.fixed["repeated_call"] += len(tcs) - len(kept)
                    x = self.make({**item, "tool_calls": kept})
                    ids = [c.get("call_id") for c in kept]
                head, calls = x, ids
                continue
            yield x
        yield from self._flush(head, calls, results)


def item_repair() -> PairRepair[Item]:
    """A repairer of plain items."""
    return PairRepair(lambda it: it, lambda it: it)


def view_item_repair() -> PairRepair[Any]:
    """A repairer of ViewItems (prune's stream): new items get their canonical form and estimate."""

    def make(item: Item) -> Any:
        canon = canonical(item)
        return ViewItem(item, canon, item_tokens(item, canon))

    return PairRepair(lambda vi: vi.item, make)


def repair_items(items: Iterable[Item]) -> tuple[list[Item], list[str]]:
    """Items repaired for a provider, and what was fixed (short phrases)."""
    fix = item_repair()
    out = list(fix(items))
    return out, fix.notes()
