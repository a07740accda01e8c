"""The rebuilt head after a compaction and the continuation state it re-injects (docs/design.md#m8).

The view calls `build_head` for the latest compaction: the original system items, the
user-info item (the environment the user works in), the instructions, the last real user query, the summary carrier with its mode hint, and a
system reminder carrying the continuation state, so an agent resumes knowing what it was
doing. The continuation state is a versioned structure built from `state` events and from
the log itself (files touched by edit/write calls), so it survives any number of rounds:
every head is rebuilt from the whole log up to its `through_seq`, never from the previous
head.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

from ..session.events import Event

CONTINUATION_VERSION = 1
SUMMARY_PREAMBLE = (
    "This session is being continued from an earlier conversation that ran out of context. "
    "The summary below covers the earlier part of the conversation."
)
# Summaries that already open with a continuation preamble (Claude Code writes its compaction
# summary as the whole message it sends) are carried as they are.
CARRIED_PREAMBLES = ("This session is being continued from a previous conversation", SUMMARY_PREAMBLE[:60])
# Argument names that carry the file a tool works on (grok-build's list plus common peers).
PATH_ARGS = ("path", "file_path", "target_file", "filePath", "filename", "file", "notebook_path")
_EDIT_WORDS = ("edit", "write", "create", "replace", "patch", "insert", "delete_file", "str_replace")
_ACTIONABLE = ("pending", "in_progress")


def call_path(args: Any) -> str | None:
    """The file a tool call targets, if its arguments name one."""
    if isinstance(args, dict):
        for key in PATH_ARGS:
            value = args.get(key)
            if isinstance(value, str) and value:
                return value
    return None


@lru_cache(maxsize=1024)  # a session uses few tool names, each many times
def is_edit_tool(name: str) -> bool:
    low = name.lower()
    return any(word in low for word in _EDIT_WORDS)


class HeadState:
    """What the head needs from the events a compaction folded away (small, streamed)."""

    __slots__ = ("_pending_edits", "edits", "facets", "last_user", "previous", "seen_user", "session", "system_items")

    def __init__(self) -> None:
        self.system_items: list[dict[str, Any]] = []
        self.seen_user = False
        self.last_user: dict[str, Any] | None = None
        self.facets: dict[str, Any] = {}
        # path -> still possible (a call without a result, or one that succeeded)
        self.edits: dict[str, bool] = {}
        self._pending_edits: dict[str, str] = {}  # call_id -> path
        self.previous: Event | None = None  # the latest earlier compaction
        self.session: Event | None = None  # the session event (its cwd and model)

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
        elif kind == "tool_call":
            path = call_path(ev.get("args"))
            if path is not None and is_edit_tool(str(ev.get("name", ""))):
                self._pending_edits[ev["call_id"]] = path
                self.edits.setdefault(path, False)
        elif kind == "tool_result":
            path = self._pending_edits.pop(ev.get("call_id"), None)  # type: ignore[arg-type]  # no call_id: nothing found
            if path is not None and not ev.get("is_error"):
                self.edits[path] = True
        elif kind == "state" and isinstance(ev.get("facet"), str):
            self.facets[ev["facet"]] = ev.get("value")
        elif kind == "compaction":
            self.previous = ev
        elif kind == "session" and self.session is None:
            self.session = ev

    def edited_files(self) -> list[str]:
        """The `edited_files` facet, then files edited by calls (failed-only edits left out)."""
        out: list[str] = []
        seen: set[str] = set()
        facet = self.facets.get("edited_files")
        for path in facet if isinstance(facet, list) else ():
            if isinstance(path, str) and path not in seen:
                seen.add(path)
                out.append(path)
        pending = set(self._pending_edits.values())
        for path, ok in self.edits.items():
            if (ok or path in pending) and path not in seen:
                seen.add(path)
                out.append(path)
        return out


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


def continuation_state(state: HeadState) -> dict[str, Any]:
    """The versioned continuation state: what a resumed agent must not forget."""
    f = state.facets
    todos = _dicts(f.get("todos"))
    plan = f.get("plan")
    memory = f.get("memory")
    return {
        "version": CONTINUATION_VERSION,
        "edited_files": state.edited_files(),
        "instructions": [str(i.get("path")) for i in _dicts(f.get("instructions"))],
        "skills": [{"name": s.get("name"), "description": s.get("description")} for s in _dicts(f.get("skills"))],
        "jobs": [j for j in _dicts(f.get("jobs")) if j.get("status") == "running"],
        "todos": [t for t in todos if t.get("status") in _ACTIONABLE],
        "todos_done": sum(1 for t in todos if t.get("status") == "completed"),
        "subagents": [a for a in _dicts(f.get("subagents")) if a.get("status") == "running"],
        "mcp": [{"name": m.get("name"), "tools": m.get("tools")} for m in _dicts(f.get("mcp"))],
        "memory": [str(m) for m in memory] if isinstance(memory, list) else [],
        "plan": plan if isinstance(plan, str) and plan else None,
    }


def render_state(cs: dict[str, Any]) -> str:
    """The continuation state as a system reminder; empty when there is nothing to carry.

    Skills and MCP servers stay in the structure but are not repeated here: the view's
    announcer lists them right after the head (see context.Announcer)."""
    lines: list[str] = []
    if cs["edited_files"]:
        lines.append("Files edited in this session: " + ", ".join(cs["edited_files"]))
    if cs["instructions"]:
        lines.append("Instruction files in effect: " + ", ".join(cs["instructions"]))
    for j in cs["jobs"]:
        lines.append(f"Background job {j.get('id')} running: {j.get('command')}")
    if cs["todos"] or cs["todos_done"]:
        lines.append("Todos:")
        lines.extend(f"- [{t.get('status')}] {t.get('text', '')}" for t in cs["todos"])
        if cs["todos_done"]:
            lines.append(f"({cs['todos_done']} todo(s) already completed)")
    for a in cs["subagents"]:
        lines.append(f"Subagent {a.get('id')} ({a.get('type')}) running: {a.get('description')}")
    if cs["memory"]:
        lines.append("Memory:")
        lines.extend(f"- {m}" for m in cs["memory"])
    if cs["plan"]:
        lines.append(f"Plan: {cs['plan']}")
    if not lines:
        return ""
    return "<system-reminder>\n" + "\n".join(lines) + "\n</system-reminder>"


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
    instructions = state.facets.get("instructions")
    if isinstance(instructions, list) and instructions:
        parts = [f"# {i.get('path')}\n{i.get('text', '')}" for i in instructions if isinstance(i, dict)]
        head.append({"role": "user", "text": "<instructions>\n" + "\n\n".join(parts) + "\n</instructions>", "synthetic": "instructions"})
    if state.last_user is not None:
        head.append(state.last_user)
    head.append({"role": "user", "text": summary_carrier(comp), "synthetic": "compaction_summary"})
    reminder = render_state(continuation_state(state))
    if reminder:
        head.append({"role": "user", "text": reminder, "synthetic": "continuation_state"})
    return head
