"""Each conversation the proxy carries, recorded as a catty session (docs/proxy.md#recording).

A conversation lives in `ROOT/<agent>/<session id>/`. The client's items are matched to what
is already recorded by their canonical prefix fingerprint (docs/spec.md#fingerprints), so a
request that repeats the whole history appends only what is new; a history that was edited
or rewound appends a `rewind` to the turn before the first changed item and records the new
turn from there (the older events stay in the log, as every rewind leaves them). The answer's
items and a `usage` event with the upstream's exact counts follow. Every append goes through
the store, under the session's lock. The proxy's own bookkeeping (the recorded chain, the
compactions it applies to requests) is `proxy.json` beside the log, replaced whole.
"""
from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..formats.calls import claude_call, codex_running
from ..importers.common import edited_paths, todos_from
from ..session.create import create_session
from ..session.files import replace_file
from ..session.store import Session
from ..view.fingerprint import canonical, extend, prefix_fp, seed
from ..view.pairing import ANSWER_TEXT
from .families import Answer, Item, opening

STATE_FILE = "proxy.json"
ROLES = frozenset({"system", "developer", "user", "assistant"})


def chain(items: list[Item], digests: list[bytes] | None = None, start: int = 0) -> list[bytes]:
    """fp[1..n] of ITEMS, as digests; the first START taken from DIGESTS (an earlier parse's, reuse.py)."""
    out = digests[:start] if digests is not None else []
    d = out[-1] if out else seed()
    for item in items[len(out):]:
        d = extend(d, canonical(item))
        out.append(d)
    return out


def common_prefix(a: list[bytes], b: list[bytes]) -> int:
    """How many leading items two chains share: a chain digest equal at i means equal before i,
    so a binary search finds the first difference."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[mid - 1] == b[mid - 1]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def is_turn(item: Item) -> bool:
    return item.get("role") == "user" and not item.get("synthetic")


@dataclass
class Conversation:
    """One recorded conversation and the proxy's bookkeeping for it."""

    agent: str
    session_id: str
    folder: Path
    first: str  # fingerprint of the opening items: which conversation of a session id this is
    digests: list[bytes] = field(default_factory=list)  # the chain of the items recorded
    seqs: list[int] = field(default_factory=list)  # the seq of each recorded item's event
    turns: list[bool] = field(default_factory=list)  # each recorded item opens a turn
    done: set[str] = field(default_factory=set)  # repairs already recorded ("answer:ID", "drop:ID")
    edited: list[str] = field(default_factory=list)
    replacements: list[dict[str, Any]] = field(default_factory=list)  # {k, fp, text, compaction}
    prefired_at: int = -1  # recorded items when pass 1 last started
    # A Codex session's running totals (input with its cached part, cached, output, reasoning) over
    # the answers recorded: None when the proxy did not see it from its first request (`running_from`).
    running: list[int] | None = None
    runtime: dict[str, Any] = field(default_factory=dict)  # the server's per-conversation objects (not saved)

    @property
    def session(self) -> Session:
        return Session.open(self.folder)

    def state_doc(self) -> bytes:
        return orjson.dumps({"version": 1, "agent": self.agent, "session_id": self.session_id, "first": self.first,
                             "chain": [d.hex() for d in self.digests], "seqs": self.seqs, "turns": self.turns,
                             "done": sorted(self.done), "edited": self.edited, "replacements": self.replacements,
                             "prefired_at": self.prefired_at, "running": self.running})

    def save(self) -> None:
        replace_file(self.folder / STATE_FILE, self.state_doc(), durable=False)


def _load(folder: Path) -> dict[str, Any] | None:
    try:
        doc = orjson.loads((folder / STATE_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("version") == 1 else None


class Recorder:
    """The conversations under ROOT, opened on first sight and kept for the proxy's life."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.open: dict[tuple[str, str, str], Conversation] = {}

    @staticmethod
    def key(agent: str, sid: str, items: list[Item]) -> tuple[str, str, str]:
        return agent, sid, prefix_fp(opening(items))

    def conversation(self, agent: str, sid: str, items: list[Item], *, model: str | None, window: int) -> Conversation:
        """The conversation these items belong to, opened (or made) on first sight."""
        key = self.key(agent, sid, items)
        first = key[2]
        conv = self.open.get(key)
        if conv is not None:
            return conv
        folder = self.root / agent / sid
        doc = _load(folder)
        if doc is not None and doc.get("first") != first:  # another conversation under the same id (a side request)
            folder = self.root / agent / f"{sid}-{first[:12]}"
            doc = _load(folder)
        conv = Conversation(agent, sid, folder, first)
        if doc is not None:
            conv.digests = [bytes.fromhex(h) for h in doc.get("chain") or ()]
            conv.seqs = list(doc.get("seqs") or ())
            conv.turns = list(doc.get("turns") or ())
            conv.done = set(doc.get("done") or ())
            conv.edited = list(doc.get("edited") or ())
            conv.replacements = list(doc.get("replacements") or ())
            conv.prefired_at = int(doc.get("prefired_at", -1))
            running = doc.get("running")
            conv.running = list(running) if isinstance(running, list) and len(running) == 4 and all(type(n) is int for n in running) else None
        else:
            create_session(folder, session_id=folder.name, window=window, model=model)
            conv.running = running_from(agent, sid, folder, items)
            conv.save()
        self.open[key] = conv
        return conv

    # -- requests --------------------------------------------------------------------------------

    def record_request(self, conv: Conversation, items: list[Item], digests: list[bytes]) -> list[int]:
        """Append what ITEMS hold beyond the recorded history; the seq of every item."""
        j = common_prefix(conv.digests, digests)
        events: list[dict[str, Any]] = []
        start = j
        if j < len(conv.digests):  # an edited or rewound history: a branch from the turn before
            turn = sum(conv.turns[:j])
            if j < len(items) and not is_turn(items[j]) and turn > 0:
                start = max(i for i in range(j) if conv.turns[i])  # the changed turn is recorded again from its start
                turn -= 1
            events.append({"kind": "rewind", "to_turn": turn})
            del conv.digests[start:], conv.seqs[start:], conv.turns[start:]
        per_item: list[int] = []
        for i in range(start, len(items)):
            made = self._item_events(items[i], digests[i], conv.edited)
            per_item.append(len(made))
            events.extend(made)
        if events:
            written = conv.session.append(events, warn=None, allow_duplicate_ids=True)
            at = len(written) - sum(per_item)
            for i, n in zip(range(start, len(items)), per_item):
                conv.digests.append(digests[i])
                conv.seqs.append(written[at]["seq"])
                conv.turns.append(is_turn(items[i]))
                at += n
        return conv.seqs[:len(items)]

    def _item_events(self, item: Item, digest: bytes, edited: list[str]) -> list[dict[str, Any]]:
        if item["role"] == "tool":
            return [{"kind": "tool_result", "call_id": item["call_id"], "output": item["output"], "is_error": bool(item.get("is_error"))}]
        role = item["role"] if item["role"] in ROLES else "user"
        msg: dict[str, Any] = {"kind": "message", "id": "px-" + digest.hex()[:24], "role": role, "text": item.get("text") or ""}
        if item.get("synthetic"):
            msg["synthetic"] = item["synthetic"]
        out = [msg]
        for call in item.get("tool_calls") or ():
            out.append({"kind": "tool_call", "call_id": call["call_id"], "name": call["name"], "args": call["args"]})
            todos = todos_from(call["name"], call["args"])
            if todos is not None:
                out.append({"kind": "state", "facet": "todos", "value": todos})
            paths = [p for p in edited_paths(call["name"], call["args"]) if p not in edited]
            if paths:
                edited.extend(dict.fromkeys(paths))
                out.append({"kind": "state", "facet": "edited_files", "value": list(edited)})
        return out

    # -- answers ---------------------------------------------------------------------------------

    def record_answer(self, conv: Conversation, answer: Answer) -> None:
        """The answer's items (extending the recorded chain: the next request repeats them) and its usage."""
        events: list[dict[str, Any]] = []
        per_item: list[int] = []
        digests: list[bytes] = []
        d = conv.digests[-1] if conv.digests else seed()
        for item in answer.items:
            d = extend(d, canonical(item))
            digests.append(d)
            made = self._item_events(item, d, conv.edited)
            per_item.append(len(made))
            events.extend(made)
        if answer.usage is not None:
            usage: dict[str, Any] = {"kind": "usage", "model": answer.model or "unknown", **answer.usage}
            # Named as the agent's own log names the call (`formats.calls`), so the transcript, its
            # mirror and this session count it once; another agent's by the response's id.
            name = claude_call(answer.header_id, answer.request_id, conv.session_id) if conv.agent == "claude" else None
            if conv.running is not None:
                u = answer.usage
                conv.running = [a + b for a, b in zip(conv.running, (u["input"] + u["cache_read"], u["cache_read"], u["output"], u["reasoning"]))]
                name = codex_running(conv.session_id, conv.running)
            if name or answer.request_id:
                usage["request_id"] = name or answer.request_id
            events.append(usage)
        if not events:
            return
        written = conv.session.append(events, warn=None, allow_duplicate_ids=True)
        at = 0
        for item, digest, n in zip(answer.items, digests, per_item):
            conv.digests.append(digest)
            conv.seqs.append(written[at]["seq"])
            conv.turns.append(is_turn(item))
            at += n

    def record_repairs(self, conv: Conversation, repairs: list[dict[str, Any]]) -> None:
        """`repair` events for the fixes not recorded before (a client resending the same broken
        history is repaired on every request, recorded once)."""
        new = [r for r in repairs if f"{r['action']}:{r.get('call_id')}" not in conv.done]
        if new:
            conv.session.append([{"kind": "repair", **r} for r in new], warn=None, allow_duplicate_ids=True)
            conv.done.update(f"{r['action']}:{r.get('call_id')}" for r in new)


def running_from(agent: str, sid: str, folder: Path, items: list[Item]) -> list[int] | None:
    """The running totals a new conversation starts with: zeros for a Codex session seen from its
    first request (nothing answered in ITEMS yet) under its own id, else None: its calls then keep
    the response's id (docs/usage.md#counting-each-call-once), never a name a rollout could share."""
    if agent != "codex" or folder.name != sid or any(item["role"] in ("assistant", "tool") for item in items):
        return None
    return [0, 0, 0, 0]


def repair_events(items: list[Item], seqs: list[int], fixes: list[tuple[str, str]]) -> list[dict[str, Any]]:
    """The `repair` events of FIXES ((reason, call id), as the lifecycle found them in ITEMS)."""
    result_seq = {it["call_id"]: s for it, s in zip(items, seqs) if it.get("role") == "tool"}
    events: list[dict[str, Any]] = []
    for reason, cid in fixes:
        if reason == "dangling_call":
            events.append({"action": "answer", "call_id": cid, "text": ANSWER_TEXT, "reason": reason})
        elif cid in result_seq:
            events.append({"action": "drop", "target_seq": result_seq[cid], "call_id": cid, "reason": reason})
    return events


class PendingRecord:
    """A request's items (and the repairs its copy needed), recorded once: right away when a
    compaction needs the log current, else after the request went out, off its path."""

    def __init__(self, recorder: Recorder, conv: Conversation, items: list[Item], digests: list[bytes]) -> None:
        self.recorder, self.conv, self.items, self.digests = recorder, conv, items, digests
        self.fixes: list[tuple[str, str]] = []
        self.seqs: list[int] | None = None
        self._lock = threading.Lock()
        self.task: Awaitable[None] | None = None  # the server's recording of it, in the conversation's order
        self.gate: asyncio.Event | None = None  # what that recording waits for (the answer's first bytes)

    async def written(self, now: bool = True) -> list[int]:
        """The seqs of the items once the log holds them (and all the conversation recorded
        before): NOW, or after the answer's first bytes went out."""
        if self.task is None:
            return await asyncio.to_thread(self.flush)
        if now and self.gate is not None:
            self.gate.set()
        await asyncio.shield(self.task)
        if self.seqs is None:
            raise RuntimeError("the request's items could not be recorded (proxy.log says why)")
        return self.seqs

    def flush(self) -> list[int]:
        with self._lock:
            if self.seqs is None:
                self.seqs = self.recorder.record_request(self.conv, self.items, self.digests)
                if self.fixes:
                    self.recorder.record_repairs(self.conv, repair_events(self.items, self.seqs, self.fixes))
            return self.seqs
