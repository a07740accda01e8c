"""The continuation state: what a resumed agent must not forget, tracked event by event, and the
one text that carries it (docs/compact.md#the-compacted-view, docs/agents.md#the-hooks).

One tracker (`Continuation`) and one renderer (`render_lines`) serve both carriers: the head a
catty compaction leaves (`head.HeadState` extends the tracker with what only a head needs) and
the reminder a hook hands an agent after its own compaction (`agents.continuation` extends it
with what only an agent's transcript says: its tool names for background jobs, subagents and
tasks, its own table of file-editing tools). The tracker is fed new events only, so a mirror
saves it between hooks (`as_json` / `from_json`); a head is rebuilt from the whole log.

The renderer has two seams and no other difference between carriers: `limit` bounds each item
(a hook's reminder has a size limit; a head is re-derived byte for byte, its bytes feed prefix
fingerprints, so it is never clipped), and `quote` shows each piece of session text (a path, a
todo, a command, the user's words, an error): `quoted` keeps each on a line of its own, so no
line of it can pass for a line of the reminder. A head keeps session text verbatim, for its
bytes; the hooks still do too, until their reminder also says which parts are quotes.
"""
from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any, ClassVar, TypeVar

from ..session.events import Event

VERSION = 1
ITEM_LIMIT = 300  # characters of one constraint, todo or job line in a bounded rendering
ERROR_LIMIT = 800  # characters of the last error kept
USER_LIMIT = 600
MAX_CONSTRAINTS = 20
MAX_FILES = 200  # files listed by a bounded rendering (then "and N more")
# Argument names that carry the file a tool works on (grok-build's list plus common peers).
PATH_ARGS = ("path", "file_path", "target_file", "filePath", "filename", "file", "notebook_path")
_EDIT_WORDS = ("edit", "write", "create", "replace", "patch", "insert", "delete_file", "str_replace")
_ACTIVE = ("pending", "in_progress")
# Facets the state reads (what a saved tracker keeps; the head's announcer reads the others live).
STATE_FACETS = ("todos", "edited_files", "instructions", "skills", "jobs", "subagents", "mcp", "memory", "plan")
# The parts of the state, in the order `state` lists them; a compaction's head carries HEAD_PARTS
# (its own items carry the user's last message, and its summary what the user asked).
PARTS = ("version", "seq", "compactions", "edited_files", "failed_edits", "instructions", "skills", "jobs", "todos",
         "todos_done", "subagents", "mcp", "memory", "plan", "constraints", "last_user", "last_error")
HEAD_PARTS = ("version", "edited_files", "instructions", "skills", "jobs", "todos", "todos_done", "subagents", "mcp",
              "memory", "plan")
# Words that make a sentence of the user's a standing instruction rather than a request.
_CONSTRAINT = re.compile(
    r"\b(never|always|do not|don['’]t|dont|must|mustn['’]t|must not|avoid|make sure|from now on|forbidden|not allowed|"
    r"no more than|at most|at least|only ever|refrain|under no circumstances|keep using|stop using|prefer)\b",
    re.IGNORECASE,
)
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_Tracker = TypeVar("_Tracker", bound="Continuation")
_NO_PATHS: list[str] = []  # shared, never changed


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


def clip(text: str, limit: int) -> str:
    """TEXT cut to LIMIT characters (short limits: on one line, whitespace collapsed)."""
    text = " ".join(text.split()) if limit <= ITEM_LIMIT else text.strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def constraints_in(text: str) -> list[str]:
    """The sentences of a user's message that read as standing instructions."""
    return [clip(s, ITEM_LIMIT) for s in _SENTENCE.split(text) if s.strip() and _CONSTRAINT.search(s)]


def _dicts(value: Any) -> list[dict[str, Any]]:
    return [v for v in value if isinstance(v, dict)] if isinstance(value, list) else []


class Continuation:
    """What a resumed agent must not forget, fed event by event (the caller picks whose events).

    Subclasses read what their records say beyond catty's events: `edit_paths` (which calls edit
    which files), `note_call` / `note_result` (jobs, subagents and tasks a tool starts or ends)."""

    # A runtime's own `edited_files` facet is taken as it says (a catty runtime writes it);
    # False where the facet is derived from the very calls the tracker sees.
    FACET_FILES: ClassVar[bool] = True

    def __init__(self) -> None:
        self.facets: dict[str, Any] = {}  # every facet's latest value
        self.edits: dict[str, str] = {}  # path -> ok | failed | pending, in first-edit order
        self.calls: dict[str, dict[str, Any]] = {}  # call_id -> what its result decides
        self.open_edits: dict[str, list[str]] = {}  # call_id -> the files it edits, until its result
        self.jobs: dict[str, dict[str, Any]] = {}  # started by calls (a `jobs` facet replaces them)
        self.subagents: dict[str, dict[str, Any]] = {}
        self.tasks: dict[str, dict[str, Any]] = {}  # task tools: id -> {subject, status}
        self.constraints: list[str] = []
        self.user_said: str | None = None  # the last real user message (cut)
        self.last_error: dict[str, Any] | None = None
        self.instruction_files: list[str] = []  # found beside the log (add_instructions)
        self.first_seq: int | None = None  # the span fed (a subclass that reports it keeps it)
        self.last_seq: int | None = None
        self.compactions = 0

    # -- feeding ---------------------------------------------------------------------------
    # What each kind of event feeds, by method name (a subclass adds kinds or overrides
    # methods); resolved once per class, since a fold feeds a head every event it folds.
    FEEDS: ClassVar[dict[str, str]] = {"message": "_message", "tool_call": "_call", "tool_result": "_result",
                                       "state": "_state", "compaction": "_compaction"}
    # Each open call's name and notes, and the last error: a head carries what failed in its
    # summary, so its tracker skips them.
    KEEPS_CALLS: ClassVar[bool] = True
    _feeds: ClassVar[dict[str, Callable[[Any, Event], None]]]

    def __init_subclass__(cls, **kw: Any) -> None:
        super().__init_subclass__(**kw)
        cls._feeds = {kind: getattr(cls, name) for kind, name in cls.FEEDS.items()}

    def track(self, ev: Event) -> None:
        feed = self._feeds.get(ev.get("kind"))  # type: ignore[arg-type]  # a kind-less event feeds nothing
        if feed is not None:
            feed(self, ev)

    def _message(self, ev: Event) -> None:
        text = ev["text"] if isinstance(ev.get("text"), str) else ""
        if ev.get("role") != "user" or ev.get("synthetic") or not text.strip():
            return
        self.user_said = text[: USER_LIMIT * 2]
        for sentence in constraints_in(text):
            if sentence in self.constraints:
                self.constraints.remove(sentence)  # said again: it moves to the end (the newest kept)
            self.constraints.append(sentence)
        del self.constraints[:-MAX_CONSTRAINTS]

    def edit_paths(self, name: str, args: Any) -> list[str]:
        """The files a call edits: a tool whose name says it edits, on the path its arguments name."""
        if not is_edit_tool(name):
            return _NO_PATHS
        path = call_path(args)
        return [path] if path is not None else _NO_PATHS

    def note_call(self, call: dict[str, Any], args: dict[str, Any]) -> None:
        """What CALL (its `name` set) starts, noted in it for its result; catty's events say it in facets."""

    def note_result(self, call: dict[str, Any], output: str) -> None:
        """What the successful result of CALL ends or starts."""

    def _call(self, ev: Event) -> None:
        name = ev.get("name")
        name = name if type(name) is str else str(name or "")
        paths = self.edit_paths(name, ev.get("args"))
        if paths:
            self.open_edits[str(ev.get("call_id"))] = paths
            for path in paths:
                self.edits.setdefault(path, "pending")
        if self.KEEPS_CALLS:
            call: dict[str, Any] = {"name": name}
            self.note_call(call, ev["args"] if isinstance(ev.get("args"), dict) else {})
            self.calls[str(ev.get("call_id"))] = call

    def _result(self, ev: Event) -> None:
        if not self.open_edits and not self.KEEPS_CALLS:
            return  # nothing this result could decide (a head between edits)
        call_id = str(ev.get("call_id"))
        failed = bool(ev.get("is_error"))
        paths = self.open_edits.pop(call_id, None)
        if paths is not None:
            for path in paths:
                if self.edits.get(path) != "ok":
                    self.edits[path] = "failed" if failed else "ok"
        if not self.KEEPS_CALLS:
            return
        call = self.calls.pop(call_id, None) or {"name": "?"}
        output = ev["output"] if isinstance(ev.get("output"), str) else ""
        if failed:
            self.last_error = {"seq": ev.get("seq"), "tool": call["name"], "text": clip(output, ERROR_LIMIT)}
        else:
            self.note_result(call, output)

    def _compaction(self, ev: Event) -> None:
        self.compactions += 1

    def _state(self, ev: Event) -> None:
        facet = ev.get("facet")
        if isinstance(facet, str):
            self.facets[facet] = ev.get("value")
            if facet == "jobs":  # a runtime that records its jobs itself: its list replaces what calls said
                self.jobs.clear()
            elif facet == "subagents":
                self.subagents.clear()

    def add_instructions(self, paths: Iterable[str]) -> None:
        """Instruction files in effect that the log does not name (found where the agent runs)."""
        for path in paths:
            if path not in self.instruction_files:
                self.instruction_files.append(path)

    # -- the state -------------------------------------------------------------------------
    def state(self, parts: tuple[str, ...] = PARTS) -> dict[str, Any]:
        """The versioned continuation state as it stands (JSON), its PARTS in that order."""
        f = self.facets
        open_paths = {p for paths in self.open_edits.values() for p in paths}
        files: dict[str, None] = {}
        facet_files = f.get("edited_files") if self.FACET_FILES else None
        for path in facet_files if isinstance(facet_files, list) else ():
            if isinstance(path, str):
                files.setdefault(path)
        for path, status in self.edits.items():
            if status == "ok" or path in open_paths:
                files.setdefault(path)
        todos = _dicts(f.get("todos"))
        tasks = self.tasks.items()
        instructions = [str(i.get("path")) for i in _dicts(f.get("instructions"))]
        memory, plan = f.get("memory"), f.get("plan")
        running = [{"id": cid, **c["agent"], "status": "running"} for cid, c in self.calls.items() if "agent" in c]
        full: dict[str, Any] = {
            "version": VERSION,
            "seq": [self.first_seq, self.last_seq],
            "compactions": self.compactions,
            "edited_files": list(files),
            "failed_edits": [p for p, status in self.edits.items() if status == "failed" and p not in open_paths],
            "instructions": instructions + [p for p in self.instruction_files if p not in instructions],
            "skills": [{"name": s.get("name"), "description": s.get("description")} for s in _dicts(f.get("skills"))],
            "jobs": [j for j in [*_dicts(f.get("jobs")), *self.jobs.values()] if j.get("status") == "running"],
            "todos": [t for t in todos if t.get("status") in _ACTIVE]
            + [{"text": t["subject"], "status": t["status"], "id": i} for i, t in tasks if t["status"] in _ACTIVE],
            "todos_done": sum(1 for t in todos if t.get("status") == "completed") + sum(1 for _, t in tasks if t["status"] == "completed"),
            "subagents": [a for a in [*_dicts(f.get("subagents")), *self.subagents.values()] if a.get("status") == "running"] + running,
            "mcp": [{"name": m.get("name"), "tools": m.get("tools")} for m in _dicts(f.get("mcp"))],
            "memory": [str(m) for m in memory] if isinstance(memory, list) else [],
            "plan": plan if isinstance(plan, str) and plan else None,
            "constraints": list(self.constraints),
            "last_user": clip(self.user_said, USER_LIMIT) if self.user_said else None,
            "last_error": self.last_error,
        }
        return {part: full[part] for part in parts}

    def as_json(self) -> dict[str, Any]:
        """The tracker as a JSON document (the facets the state reads, not the others)."""
        doc = {"version": VERSION, **self.__dict__}
        doc["facets"] = {k: v for k, v in self.facets.items() if k in STATE_FACETS}
        return doc

    @classmethod
    def from_json(cls: type[_Tracker], doc: Any) -> _Tracker:
        """A tracker from `as_json`'s document (a fresh one when it is not one of ours)."""
        out = cls()
        if not isinstance(doc, dict) or doc.get("version") != VERSION:
            return out
        doc = _upgraded(doc)
        for key, default in list(out.__dict__.items()):
            value = doc.get(key, default)
            if value is None or type(value) is type(default) or default is None:
                setattr(out, key, value)
        return out


Continuation._feeds = {kind: getattr(Continuation, name) for kind, name in Continuation.FEEDS.items()}


def _upgraded(doc: dict[str, Any]) -> dict[str, Any]:
    """A document of the hooks' earlier tracker (todos and instruction paths of its own) in today's terms."""
    if "instruction_files" in doc:
        return doc
    facets = dict(doc["facets"]) if isinstance(doc.get("facets"), dict) else {}
    if isinstance(doc.get("todos"), list):
        facets["todos"] = doc["todos"]
    calls = doc["calls"] if isinstance(doc.get("calls"), dict) else {}
    open_edits = {cid: c["paths"] for cid, c in calls.items() if isinstance(c, dict) and isinstance(c.get("paths"), list)}
    return {**doc, "facets": facets, "instruction_files": doc.get("instructions") or [], "open_edits": open_edits,
            "user_said": doc.get("last_user")}


def verbatim(text: str) -> str:
    """Session text as it is: a head's reminder (its bytes feed the prefix fingerprints)."""
    return text


# What ends a line for a reader besides the newlines JSON escapes (str.splitlines' list).
_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


def quoted(text: str) -> str:
    """Session text as a quote on one line: a JSON string (its newlines shown as \\n, every other
    line break escaped too), so no line of it can pass for a line of the reminder (docs/agents.md#the-hooks)."""
    return json.dumps(text, ensure_ascii=False).translate(_BREAKS)


def render_lines(cs: dict[str, Any], *, limit: int | None = None, quote: Callable[[str], str] = verbatim) -> list[str]:
    """The continuation state CS as lines, empty when there is nothing to carry: the one text of
    a head's reminder and a hook's. LIMIT clips each item (and the list of files); QUOTE shows
    each piece of session text. Skills and MCP servers stay in the state but are not repeated
    here: the view's announcer lists them right after a head."""

    def item(value: Any) -> str:  # a free text
        return quote(f"{value}" if limit is None else clip(str(value or ""), limit))

    def q(value: Any) -> str:  # a name, an id, a status (a number is no session text)
        return quote(value) if isinstance(value, str) else f"{value}"

    lines: list[str] = []
    if cs.get("constraints"):
        lines.append("The user's standing instructions (their own words; they still hold):")
        lines.extend(f"- {item(c)}" for c in cs["constraints"])
    files = cs.get("edited_files") or []
    if files:
        shown = files[:MAX_FILES] if limit is not None else files
        more = f" (and {len(files) - len(shown)} more)" if len(shown) < len(files) else ""
        lines.append("Files edited in this session: " + ", ".join(quote(p) for p in shown) + more)
    if cs.get("instructions"):
        lines.append("Instruction files in effect: " + ", ".join(quote(p) for p in cs["instructions"]))
    for j in cs.get("jobs") or ():
        lines.append(f"Background job {q(j.get('id'))} running: {item(j.get('command'))}")
    if cs.get("todos") or cs.get("todos_done"):
        lines.append("Todos:")
        lines.extend(f"- [{q(t.get('status'))}] {item(t.get('text', ''))}" for t in cs.get("todos") or ())
        if cs.get("todos_done"):
            lines.append(f"({cs['todos_done']} todo(s) already completed)")
    for a in cs.get("subagents") or ():
        lines.append(f"Subagent {q(a.get('id'))} ({q(a.get('type'))}) running: {item(a.get('description'))}")
    error = cs.get("last_error")
    if error:
        lines.append(f"The last tool error (seq {q(error.get('seq'))}, {q(error.get('tool'))}):")
        lines.append(quote(str(error.get("text") or "")))
    if cs.get("last_user"):
        lines.append(f"The user's last message: {quote(cs['last_user'])}")
    if cs.get("memory"):
        lines.append("Memory:")
        lines.extend(f"- {item(m)}" for m in cs["memory"])
    if cs.get("plan"):
        lines.append(f"Plan: {quote(cs['plan'])}")
    return lines
