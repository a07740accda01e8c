"""The one step from a view to an agent's records: items → turns of the conversation.

Both writers (`claude`, `codex`) take the same list of `Step`s: a user message, an
assistant message with its tool calls, the run of results that answers those calls, or an
instruction message (system or developer). Each step carries the id and time of the event
it came from (`docs/writeback.md`, "What the copy holds"). Empty messages and whitespace-only
text are gone before a writer sees a step: providers refuse them.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

Item = dict[str, Any]


@dataclass
class Step:
    kind: str  # "user", "assistant", "results", "instructions"
    items: list[Item]  # one message item, or the run of result items
    origin_id: str | None = None  # the message event's id (a record uuid in a Claude source)
    ts: str | None = None  # the source event's time (None: a synthetic item)
    calls: list[dict[str, Any]] = field(default_factory=list)  # assistant: its tool calls

    @property
    def item(self) -> Item:
        return self.items[0]


def has_text(text: Any) -> bool:
    """Text a provider takes as a block: a string that is not only whitespace."""
    return isinstance(text, str) and bool(text.strip())


def to_steps(items: Iterable[Item], origins: dict[int, tuple[str | None, str | None]]) -> list[Step]:
    """The conversation of a repaired view (calls answered right after their assistant), in order.

    ORIGINS maps an event's seq to its (id, ts). A message whose text is whitespace only and
    which has no images and no calls is left out; so is whitespace-only text beside calls."""
    steps: list[Step] = []
    for it in items:
        role = it.get("role")
        seq = it.get("seq")
        origin_id, ts = origins.get(seq, (None, None)) if isinstance(seq, int) else (None, None)
        if role == "tool":
            if steps and steps[-1].kind == "results":
                steps[-1].items.append(it)
            else:
                steps.append(Step("results", [it], ts=ts))
            continue
        text = it.get("text")
        calls = list(it.get("tool_calls") or ())
        if not has_text(text) and not it.get("images") and not calls:
            continue  # whitespace-only (or empty) message: nothing a provider takes
        if not has_text(text) and text:
            it = {**it, "text": ""}
        if role == "assistant":
            steps.append(Step("assistant", [it], origin_id, ts, calls))
        elif role == "user":
            steps.append(Step("user", [it], origin_id, ts))
        else:
            steps.append(Step("instructions", [it], origin_id, ts))
    return steps


def parse_ts(ts: Any) -> datetime | None:
    if not isinstance(ts, str):
        return None
    try:
        t = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=timezone.utc)


def format_ts(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{t.microsecond // 1000:03d}Z"


class Clock:
    """Record times: the source's where they rise, else a millisecond after the previous one
    (Claude Code takes the newest leaf as the tip; Codex reads its lines in order)."""

    def __init__(self, now: datetime) -> None:
        self.last: datetime | None = None
        self.now = now

    def __call__(self, ts: Any) -> str:
        t = parse_ts(ts)
        step = timedelta(milliseconds=1)
        if self.last is not None and (t is None or t < self.last + step):
            t = self.last + step
        elif t is None:
            t = self.now
        self.last = t
        return format_ts(t)
