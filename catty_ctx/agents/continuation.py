"""The continuation state of a live agent session, kept up to date event by event, and the
reminder a hook hands back after a compaction (docs/agents.md).

`head` derives the state a catty compaction re-injects from the whole log at once; a mirror
grows by the bytes the agent appended since the last hook, so this tracker is fed only the new
events and saved beside the mirror (`Continuation.as_json` / `from_json`). It keeps what an
agent forgets at an automatic compaction: the pending todos (a todo list tool's latest list, or
Claude Code's task tools), the files edited and not failed, background jobs and subagents still
running, the user's standing instructions in their own words, the last tool error, the
instruction files in effect, and the facets `head` carries (memory, plan).
"""
from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from ..importers.common import edited_paths
from ..session.events import Event

VERSION = 1
ITEM_LIMIT = 300  # characters of one constraint, todo or job line in the reminder
ERROR_LIMIT = 800  # characters of the last error kept
USER_LIMIT = 600
MAX_CONSTRAINTS = 20
MAX_FILES = 200
_ACTIVE = ("pending", "in_progress")
_DONE = ("completed", "failed", "killed", "stopped", "cancelled", "deleted")
# Words that make a sentence of the user's a standing instruction rather than a request.
_CONSTRAINT = re.compile(
    r"\b(never|always|do not|don['’]t|dont|must|mustn['’]t|must not|avoid|make sure|from now on|forbidden|not allowed|"
    r"no more than|at most|at least|only ever|refrain|under no circumstances|keep using|stop using|prefer)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_JOB_ID = re.compile(r"running in background with ID:\s*([A-Za-z0-9_-]+)", re.IGNORECASE)
_AGENT_ID = re.compile(r"agentId:\s*([A-Za-z0-9_-]+)")
_TASK_CREATED = re.compile(r"Task #?([A-Za-z0-9_-]+) created")
_NOTICE_ID = re.compile(r"<task-id>\s*([^<\s]+)\s*</task-id>")
_NOTICE_STATUS = re.compile(r"<status>\s*(\w+)\s*</status>")
BACKGROUND_TOOLS = ("Bash",)
AGENT_TOOLS = ("Agent", "Task")
STOP_TOOLS = ("TaskStop", "KillShell", "KillBash")
OUTPUT_TOOLS = ("TaskOutput", "BashOutput", "AgentOutputTool")
_ID_ARGS = ("task_id", "shell_id", "bash_id", "agentId", "agent_id")


def _clip(text: str, limit: int) -> str:
    text = " ".join(text.split()) if limit <= ITEM_LIMIT else text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def constraints_in(text: str) -> list[str]:
    """The sentences of a user's message that read as standing instructions."""
    return [_clip(s, ITEM_LIMIT) for s in _SENTENCE.split(text) if s.strip() and _CONSTRAINT.search(s)]


class Continuation:
    """What a resumed agent must not forget, fed event by event (the main agent's events)."""

    def __init__(self) -> None:
        self.todos: list[dict[str, Any]] | None = None  # a todo tool's latest list
        self.tasks: dict[str, dict[str, Any]] = {}  # task tools: id -> {subject, status}
        self.edits: dict[str, str] = {}  # path -> ok | failed | pending, in first-edit order
        self.calls: dict[str, dict[str, Any]] = {}  # call_id -> what its result decides
        self.jobs: dict[str, dict[str, Any]] = {}
        self.subagents: dict[str, dict[str, Any]] = {}
        self.constraints: list[str] = []
        self.last_user: str | None = None
        self.last_error: dict[str, Any] | None = None
        self.instructions: list[str] = []
        self.facets: dict[str, Any] = {}  # memory, plan
        self.first_seq: int | None = None
        self.last_seq: int | None = None
        self.compactions = 0

    # -- feeding ---------------------------------------------------------------------------
    def track(self, ev: Event) -> None:
        if ev.get("agent"):
            return  # a subagent's own todos and edits are not the session's
        seq = ev.get("seq")
        if isinstance(seq, int):
            self.first_seq = seq if self.first_seq is None else self.first_seq
            self.last_seq = seq
        kind = ev.get("kind")
        feed = self._FEEDS.get(kind) if isinstance(kind, str) else None
        if feed is not None:
            feed(self, ev)

    def _message(self, ev: Event) -> None:
        text = ev["text"] if isinstance(ev.get("text"), str) else ""
        self._notices(text)
        if ev.get("role") != "user" or ev.get("synthetic") or not text.strip():
            return
        self.last_user = text[: USER_LIMIT * 2]
        for sentence in constraints_in(text):
            if sentence in self.constraints:
                self.constraints.remove(sentence)  # said again: it moves to the end (the newest kept)
            self.constraints.append(sentence)
        del self.constraints[:-MAX_CONSTRAINTS]

    def _call(self, ev: Event) -> None:
        name = str(ev.get("name") or "")
        args: dict[str, Any] = ev["args"] if isinstance(ev.get("args"), dict) else {}
        call: dict[str, Any] = {"name": name}
        paths = edited_paths(name, ev.get("args"))
        if paths:
            call["paths"] = paths
            for path in paths:
                self.edits.setdefault(path, "pending")
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
        self.calls[str(ev.get("call_id"))] = call

    def _result(self, ev: Event) -> None:
        call = self.calls.pop(str(ev.get("call_id")), None) or {"name": "?"}
        output = ev["output"] if isinstance(ev.get("output"), str) else ""
        failed = ev.get("is_error") is True
        for path in call.get("paths", ()):
            if self.edits.get(path) != "ok":
                self.edits[path] = "failed" if failed else "ok"
        if failed:
            self.last_error = {"seq": ev.get("seq"), "tool": call["name"], "text": _clip(output, ERROR_LIMIT)}
            return
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

    def _state(self, ev: Event) -> None:
        facet, value = ev.get("facet"), ev.get("value")
        if facet == "todos" and isinstance(value, list):
            self.todos = [t for t in value if isinstance(t, dict)]
        elif facet == "instructions" and isinstance(value, list):
            self.add_instructions(str(i.get("path")) for i in value if isinstance(i, dict) and i.get("path"))
        elif facet in ("memory", "plan"):
            self.facets[facet] = value
        elif facet in ("jobs", "subagents") and isinstance(value, list):  # a runtime that records them itself
            table = self.jobs if facet == "jobs" else self.subagents
            table.clear()
            for item in value:
                if isinstance(item, dict) and item.get("id") is not None:
                    table[str(item["id"])] = dict(item)

    def _compaction(self, ev: Event) -> None:
        self.compactions += 1

    # what each kind of event feeds (the other kinds change nothing here)
    _FEEDS: ClassVar[dict[str, Callable[[Continuation, Event], None]]] = {
        "message": _message, "tool_call": _call, "tool_result": _result, "state": _state, "compaction": _compaction,
    }

    def add_instructions(self, paths: Any) -> None:
        for path in paths:
            if path not in self.instructions:
                self.instructions.append(path)

    # -- the state -------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        """The continuation state as it stands (JSON), what `continuation.json` records."""
        todos = [t for t in self.todos or () if t.get("status") in _ACTIVE]
        todos += [{"text": t["subject"], "status": t["status"], "id": i} for i, t in self.tasks.items() if t["status"] in _ACTIVE]
        done = sum(1 for t in self.todos or () if t.get("status") == "completed")
        done += sum(1 for t in self.tasks.values() if t["status"] == "completed")
        running_agents = [a for a in self.subagents.values() if a.get("status") == "running"]
        running_agents += [{"id": cid, **c["agent"], "status": "running"} for cid, c in self.calls.items() if "agent" in c]
        memory = self.facets.get("memory")
        plan = self.facets.get("plan")
        return {
            "version": VERSION,
            "seq": [self.first_seq, self.last_seq],
            "compactions": self.compactions,
            "todos": todos,
            "todos_done": done,
            "edited_files": [p for p, status in self.edits.items() if status != "failed"],
            "failed_edits": [p for p, status in self.edits.items() if status == "failed"],
            "jobs": [j for j in self.jobs.values() if j.get("status") == "running"],
            "subagents": running_agents,
            "constraints": list(self.constraints),
            "last_user": _clip(self.last_user, USER_LIMIT) if self.last_user else None,
            "last_error": self.last_error,
            "instructions": list(self.instructions),
            "memory": [str(m) for m in memory] if isinstance(memory, list) else [],
            "plan": plan if isinstance(plan, str) and plan else None,
        }

    def as_json(self) -> dict[str, Any]:
        return {"version": VERSION, **self.__dict__}

    @classmethod
    def from_json(cls, doc: Any) -> Continuation:
        """A tracker from `as_json`'s document (a fresh one when it is not one of ours)."""
        out = cls()
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            return out
        for key, default in list(out.__dict__.items()):
            value = doc.get(key, default)
            if value is None or type(value) is type(default) or default is None:
                setattr(out, key, value)
        return out


def render(state: dict[str, Any]) -> str:
    """The continuation state as plain lines, most needed first (a cut keeps the top). No
    markup of its own: the agent wraps a hook's context itself (Claude Code as a system
    reminder, escaping `<`)."""
    lines: list[str] = []
    lo, hi = state.get("seq") or (None, None)
    span = f" (events {lo}..{hi} of its mirror)" if lo is not None else ""
    lines.append(f"catty-ctx kept the continuation state of this session as it stood before the compaction{span}.")
    if state["constraints"]:
        lines.append("The user's standing instructions (their own words; they still hold):")
        lines.extend(f"- {c}" for c in state["constraints"])
    if state["todos"] or state["todos_done"]:
        lines.append("Pending todos:")
        lines.extend(f"- [{t.get('status')}] {_clip(str(t.get('text') or t.get('content') or ''), ITEM_LIMIT)}" for t in state["todos"])
        if state["todos_done"]:
            lines.append(f"({state['todos_done']} todo(s) already completed)")
    files = state["edited_files"]
    if files:
        more = f" (and {len(files) - MAX_FILES} more)" if len(files) > MAX_FILES else ""
        lines.append("Files edited in this session: " + ", ".join(files[:MAX_FILES]) + more)
    for j in state["jobs"]:
        lines.append(f"Background job {j.get('id')} still running: {_clip(str(j.get('command') or ''), ITEM_LIMIT)}")
    for a in state["subagents"]:
        lines.append(f"Subagent {a.get('id')} ({a.get('type')}) still running: {_clip(str(a.get('description') or ''), ITEM_LIMIT)}")
    error = state["last_error"]
    if error:
        lines.append(f"The last tool error (seq {error.get('seq')}, {error.get('tool')}):")
        lines.append(str(error.get("text") or ""))
    if state["last_user"]:
        lines.append(f"The user's last message: {state['last_user']}")
    if state["instructions"]:
        lines.append("Instruction files in effect: " + ", ".join(state["instructions"]))
    if state["memory"]:
        lines.append("Memory:")
        lines.extend(f"- {_clip(m, ITEM_LIMIT)}" for m in state["memory"])
    if state["plan"]:
        lines.append(f"Plan: {state['plan']}")
    return "\n".join(lines) + "\n"
