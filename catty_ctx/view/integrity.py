"""Integrity: the check of what makes a session unsendable (docs/design.md#m5).

Providers require every tool call of an assistant item to be answered exactly once in the
run of tool items right after it. `PairingChecker` finds what breaks that, item by item,
so it works on a streamed view and on an item stream read from a pipe alike. What fixes it
is in `repair` (the log) and `pairing` (a request on its way out).
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

# The answer a dangling call gets (by `repair` and at the write boundaries alike, so a copy of
# a session made through a fork reads as its source does).
NOT_EXECUTED = (
    "This tool call was not executed: the session stopped before its result was recorded "
    "(answer added by catty-ctx repair)."
)


@dataclass
class Problem:
    kind: str  # dangling | orphan | duplicate
    call_id: str
    seq: int | None  # the item it was found at (the call's assistant for dangling)


@dataclass
class PairingChecker:
    dangling: int = 0
    orphan: int = 0
    duplicate: int = 0
    found: list[Problem] = field(default_factory=list)
    keep: int = 100  # how many problems to keep in detail
    _open: dict[str, bool] = field(default_factory=dict)  # call_id -> answered
    _open_seq: int | None = None

    def _note(self, kind: str, call_id: str, seq: int | None) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.found) < self.keep:
            self.found.append(Problem(kind, call_id, seq))

    def _close_run(self) -> None:
        for call_id, answered in self._open.items():
            if not answered:
                self._note("dangling", call_id, self._open_seq)
        self._open = {}

    def feed(self, item: dict[str, Any]) -> None:
        role = item.get("role")
        if role == "tool":
            call_id = item.get("call_id")
            cid = call_id if isinstance(call_id, str) else ""
            if cid in self._open:
                if self._open[cid]:
                    self._note("duplicate", cid, item.get("seq"))
                self._open[cid] = True
            else:
                self._note("orphan", cid, item.get("seq"))
            return
        self._close_run()
        calls = item.get("tool_calls")
        if role == "assistant" and calls:
            self._open_seq = item.get("seq")
            for call in calls:
                if isinstance(call, dict) and isinstance(call.get("call_id"), str):
                    self._open.setdefault(call["call_id"], False)

    def finish(self) -> PairingChecker:
        self._close_run()
        return self

    @property
    def counts(self) -> dict[str, int]:
        return {"dangling": self.dangling, "orphan": self.orphan, "duplicate": self.duplicate}

    @property
    def ok(self) -> bool:
        return not (self.dangling or self.orphan or self.duplicate)


def pairing_problems(items: Iterable[dict[str, Any]]) -> PairingChecker:
    checker = PairingChecker()
    for item in items:
        checker.feed(item)
    return checker.finish()
