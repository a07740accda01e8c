"""The rebuilt head after a compaction and the continuation state it re-injects (docs/design.md#m8).

The view calls `build_head` for the latest compaction: the original system items, the
user-info item (the environment the user works in), the instructions, the last real user query, the summary carrier with its mode hint, and a
system reminder carrying the continuation state, so an agent resumes knowing what it was
doing. The continuation state (tracked and rendered by `continuation`, as a hook's reminder is)
is a versioned structure built from `state` events and from the log itself (files touched by
edit/write calls), so it survives any number of rounds: every head is rebuilt from the whole
log up to its `through_seq`, never from the previous head.
"""
from __future__ import annotations

from typing import Any, ClassVar

from ..session.events import Event
from .continuation import HEAD_PARTS, VERSION, Continuation, render_lines

CONTINUATION_VERSION = VERSION
OUTPUTS_KEPT = 20  # handles of externalised outputs a head lists (the latest)
SUMMARY_PREAMBLE = (
    "This session is being continued from an earlier conversation that ran out of context. "
    "The summary below covers the earlier part of the conversation."
)
# Summaries that already open with a continuation preamble (Claude Code writes its compaction
# summary as the whole message it sends) are carried as they are.
CARRIED_PREAMBLES = ("This session is being continued from a previous conversation", SUMMARY_PREAMBLE[:60])


class HeadState(Continuation):
    """What the head needs from the events a compaction folded away (small, streamed): the
    continuation tracker, and the system items, the last real user message, the latest earlier
    compaction and the session event. The user's own words reach the head as its items, and
    what failed as its summary, not through the tracker."""

    FEEDS: ClassVar[dict[str, str]] = {**Continuation.FEEDS, "session": "_session", "tool_result": "_output"}
    KEEPS_CALLS: ClassVar[bool] = False

    def __init__(self) -> None:
        super().__init__()
        self.system_items: list[dict[str, Any]] = []
        self.seen_user = False
        self.last_user: dict[str, Any] | None = None
        self.previous: Event | None = None  # the latest earlier compaction
        self.session: Event | None = None  # the session event (its cwd and model)
        self.outputs: dict[str, dict[str, Any]] = {}  # blob handle -> the folded result moved there (latest OUTPUTS_KEPT)

    def _compaction(self, ev: Event) -> None:
        self.compactions += 1
        self.previous = ev

    def _output(self, ev: Event) -> None:
        """A result whose output was moved to a blob: its handle is how the agent reads it
        again once the compaction folded the result away."""
        self._result(ev)
        handle = ev.get("blob")
        if isinstance(handle, str) and handle:
            self.outputs.pop(handle, None)
            self.outputs[handle] = {"blob": handle, "call_id": ev.get("call_id"), "seq": ev.get("seq"), "bytes": ev.get("bytes")}
            while len(self.outputs) > OUTPUTS_KEPT:
                self.outputs.pop(next(iter(self.outputs)))

    def _session(self, ev: Event) -> None:
        if self.session is None:
            self.session = ev

    def _message(self, ev: Event) -> None:
        role = ev.get("role")
        if role in ("system", "developer") and not self.seen_user and not ev.get("synthetic"):
            self.system_items.append({"seq": ev["seq"], "role": role, "text": ev["text"]})
        elif role == "user" and not ev.get("synthetic"):
            self.seen_user = True
            item: dict[str, Any] = {"seq": ev["seq"], "role": "user", "text": ev["text"]}
            if ev.get("images"):
                item["images"] = ev["images"]
            self.last_user = item


def continuation_state(state: HeadState) -> dict[str, Any]:
    """The versioned continuation state a head carries: what a resumed agent must not forget,
    and the handles of the outputs kept in blobs that the compaction folded away."""
    return {**state.state(HEAD_PARTS), "outputs": list(state.outputs.values())}


def render_state(cs: dict[str, Any]) -> str:
    """The continuation state as the head's system reminder; empty when there is nothing to carry."""
    lines = render_lines(cs)
    if cs.get("outputs"):
        lines.append("Full tool outputs kept outside the context (read one with `catty-ctx blob SESSION HANDLE`):")
        lines.extend(f"- {o['blob']} (result of call {o.get('call_id')}, seq {o.get('seq')}, {o.get('bytes')} bytes)" for o in cs["outputs"])
    return "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>" if lines else ""


# The user-info item: the environment the user works in, as the prompt context recorded it.
_USER_INFO = (("os", "Operating system"), ("shell", "Shell"), ("cwd", "Working directory"), ("git_branch", "Git branch"),
              ("date", "Date"), ("non_interactive", "Non-interactive"))


def user_info(state: HeadState) -> str:
    """The user-info meta item of a rebuilt head (grok-build puts it right after the system
    items): the `prompt_context` facet's environment, the cwd of the session event when it
    has none; empty when nothing is known."""
    snap = state.facets.get("prompt_context")
    env = snap.get("environment") if isinstance(snap, dict) else None
    env = dict(env) if isinstance(env, dict) else {}
    if not env.get("cwd") and state.session is not None and isinstance(state.session.get("cwd"), str):
        env["cwd"] = state.session["cwd"]
    lines = [f"{label}: {env[key]}" for key, label in _USER_INFO if env.get(key) not in (None, "", False)]
    return "<user_info>\n" + "\n".join(lines) + "\n</user_info>" if lines else ""


def mode_hint(comp: Event) -> str:
    mode = comp.get("mode")
    if mode == "transcript":
        from_seq = comp.get("from_seq")
        lo = from_seq if type(from_seq) is int else 0
        earlier = " (the events before it, summarised earlier, are in the same file)" if lo > 1 else ""
        return f"\n\nThe full transcript of the summarised part is in updates.jsonl, seq {lo}..{comp['through_seq']}{earlier}."
    if mode == "segments" and comp.get("segment") is not None:
        return (
            f"\n\nThe summarised part is archived verbatim in segments/ (this one: {comp['segment']}); "
            "segments/INDEX.md lists every segment. Search them before asking the user again."
        )
    return ""


def summary_carrier(comp: Event) -> str:
    summary = comp["summary"]
    if summary.startswith(CARRIED_PREAMBLES):  # an agent's own carrier text (Claude Code's): wrapped once
        return f"{summary}{mode_hint(comp)}"
    return f"{SUMMARY_PREAMBLE}\n\n<summary>\n{summary}\n</summary>{mode_hint(comp)}"


def instructions_item(facet: Any, present: list[str]) -> dict[str, Any] | None:
    """The `instructions` facet as one synthetic item, less the files whose text is already in
    PRESENT (the system items a head keeps, a subagent's own messages): an instruction the
    system prompt carries is not injected a second time. None when nothing is left."""
    files = [i for i in facet if isinstance(i, dict)] if isinstance(facet, list) else []
    parts = [f"# {i.get('path')}\n{i.get('text', '')}" for i in files
             if not (str(i.get("text") or "").strip() and any(str(i.get("text")).strip() in p for p in present))]
    if not parts:
        return None
    return {"role": "user", "text": "<instructions>\n" + "\n\n".join(parts) + "\n</instructions>", "synthetic": "instructions"}


def build_head(comp: Event, state: HeadState) -> list[dict[str, Any]]:
    """The items that stand for everything a compaction folded away, in grok-build's order.

    A compaction whose full head failed validation records `head: "minimal"`: then only the
    system items and the summary carrier stand (grok-build's minimal safe history).
    """
    head: list[dict[str, Any]] = list(state.system_items)
    if comp.get("head") == "minimal":
        head.append({"role": "user", "text": summary_carrier(comp), "synthetic": "compaction_summary"})
        return head
    info = user_info(state)
    if info:
        head.append({"role": "user", "text": info, "synthetic": "user_info"})
    carried = instructions_item(state.facets.get("instructions"), [str(it.get("text") or "") for it in state.system_items])
    if carried is not None:
        head.append(carried)
    if state.last_user is not None:
        head.append(state.last_user)
    head.append({"role": "user", "text": summary_carrier(comp), "synthetic": "compaction_summary"})
    reminder = render_state(continuation_state(state))
    if reminder:
        head.append({"role": "user", "text": reminder, "synthetic": "continuation_state"})
    return head
