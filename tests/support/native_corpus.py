"""A corpus of native Claude Code and Codex sessions whose agents' own compaction summaries drop
planted facts: the pending todos, the files edited, the user's constraint, the exact error.

Each session has one or two compactions, recorded as each agent records them (Claude Code: a
`compact_boundary` line then an `isCompactSummary` user line; Codex: a `compacted` line). The
summary keeps each planted fact or not by a seeded draw, and the manifest says which, so a test
can check the scores against what was planted rather than against a number. The generator needs
nothing of catty-ctx: `bench/eval_native.py` uses it too.
"""
from __future__ import annotations

import json
import random
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TASKS = [
    ("the CSV export drops rows without a date", "src/export/rows.py", "src/export/dates.py", "tests/test_rows.py",
     "E   KeyError: 'date' in rows.py line 88"),
    ("the cart total is wrong with a coupon", "shop/cart.py", "shop/coupons.py", "tests/test_cart.py",
     "AssertionError: expected 90, got 70 (test_coupon_once)"),
    ("the parser breaks on nested parentheses", "grammar/parser.py", "grammar/lexer.py", "tests/test_parser.py",
     "ValueError: unexpected token ')' at line 42 of parser.py"),
    ("the login page times out behind the proxy", "web/auth/session.py", "web/proxy.py", "tests/test_login.py",
     "TimeoutError: proxy did not answer within 30 s (GET /login)"),
    ("uploads over 2 GB are cut short", "storage/upload.py", "storage/chunks.py", "tests/test_upload.py",
     "OSError: [Errno 27] File too large: '/tmp/upload-7f3a.part'"),
    ("the nightly report is sent twice", "jobs/report.py", "jobs/scheduler.py", "tests/test_report.py",
     "IntegrityError: duplicate key value violates unique constraint \"report_day\""),
]
CONSTRAINTS = [
    "Never change the public signature of export_rows.",
    "Do not touch the migrations folder.",
    "Always run the linter before you say a step is done.",
    "Never push to main without a review.",
    "You must keep Python 3.9 compatibility.",
    "Don't add new dependencies.",
]
TODOS = [
    "Add a regression test for the failing case",
    "Update the changelog entry for this fix",
    "Check the edge case with an empty input",
    "Ask the user whether the old behaviour is relied on",
    "Remove the debug logging added while investigating",
    "Run the full suite on the CI image",
]
FAILED_EDIT = "String to replace not found in file."
FAILED_PATH = "docs/never-saved.md"  # an edit that failed: no file edited


@dataclass
class Planted:
    """One compaction's planted facts, and which of them the agent's summary kept."""

    kind: str  # state | instruction | detail
    text: str
    in_summary: bool


@dataclass
class Session:
    agent: str  # claude | codex
    path: Path
    compactions: list[list[Planted]] = field(default_factory=list)


def _summary(rng: random.Random, task: str, planted: list[Planted], keep: float) -> str:
    """What an agent's summary says: the task in its own words, and each planted fact kept only
    when the draw says so (the rest paraphrased away, as the summaries users complain of do)."""
    lines = [f"The user asked to fix this: {task}. The agent investigated, changed some code and ran the tests."]
    for p in planted:
        p.in_summary = rng.random() < keep
        if p.in_summary:
            lines.append({"state": "Still to do or touched: ", "instruction": "The user said: ",
                          "detail": "The tests failed with: "}[p.kind] + p.text)
    lines.append("Work continues on the remaining items.")
    return "\n".join(lines)


class _Claude:
    def __init__(self, sid: str, cwd: str) -> None:
        self.sid, self.cwd = sid, cwd
        self.lines: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.n = 0

    def _rec(self, kind: str, **fields: Any) -> dict[str, Any]:
        self.n += 1
        uid = str(uuid.uuid5(uuid.NAMESPACE_URL, f"{self.sid}/{self.n}"))
        rec = {"parentUuid": self.parent, "isSidechain": False, "userType": "external", "cwd": self.cwd, "sessionId": self.sid,
               "version": "2.1.332", "type": kind, "uuid": uid, "timestamp": f"2026-11-20T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z",
               **fields}
        self.lines.append(rec)
        self.parent = uid
        return rec

    def user(self, text: str) -> None:
        self._rec("user", message={"role": "user", "content": text})

    def assistant(self, content: list[dict[str, Any]]) -> None:
        self._rec("assistant", requestId=f"req_{self.n}", message={
            "model": "claude-sonnet-4-5", "id": f"msg_{self.n}", "type": "message", "role": "assistant", "content": content,
            "stop_reason": "tool_use", "usage": {"input_tokens": 10, "output_tokens": 5}})

    def call(self, name: str, args: dict[str, Any], output: str, *, error: bool = False) -> None:
        cid = f"toolu_{self.sid[:8]}_{self.n}"
        self.assistant([{"type": "tool_use", "id": cid, "name": name, "input": args}])
        self._rec("user", message={"role": "user", "content": [{"tool_use_id": cid, "type": "tool_result", "content": output,
                                                                "is_error": error}]})

    def todos(self, todos: list[tuple[str, str]]) -> None:
        self.call("TodoWrite", {"todos": [{"content": t, "status": s, "activeForm": t} for t, s in todos]},
                  "Todos have been modified successfully.")

    def compact(self, summary: str) -> None:
        before = self.parent
        boundary = self._rec("system", subtype="compact_boundary", content="Conversation compacted", isMeta=False, level="info",
                             compactMetadata={"trigger": "auto", "preTokens": 150_000})
        boundary.update(parentUuid=None, logicalParentUuid=before)  # as Claude Code writes it
        self._rec("user", isCompactSummary=True, isVisibleInTranscriptOnly=True, message={"role": "user", "content": (
            "This session is being continued from a previous conversation that ran out of context. The summary below covers "
            "the earlier portion of the conversation.\n\nSummary:\n" + summary)})

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.lines)


class _Codex:
    def __init__(self, sid: str, cwd: str) -> None:
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.sid = sid
        self._line("session_meta", {"id": sid, "timestamp": "2026-11-20T10:00:00.000Z", "cwd": cwd, "originator": "codex_cli_rs",
                                    "cli_version": "0.171.0", "instructions": None})
        self._line("turn_context", {"cwd": cwd, "approval_policy": "never", "model": "gpt-5.1-codex", "summary": "auto"})

    def _line(self, kind: str, payload: dict[str, Any]) -> None:
        self.n += 1
        self.lines.append({"timestamp": f"2026-11-20T10:{self.n // 60:02d}:{self.n % 60:02d}.000Z", "type": kind, "payload": payload})

    def user(self, text: str) -> None:
        self._line("response_item", {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        self._line("event_msg", {"type": "user_message", "message": text, "images": []})

    def call(self, name: str, args: dict[str, Any], output: Any) -> None:
        cid = f"call_{self.sid[:8]}_{self.n}"
        self._line("response_item", {"type": "function_call", "name": name, "arguments": json.dumps(args), "call_id": cid})
        self._line("response_item", {"type": "function_call_output", "call_id": cid, "output": output})

    def patch(self, path: str) -> None:
        cid = f"call_{self.sid[:8]}_{self.n}"
        self._line("response_item", {"type": "custom_tool_call", "status": "completed", "call_id": cid, "name": "apply_patch",
                                     "input": f"*** Begin Patch\n*** Update File: {path}\n@@\n-    old()\n+    new()\n*** End Patch\n"})
        self._line("response_item", {"type": "custom_tool_call_output", "call_id": cid, "output": f"Success. Updated the following files:\nM {path}\n"})

    def todos(self, todos: list[tuple[str, str]]) -> None:
        self.call("update_plan", {"plan": [{"step": t, "status": s} for t, s in todos]}, "Plan updated")

    def compact(self, summary: str) -> None:
        self._line("compacted", {"message": summary, "replacement_history": []})

    def text(self) -> str:
        return "".join(json.dumps(r) + "\n" for r in self.lines)


def _span(w: Any, agent: str, rng: random.Random, k: int, task: tuple[str, ...], open_todos: list[str], done: list[str],
          edited_before: list[str], keep: float) -> list[Planted]:
    """One span: a prompt with a constraint, a todo list, two edits (and, on Claude, one that
    fails), a test run that fails with an exact error; then the agent's compaction."""
    what, a, b, test, error = task
    constraint = CONSTRAINTS[(k + rng.randrange(len(CONSTRAINTS))) % len(CONSTRAINTS)]
    w.user(f"{'Please look at this: ' if k == 0 else 'Next: '}{what}. {constraint}")
    fresh = [t for t in rng.sample(TODOS, len(TODOS)) if t not in open_todos and t not in done][: 3 - len(open_todos)]
    if open_todos:
        done.append(open_todos.pop(0))  # the first open todo got done in this span
        fresh = [t for t in TODOS if t not in open_todos and t not in done][: 3 - len(open_todos)]
    open_todos.extend(fresh)
    w.todos([(t, "completed") for t in done] + [(t, "in_progress" if i == 0 else "pending") for i, t in enumerate(open_todos)])
    edited = [a, b] if k == 0 else [b.replace(".py", f"_v{k}.py"), test]
    if agent == "claude":
        for path in edited:
            w.call("Edit", {"file_path": path, "old_string": "old()", "new_string": "new()"}, f"The file {path} has been updated.")
        w.call("Edit", {"file_path": FAILED_PATH, "old_string": "x", "new_string": "y"},
               f"<tool_use_error>{FAILED_EDIT}</tool_use_error>", error=True)
        w.call("Bash", {"command": f"pytest -q {test}"}, f"F.\n{error}\nFAILED {test}", error=True)
        w.assistant([{"type": "text", "text": "The fix is half done; the test still fails."}])
    else:
        for path in edited:
            w.patch(path)
        w.call("shell", {"command": ["pytest", "-q", test]}, {"content": f"F.\n{error}\nFAILED {test}", "success": False})
        w._line("response_item", {"type": "message", "role": "assistant", "content": [{"type": "output_text",
                                                                                       "text": "The fix is half done; the test still fails."}]})
    edited_before.extend(edited)  # the state is the session's so far: every file edited and not failed
    planted = [Planted("state", t, False) for t in open_todos]
    planted += [Planted("state", p, False) for p in edited_before]
    planted += [Planted("instruction", constraint, False)]
    if agent == "claude":
        planted.append(Planted("detail", f"<tool_use_error>{FAILED_EDIT}</tool_use_error>", False))
    planted.append(Planted("detail", error, False))
    w.compact(_summary(rng, what, planted, keep))
    return planted


def write_corpus(root: Path, *, sessions: int = 6, seed: int = 7, keep: float = 0.3) -> list[Session]:
    """SESSIONS native sessions under ROOT (half Claude Code's projects/, half Codex's sessions/),
    each with one or two compactions; their manifest (what was planted, what each summary kept)."""
    rng = random.Random(seed)
    out = []
    for i in range(sessions):
        agent = "claude" if i % 2 == 0 else "codex"
        sid = str(uuid.UUID(int=rng.getrandbits(128), version=4))
        task = TASKS[i % len(TASKS)]
        cwd = f"/home/dev/project{i}"
        if agent == "claude":
            w: Any = _Claude(sid, cwd)
            path = root / ".claude" / "projects" / f"-home-dev-project{i}" / f"{sid}.jsonl"
        else:
            w = _Codex(sid, cwd)
            path = root / ".codex" / "sessions" / "2026" / "11" / "20" / f"rollout-2026-11-20T10-00-{i:02d}-{sid}.jsonl"
        session = Session(agent, path)
        open_todos: list[str] = []
        done: list[str] = []
        edited: list[str] = []
        for k in range(1 + (i // 2) % 2):  # one or two compactions
            session.compactions.append(_span(w, agent, rng, k, task, open_todos, done, edited, keep))
        w.user("Carry on.")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(w.text())
        out.append(session)
    return out
