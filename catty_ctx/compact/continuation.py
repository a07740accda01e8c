"""The rebuilt head after a compaction and the continuation state it re-injects (reference 3.8).

The view calls `build_head` for the latest compaction: the original system items, the
instructions, the last real user query, the summary carrier with its mode hint, and a
system reminder carrying the running state, so an agent resumes knowing what it was doing.
"""
from __future__ import annotations

from typing import Any

from ..events import Event

SUMMARY_PREAMBLE = (
    "This session is being continued from an earlier conversation that ran out of context. "
    "The summary below covers the earlier part of the conversation."
)


class HeadState:
    """What the head needs from the events a compaction folded away (small, streamed)."""

    __slots__ = ("system_items", "seen_user", "last_user", "facets")

    def __init__(self) -> None:
        self.system_items: list[dict[str, Any]] = []
        self.seen_user = False
        self.last_user: dict[str, Any] | None = None
        self.facets: dict[str, Any] = {}

    def track(self, ev: Event) -> None:
        kind = ev.get("kind")
        if kind == "message":
            role = ev.get("role")
            if role in ("system", "developer") and not self.seen_user and not ev.get("synthetic"):
                self.system_items.append({"seq": ev["seq"], "role": role, "text": ev["text"]})
            elif role == "user" and not ev.get("synthetic"):
                self.seen_user = True
                item: dict[str, Any] = {"seq": ev["seq"], "role": "user", "text": ev["text"]}
                if ev.get("images"):
                    item["images"] = ev["images"]
                self.last_user = item
        elif kind == "state" and isinstance(ev.get("facet"), str):
            self.facets[ev["facet"]] = ev.get("value")
        elif kind == "compaction":
            # An earlier compaction's head is what its successor rebuilds from.
            pass


def mode_hint(comp: Event) -> str:
    mode = comp.get("mode")
    if mode == "transcript":
        lo = comp.get("from_seq", 0)
        return f"\n\nThe full transcript of the summarised part is in updates.jsonl, seq {lo}..{comp['through_seq']}."
    if mode == "segments" and comp.get("segment") is not None:
        return (
            f"\n\nThe summarised part is archived verbatim in segments/ (this one: {comp['segment']}); "
            "segments/INDEX.md lists every segment. Search them before asking the user again."
        )
    return ""


def render_state(facets: dict[str, Any]) -> str:
    """The continuation state as a system reminder; empty when there is nothing to carry."""
    lines: list[str] = []
    edited = facets.get("edited_files")
    if isinstance(edited, list) and edited:
        lines.append("Files edited in this session: " + ", ".join(str(p) for p in edited))
    todos = facets.get("todos")
    if isinstance(todos, list) and todos:
        open_todos = [t for t in todos if isinstance(t, dict) and t.get("status") in ("pending", "in_progress")]
        done = sum(1 for t in todos if isinstance(t, dict) and t.get("status") == "completed")
        for t in open_todos:
            lines.append(f"- [{t.get('status')}] {t.get('text', '')}")
        if done:
            lines.append(f"({done} todo(s) already completed)")
    jobs = facets.get("jobs")
    if isinstance(jobs, list):
        for j in jobs:
            if isinstance(j, dict) and j.get("status") == "running":
                lines.append(f"Background job {j.get('id')} running: {j.get('command')}")
    subagents = facets.get("subagents")
    if isinstance(subagents, list):
        for a in subagents:
            if isinstance(a, dict) and a.get("status") == "running":
                lines.append(f"Subagent {a.get('id')} ({a.get('type')}) running: {a.get('description')}")
    if facets.get("plan"):
        lines.append(f"Plan: {facets['plan']}")
    if not lines:
        return ""
    return "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>"


def build_head(comp: Event, state: HeadState) -> list[dict[str, Any]]:
    """The items that stand for everything a compaction folded away, in grok-build's order."""
    head: list[dict[str, Any]] = list(state.system_items)
    instructions = state.facets.get("instructions")
    if isinstance(instructions, list) and instructions:
        parts = [f"# {i.get('path')}\n{i.get('text', '')}" for i in instructions if isinstance(i, dict)]
        head.append({"role": "user", "text": "<instructions>\n" + "\n\n".join(parts) + "\n</instructions>", "synthetic": "instructions"})
    if state.last_user is not None:
        head.append(state.last_user)
    carrier = f"{SUMMARY_PREAMBLE}\n\n<summary>\n{comp['summary']}\n</summary>{mode_hint(comp)}"
    head.append({"role": "user", "text": carrier, "synthetic": "compaction_summary"})
    reminder = render_state(state.facets)
    if reminder:
        head.append({"role": "user", "text": reminder, "synthetic": "continuation_state"})
    return head
