"""The continuation tracker of a mirrored Claude Code or Codex session, and the reminder a hook
hands back after the agent's own compaction (docs/agents.md).

The tracker and the renderer are the view's (`view.continuation`, the ones a catty compaction's
head uses); what stays here is what only an agent's transcript says: the main agent's events
among its subagents', its own table of file-editing tools, and Claude Code's tools and notices
for background jobs, subagents and tasks. A mirror grows by the bytes the agent appended since
the last hook, so the tracker is fed only the new events and saved beside the mirror.
"""
from __future__ import annotations

import re
from typing import Any, ClassVar

from ..importers.common import edited_paths
from ..session.events import Event
from ..view.continuation import ITEM_LIMIT, VERSION, Continuation, render_lines

__all__ = ["VERSION", "AgentContinuation", "render"]

_JOB_ID = re.compile(r"running in background with ID:\s*([A-Za-z0-9_-]+)", re.IGNORECASE)
_AGENT_ID = re.compile(r"agentId:\s*([A-Za-z0-9_-]+)")
_TASK_CREATED = re.compile(r"Task #?([A-Za-z0-9_-]+) created")
_NOTICE_ID = re.compile(r"<task-id>\s*([^<\s]+)\s*</task-id>")
_NOTICE_STATUS = re.compile(r"<status>\s*(\w+)\s*</status>")
_DONE = ("completed", "failed", "killed", "stopped", "cancelled", "deleted")
BACKGROUND_TOOLS = ("Bash",)
AGENT_TOOLS = ("Agent", "Task")
STOP_TOOLS = ("TaskStop", "KillShell", "KillBash")
OUTPUT_TOOLS = ("TaskOutput", "BashOutput", "AgentOutputTool")
_ID_ARGS = ("task_id", "shell_id", "bash_id", "agentId", "agent_id")


class AgentContinuation(Continuation):
    """The continuation tracker fed a mirror's events (the main agent's only)."""

    # The importers derive the `edited_files` facet from the calls this tracker sees, naming a
    # file at the call, before its result says it failed: the calls decide here.
    FACET_FILES: ClassVar[bool] = False

    def track(self, ev: Event) -> None:
        if ev.get("agent"):
            return  # a subagent's own todos and edits are not the session's
        seq = ev.get("seq")
        if type(seq) is int:  # the span of the mirror the reminder speaks of
            if self.first_seq is None:
                self.first_seq = seq
            self.last_seq = seq
        super().track(ev)

    def edit_paths(self, name: str, args: Any) -> list[str]:
        return edited_paths(name, args)

    def _message(self, ev: Event) -> None:
        if isinstance(ev.get("text"), str):
            self._notices(ev["text"])
        super()._message(ev)

    def note_call(self, call: dict[str, Any], args: dict[str, Any]) -> None:
        name = call["name"]
        if name in BACKGROUND_TOOLS and args.get("run_in_background") is True:
            call["job"] = str(args.get("command") or "")
        if name in AGENT_TOOLS:
            call["agent"] = {"type": args.get("subagent_type") or "general-purpose", "description": str(args.get("description") or "")}
        if name == "TaskCreate":
            call["task"] = str(args.get("subject") or args.get("description") or "")
        if name == "TaskUpdate" and isinstance(args.get("taskId"), str):
            task = self.tasks.setdefault(args["taskId"], {"subject": "", "status": "pending"})
            if isinstance(args.get("subject"), str):
                task["subject"] = args["subject"]
            if isinstance(args.get("status"), str):
                task["status"] = args["status"]
        target = next((args[k] for k in _ID_ARGS if isinstance(args.get(k), str)), None)
        if target is not None and name in STOP_TOOLS + OUTPUT_TOOLS:
            call["target"] = target

    def note_result(self, call: dict[str, Any], output: str) -> None:
        if "job" in call and (m := _JOB_ID.search(output)):
            self.jobs[m.group(1)] = {"id": m.group(1), "command": call["job"], "status": "running"}
        if "agent" in call and (m := _AGENT_ID.search(output)) and "launched" in output.lower():
            self.subagents[m.group(1)] = {"id": m.group(1), **call["agent"], "status": "running"}
        if "task" in call:
            m = _TASK_CREATED.search(output)
            self.tasks[m.group(1) if m else f"#{len(self.tasks) + 1}"] = {"subject": call["task"], "status": "pending"}
        target = call.get("target")
        if target is not None:
            status = _NOTICE_STATUS.search(output)
            if call["name"] in STOP_TOOLS:
                self._finish(target, "stopped")
            elif status is not None:
                self._finish(target, status.group(1))
        self._notices(output)

    def _notices(self, text: str) -> None:
        """A background task's completion notice (`<task-id>…</task-id>` with its `<status>`)."""
        if "<task-id>" not in text:
            return
        found, status = _NOTICE_ID.search(text), _NOTICE_STATUS.search(text)
        if found is not None and status is not None:
            self._finish(found.group(1), status.group(1))

    def _finish(self, target: str, status: str) -> None:
        for table in (self.jobs, self.subagents):
            if target in table and status.lower() in _DONE:
                table[target]["status"] = status.lower()


def render(state: dict[str, Any]) -> str:
    """The hook's reminder: a line saying what it is, then the one rendering of the state
    (`view.continuation.render_lines`, items bounded), most needed first (a cut keeps the top).
    No markup of its own: the agent wraps a hook's context itself (Claude Code as a system
    reminder, escaping `<`)."""
    lo, hi = state.get("seq") or (None, None)
    span = f" (events {lo}..{hi} of its mirror)" if lo is not None else ""
    intro = f"catty-ctx kept the continuation state of this session as it stood before the compaction{span}."
    return "\n".join([intro, *render_lines(state, limit=ITEM_LIMIT)]) + "\n"
