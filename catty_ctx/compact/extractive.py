"""The extractive summariser: grok-build's nine summary sections built from the log, no model.

Offline and deterministic (same items, same summary). Successive compactions lose nothing:
an earlier summary found among the input items (the `compaction_summary` carrier) is parsed
back into its sections and merged, so every user message, file, error and concept it kept
is kept again, however many rounds run.
"""
from __future__ import annotations

import re
import time
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

import orjson

from ..view.continuation import call_path, is_edit_tool
from .ladder import Summarizer, SummaryRequest, SummaryResult

Item = dict[str, Any]

SECTIONS = (
    "Primary Request and Intent",
    "Key Technical Concepts",
    "Files and Code Sections",
    "Errors and Fixes",
    "Problem Solving",
    "All User Messages",
    "Pending Tasks",
    "Current Work",
    "Optional Next Step",
)
USER_TRIM = 2_000  # longer user messages keep head and tail around a marker
TEXT_TRIM = 2_000
CONCEPTS = 24
KEEP_ERRORS = 40
KEEP_STEPS = 40
USER_SHARE = 0.10  # of the window (in characters, 4 a token) for the user messages section
SHORT_USER = 300
_READ_WORDS = ("read", "view", "open", "cat", "grep", "search", "glob", "list", "ls")
_WORD = re.compile(r"`([^`\n]{2,60})`|\b([A-Za-z_][A-Za-z0-9_]*(?:[._/][A-Za-z0-9_]+)+|[a-z]+[A-Z][A-Za-z0-9]+|[A-Za-z]+_[A-Za-z0-9_]+)\b")
_HEADER = re.compile(r"^## (\d)\. (.+)$", re.M)
_SEQ_TAG = re.compile(r"^- \[seq (\d+)\]")
_FILE_LINE = re.compile(r"^- `(.+)`: (.+)$")


def trim(text: str, limit: int) -> str:
    """Head and tail of a long text around a marker that says how much was cut."""
    if len(text) <= limit:
        return text
    head, tail = limit * 2 // 3, limit // 3
    return f"{text[:head]} […{len(text) - head - tail} characters trimmed…] {text[-tail:]}"


def fit_user_messages(bullets: list[str], budget: int) -> list[str]:
    """Every user message while they fit; past the budget each is cut shorter, and only then
    do the middle ones give way to a pointer (the first and the latest always stay)."""
    if sum(len(b) for b in bullets) <= budget:
        return bullets
    short = [b if len(b) <= SHORT_USER else trim(b, SHORT_USER) for b in bullets]
    if sum(len(b) for b in short) <= budget:
        return short
    head = short[:1]
    used = len(head[0]) if head else 0
    tail: list[str] = []
    for b in reversed(short[1:]):
        if used + len(b) > budget:
            break
        used += len(b)
        tail.append(b)
    tail.reverse()
    omitted = len(short) - len(head) - len(tail)
    return [*head, f"- ({omitted} earlier user messages omitted for length; they are in updates.jsonl)", *tail]


@lru_cache(maxsize=1024)
def _verb(tool: str) -> str:
    """What a tool did to the file it names: edited, read, or used by it."""
    if is_edit_tool(tool):
        return "edited"
    low = tool.lower()
    return "read" if any(w in low for w in _READ_WORDS) else f"used by {tool}"


def _bullet(prefix: str, text: str) -> str:
    """A bullet whose continuation lines are indented, so sections parse back unambiguously."""
    return prefix + text.replace("\n", "\n  ")


def _first_line(text: str, limit: int = 200) -> str:
    line = text.strip().split("\n", 1)[0]
    return line[:limit] + ("…" if len(line) > limit else "")


_ERRORISH = re.compile(r"error|exception|fail|traceback|fatal|denied|not found", re.I)


def _error_line(output: str) -> str:
    """The line of an error output that says what went wrong (else its first line)."""
    lines = [ln.strip() for ln in output.splitlines() if ln.strip()]
    for ln in lines:
        if _ERRORISH.search(ln):
            return ln[:200]
    return lines[0][:200] if lines else "(no output)"


def _args_brief(args: Any) -> str:
    if isinstance(args, dict):
        for key in ("command", "cmd", "path", "file_path", "target_file", "pattern", "query", "url"):
            if isinstance(args.get(key), str):
                return f'{key}="{_first_line(args[key], 120)}"'
        return _first_line(orjson.dumps(args).decode(), 120)
    return _first_line(str(args), 120)


def _target(args: Any) -> str:
    """What a call acts on: its file, else its command, else all its arguments."""
    path = call_path(args)
    if path is not None:
        return "path\0" + path
    if isinstance(args, dict):
        cmd = args.get("command") or args.get("cmd")
        if isinstance(cmd, str):
            return "cmd\0" + " ".join(cmd.split())
    return "args\0" + (args if isinstance(args, str) else orjson.dumps(args, option=orjson.OPT_SORT_KEYS).decode())


def parse_sections(summary: str) -> dict[str, list[str]]:
    """An earlier extractive summary back into {section title: bullets (or body lines)}."""
    out: dict[str, list[str]] = {}
    matches = list(_HEADER.finditer(summary))
    for i, m in enumerate(matches):
        body = summary[m.end(): matches[i + 1].start() if i + 1 < len(matches) else len(summary)].strip("\n")
        entries: list[str] = []
        for line in body.split("\n"):
            if line.startswith("  ") and entries:
                entries[-1] += "\n" + line
            elif line.strip():
                entries.append(line)
        out[m.group(2).strip()] = entries
    return out


def carried_summary(item: Item) -> str | None:
    """The summary inside a compaction carrier item."""
    text = item.get("text") or ""
    start = text.find("<summary>\n")
    end = text.rfind("\n</summary>")
    if start < 0 or end < start:
        return None
    return text[start + len("<summary>\n"): end]


class _Digest:
    """One pass over the items, collecting what each section needs."""

    def __init__(self) -> None:
        self.prev: dict[str, list[str]] = {}
        self.first_user: str | None = None
        self.users: dict[int, str] = {}  # seq -> bullet (insertion order = log order)
        self.concepts: dict[str, int] = {}
        self.files: dict[str, list[str]] = {}
        self.calls: dict[str, tuple[str, Any]] = {}
        self.errors: list[list[Any]] = []  # [bullet, name, resolved?]
        self.open_errors: dict[tuple[str, str], list[list[Any]]] = {}  # (tool, target) -> its unresolved errors
        self.steps: list[str] = []
        self.last_assistant: str | None = None
        self.last_user_after_assistant = False
        self.latest_user: str | None = None

    def feed(self, items: Iterable[Item]) -> None:
        for it in items:
            role = it.get("role")
            synthetic = it.get("synthetic")
            if role == "tool":
                self._result(it)
            elif synthetic == "compaction_summary":
                prev = carried_summary(it)
                if prev is not None:
                    self._merge_previous(parse_sections(prev))
            elif synthetic:
                continue
            elif role == "user":
                text = it.get("text") or ""
                seq = it.get("seq")
                if self.first_user is None:
                    self.first_user = text
                if isinstance(seq, int) and seq not in self.users:
                    self.users[seq] = _bullet(f"- [seq {seq}] ", trim(text, USER_TRIM))
                self._words(text)
                self.latest_user = text
                self.last_user_after_assistant = True
            elif role == "assistant":
                text = it.get("text") or ""
                if text.strip():
                    self.last_assistant = text
                    self.last_user_after_assistant = False
                    self._words(text)
                    self.steps.append(f"- [seq {it.get('seq', '?')}] {_first_line(text)}")
                for c in it.get("tool_calls") or ():
                    self._call(c)

    def _merge_previous(self, prev: dict[str, list[str]]) -> None:
        self.prev = prev
        for line in prev.get("All User Messages", ()):
            m = _SEQ_TAG.match(line)
            if m:
                self.users.setdefault(int(m.group(1)), line)
        for line in prev.get("Files and Code Sections", ()):
            m = _FILE_LINE.match(line)
            if m:
                for verb in m.group(2).split(", "):
                    self._file(m.group(1), verb)
        for line in prev.get("Key Technical Concepts", ()):
            for word in line.lstrip("- ").split(", "):
                if word:
                    self.concepts[word] = self.concepts.get(word, 0) + 1
        self.errors.extend([line, None, True] for line in prev.get("Errors and Fixes", ()) if line.startswith("- "))
        self.steps.extend(line for line in prev.get("Problem Solving", ()) if line.startswith("- "))

    def _words(self, text: str) -> None:
        counts = self.concepts
        for m in _WORD.finditer(text):
            word = m.group(1) or m.group(2)
            if word and len(word) <= 60:
                counts[word] = counts.get(word, 0) + 1

    def _file(self, path: str, verb: str) -> None:
        verbs = self.files.setdefault(path, [])
        if verb not in verbs:
            verbs.append(verb)

    def _call(self, c: dict[str, Any]) -> None:
        name = str(c.get("name", ""))
        args = c.get("args")
        self.calls[str(c.get("call_id"))] = (name, args)
        path = call_path(args)
        if path is not None:
            self._file(path, _verb(name))
        if isinstance(args, dict) and isinstance(args.get("command") or args.get("cmd"), str):
            self.steps.append(f"- ran `{_first_line(str(args.get('command') or args.get('cmd')), 160)}`")

    def _result(self, it: Item) -> None:
        name, args = self.calls.pop(str(it.get("call_id")), ("?", None))
        if it.get("is_error"):
            first = _error_line(str(it.get("output", "")))
            err: list[Any] = [f"- [seq {it.get('seq', '?')}] {name}({_args_brief(args)}) failed: {first}", name, False]
            self.errors.append(err)
            self.open_errors.setdefault((name, _target(args)), []).append(err)
            return
        # Fixed only by a success on the same target: `pytest -q` passing fixes nothing that
        # `ruff check` reported, and editing b.py fixes no failed edit of a.py.
        for err in self.open_errors.pop((name, _target(args)), ()):
            err[0] += f" → then {name} succeeded at seq {it.get('seq', '?')}"
            err[2] = True

    def render(self, state: dict[str, Any], user_budget: int) -> str:
        prev = self.prev
        primary = prev.get("Primary Request and Intent") or ([trim(self.first_user, TEXT_TRIM)] if self.first_user else ["(no user request recorded)"])
        top = sorted(self.concepts.items(), key=lambda kv: (-kv[1], kv[0]))[:CONCEPTS]
        concepts = [("- " + ", ".join(w for w, _ in top))] if top else ["- (none found)"]
        files = [f"- `{p}`: {', '.join(v)}" for p, v in self.files.items()] or ["- (no files touched)"]
        errors = [e[0] if e[2] or e[1] is None else e[0] + " → unresolved" for e in self.errors][-KEEP_ERRORS:] or ["- (no errors)"]
        steps = _dedupe(self.steps)[-KEEP_STEPS:] or ["- (nothing recorded)"]
        users = fit_user_messages([self.users[k] for k in sorted(self.users)], user_budget) or ["- (none)"]
        todos = state.get("todos") or []
        pending = [f"- [{t.get('status')}] {t.get('text', '')}" for t in todos] or ["- (no pending tasks recorded)"]
        if state.get("todos_done"):
            pending.append(f"- ({state['todos_done']} done)")
        current = [trim(self.last_assistant, TEXT_TRIM)] if self.last_assistant else prev.get("Current Work") or ["(no assistant reply yet)"]
        body = [primary, concepts, files, errors, steps, users, pending, current, [self._next_step(todos)]]
        return "\n\n".join(f"## {i}. {title}\n" + "\n".join(lines) for i, (title, lines) in enumerate(zip(SECTIONS, body), 1))

    def _next_step(self, todos: list[dict[str, Any]]) -> str:
        if self.last_user_after_assistant and self.latest_user:
            return "Answer the latest user message: " + _first_line(self.latest_user, 300)
        for status in ("in_progress", "pending"):
            for t in todos:
                if t.get("status") == status:
                    return f"Continue with the {status.replace('_', ' ')} task: {t.get('text', '')}"
        return "Continue from the current work; ask the user if the next step is unclear."


def _dedupe(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    out: list[str] = []
    for line in lines:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out


def extractive_summary(items: Iterable[Item], state: dict[str, Any] | None = None, *, window: int = 200_000) -> str:
    digest = _Digest()
    digest.feed(items)
    return digest.render(state or {}, int(window * 4 * USER_SHARE))


class ExtractiveSummarizer(Summarizer):
    id = "extractive"

    def summarize(self, req: SummaryRequest) -> SummaryResult:
        t0 = time.monotonic()
        summary = extractive_summary(req.items, req.state, window=req.window)
        ms = round((time.monotonic() - t0) * 1000, 1)
        attempt = {"stage": "verbatim", "attempt": 1, "input_items": len(req.items), "outcome": "success", "summary_chars": len(summary)}
        return SummaryResult(summary, self.id, stage="verbatim", attempts=[attempt], timings={"total_ms": ms}, raw=summary)
