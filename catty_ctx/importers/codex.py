"""Codex CLI rollouts (`sessions/YYYY/MM/DD/rollout-*.jsonl`) → catty-ctx events.

Codex writes `{timestamp, type, payload}` lines: `session_meta`, `response_item` (what the
model saw), `event_msg` (what the UI showed: copies of messages, token counts, turn marks),
`turn_context` and `compacted`. Older files come in two earlier forms: JSON Lines whose first
line is a bare `{id, timestamp, instructions, git}` header followed by bare items (and
`{"record_type": "state"}` markers), and the first CLI's single JSON document
`{session: {id, timestamp, instructions}, items: [...]}`. A rollout left alone for a week is
compressed (`.jsonl.zst`); `common.open_source` reads it.

Messages come from `response_item`; a user or agent message that only an `event_msg`
records (some versions, archived sessions, subagent threads, a file cut short) is imported
from the event, and an event that copies a response item is skipped. A subagent thread or a
fork starts with a copy of its parent's history (the parent's `session_meta` again, then
its records): that copy is the child's prefix, and the call that spawned the child, which
the copy leaves unanswered, is answered there instead of dangling. Calls separated by their
outputs stay separate assistant steps, so a resume keeps their order. Usage comes from
`token_count` the way `UsageTracker` says.

This module finds and reads a rollout (its records, its own session, what its head copied
from a parent); `codex_events` turns the records into events.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from itertools import chain
from pathlib import Path
from typing import Any

from .codex_events import TURN_STARTS, Converter, UsageTracker, dispatch, is_harness, snapshot, words
from .common import SHAPE_ERRORS, EventBuilder, Warn, not_recognised, one_session, shape_error, text_of, to_ts
from .reading import SourceLine, iter_jsonl, load_json

WHAT = "a Codex CLI session"
_LINE_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_ITEM_TYPES = ("message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
               "custom_tool_call_output", "local_shell_call", "web_search_call", "compaction")
# How many records are read before the session event is written, to find its model and
# whether a message already carries session_meta's instructions.
_HEAD_RECORDS = 64
_UUID_TAIL = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$")
Record = tuple[str, dict[str, Any], Any, int]  # (line type, payload, ts, line number)


# -- reading a rollout: its records, its own session and what it copied -----------------------


def _normalise(rec: dict[str, Any]) -> tuple[str, dict[str, Any], Any] | None:
    """(line type, payload, ts) for the current layout and the older one of bare items."""
    rtype = rec.get("type")
    if rtype in _LINE_TYPES and isinstance(rec.get("payload"), dict):
        return rtype, rec["payload"], rec.get("timestamp")
    if rtype in _ITEM_TYPES:
        return "response_item", rec, rec.get("timestamp")
    if rtype is None and isinstance(rec.get("id"), str) and "timestamp" in rec:
        return "session_meta", rec, rec.get("timestamp")  # the older first line
    return None


def _skip_key(rec: dict[str, Any]) -> str:
    if rec.get("record_type") is not None and rec.get("type") is None:
        return f"record_type:{rec.get('record_type')}"  # the older files' state markers
    return str(rec.get("type"))


def _base_name(path: Path) -> str:
    """A rollout's name without `.jsonl`, `.json` or a compressed `.jsonl.zst`."""
    name = path.name
    for suffix in (".zst", ".jsonl", ".json"):
        name = name.removesuffix(suffix)
    return name


def _file_session_id(path: Path) -> str:
    """The id a rollout file is named after (its trailing UUID), for a file without a header."""
    base = _base_name(path)
    m = _UUID_TAIL.search(base)
    return m.group(0) if m else base


def find_session_file(source: Path, session_id: str | None) -> Path:
    if source.is_file():
        return source
    # A compressed rollout Codex is resuming has a plain copy beside it for a while: one session.
    by_base: dict[Path, Path] = {}
    for p in chain(source.rglob("rollout-*.jsonl.zst"), source.rglob("rollout-*.json"), source.rglob("rollout-*.jsonl")):
        by_base[p.parent / _base_name(p)] = p  # the plain copy (found last) wins
    files = sorted(by_base.values())
    return one_session(files, source, WHAT, session_id=session_id, named=lambda p: _base_name(p).endswith(str(session_id)),
                       missing=f"no Codex session {session_id} in this tree")


def _parent_of(meta: dict[str, Any]) -> str | None:
    """The parent thread: a subagent's spawner (`source.subagent.thread_spawn`), else the fork's source."""
    source = meta.get("source")
    sub = source.get("subagent") if isinstance(source, dict) else None
    spawn = sub.get("thread_spawn") if isinstance(sub, dict) else None
    for value in (spawn.get("parent_thread_id") if isinstance(spawn, dict) else None, meta.get("parent_thread_id"),
                  meta.get("forked_from_id")):
        if isinstance(value, str) and value:
            return value
    return None


def _is_subagent(meta: dict[str, Any]) -> bool:
    source = meta.get("source")
    return (isinstance(source, dict) and "subagent" in source) or meta.get("thread_source") == "subagent"


def _meta_instructions(meta: dict[str, Any]) -> str | None:
    """The user instructions an older session_meta (or header) carries (`instructions`).

    Newer files have `base_instructions` instead: Codex's own system prompt, not the user's
    instructions, so it is not imported as a message.
    """
    text = meta.get("instructions")
    return text if isinstance(text, str) and text.strip() else None


def _parts(p: dict[str, Any]) -> list[Any]:
    """A message item's content parts; content of another shape (a number, in an older file)
    has none here, and is reported where the item is converted (a data error naming its line)."""
    content = p.get("content")
    return content if isinstance(content, list) else []


def _opens_a_turn(rec: Record) -> bool:
    ltype, p = rec[0], rec[1]
    if ltype == "event_msg":
        return p.get("type") == "user_message" and not is_harness(str(p.get("message") or ""))
    if ltype == "response_item" and p.get("type") == "message" and p.get("role") == "user":
        texts = [text_of([c]) for c in _parts(p) if isinstance(c, dict)]
        return not (texts and all(is_harness(t) for t in texts))
    return False


def _carried_by_message(instructions: str, head: list[Record]) -> bool:
    """Whether a message among the first records already holds these instructions."""
    want = words(instructions)
    for ltype, p, _, _ in head:
        if ltype == "response_item" and p.get("type") == "message" and p.get("role") in ("user", "developer"):
            text = words("\n".join(text_of([c]) for c in _parts(p) if isinstance(c, dict)))
            if want and want in text:
                return True
    return False


def _is_copied(state: list[bool], rec: Record, own_id: str, own_ts: str | None) -> bool:
    """Whether a record of the head belongs to a fork's copy of its parent (state: [in the copy])."""
    ltype, p, ts, _ = rec
    if ltype == "session_meta" and p.get("id") not in (None, own_id):
        state[0] = True
    elif ltype == "event_msg" and p.get("type") in TURN_STARTS:
        state[0] = False
    stamp = to_ts(ts) if isinstance(ts, str) else None
    return state[0] or bool(own_ts and stamp and stamp < own_ts)


def _meta_context(meta: dict[str, Any]) -> dict[str, tuple[Any, str]]:
    """Prompt-context parts from session_meta: {part: (value, source)}."""
    if _is_subagent(meta):
        parts: dict[str, tuple[Any, str]] = {"audience": ("subagent", "codex: session_meta.source.subagent")}
    else:
        parts = {"audience": ("main", "codex: a rollout file is one main session")}
    if isinstance(meta.get("cli_version"), str):
        parts["agent_version"] = (f"codex {meta['cli_version']}", "codex: session_meta.cli_version")
    if isinstance(meta.get("cwd"), str):
        parts["environment.cwd"] = (meta["cwd"], "codex: session_meta.cwd")
    git = meta.get("git")
    if isinstance(git, dict) and isinstance(git.get("branch"), str):
        parts["environment.git_branch"] = (git["branch"], "codex: session_meta.git.branch")
    return parts


def _records(lines: Iterable[SourceLine], report: Any) -> Iterator[Record]:
    for line in lines:
        norm = _normalise(line.record)
        if norm is None:
            report.skipped[_skip_key(line.record)] += 1
            continue
        yield (*norm, line.lineno)


def _document_records(path: Path) -> Iterator[Record] | None:
    """The first CLI's `{session, items}` document as records (items carry no time: the session's)."""
    if path.suffix != ".json":
        return None
    doc = load_json(path)
    session = doc.get("session") if isinstance(doc, dict) else None
    items = doc.get("items") if isinstance(doc, dict) else None
    if not isinstance(session, dict) or not isinstance(items, list):
        raise not_recognised(str(path), WHAT)

    def gen() -> Iterator[Record]:
        yield ("session_meta", session, session.get("timestamp"), 1)
        for n, item in enumerate(items, 1):
            if isinstance(item, dict):
                for response_item in _chat_items(item, n) if "type" not in item and "role" in item else (item,):
                    yield ("response_item", response_item, None, 1)

    return gen()


def _chat_parts(content: Any, kind: str) -> list[dict[str, Any]]:
    """Chat Completions content (a string, or parts) as response-item content parts."""
    if isinstance(content, str):
        return [{"type": kind, "text": content}] if content else []
    parts: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else ():
        if isinstance(part, str):
            parts.append({"type": kind, "text": part})
        elif isinstance(part, dict) and part.get("type") == "image_url":
            url = part.get("image_url")
            parts.append({"type": "input_image", "image_url": url.get("url") if isinstance(url, dict) else url})
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            parts.append({"type": kind, "text": part["text"]})
    return parts


def _chat_items(msg: dict[str, Any], n: int) -> list[dict[str, Any]]:
    """The Nth item of an early document, a Chat Completions message (`role`, `content`,
    `tool_calls`, `tool_call_id`: the CLI's chat provider kept them so), as the response items
    it stands for."""
    role = msg.get("role")
    if role == "tool":
        return [{"type": "function_call_output", "call_id": msg.get("tool_call_id"), "output": text_of(msg.get("content"))}]
    out: list[dict[str, Any]] = []
    parts = _chat_parts(msg.get("content"), "output_text" if role == "assistant" else "input_text")
    if parts or not msg.get("tool_calls"):
        out.append({"type": "message", "role": role, "content": parts, "id": f"item-{n}"})
    for call in msg.get("tool_calls") or ():
        fn = call.get("function") if isinstance(call, dict) else None
        if isinstance(fn, dict):
            out.append({"type": "function_call", "call_id": call.get("id"), "name": fn.get("name"), "arguments": fn.get("arguments")})
    return out


def convert(source: Path, start: Any, *, lenient: bool = False, warn: Warn | None = None, session_id: str | None = None) -> EventBuilder:
    path = find_session_file(source, session_id)
    report = start.report
    records = _document_records(path)
    if records is None:
        records = _records(iter_jsonl(path, report=report, lenient=lenient, warn=warn, what=WHAT), report)
    first = next(records, None)
    if first is None:
        raise not_recognised(str(path), WHAT)
    meta = first[1] if first[0] == "session_meta" else {}
    own_id = str(meta.get("id") or _file_session_id(path))
    own_ts = to_ts(meta.get("timestamp")) or to_ts(first[2])
    parent = _parent_of(meta)
    tracker = UsageTracker()
    if isinstance(meta.get("model"), str) and meta["model"]:
        tracker.model = meta["model"]
    # Read a few records ahead: the session's model is in its first own turn_context (a
    # fork's copy of its parent comes first), and a message there may already hold
    # session_meta's instructions.
    instructions = _meta_instructions(meta)
    head: list[Record] = [first]
    model, own_model, copied = None, False, [False]
    look_for_instructions = instructions is not None
    for rec in records:
        head.append(rec)
        copy = _is_copied(copied, rec, own_id, own_ts)
        if not own_model and rec[0] == "turn_context" and isinstance(rec[1].get("model"), str) and rec[1]["model"]:
            model, own_model = (rec[1]["model"], True) if not copy else (model or rec[1]["model"], False)
        if look_for_instructions and _opens_a_turn(rec):
            look_for_instructions = False  # harness messages come before the first prompt
        if (own_model and not look_for_instructions) or len(head) >= _HEAD_RECORDS:
            break
    model = model or tracker.model
    b = start(
        session_id=own_id,
        ts=meta.get("timestamp") or first[2],
        cwd=meta.get("cwd") if isinstance(meta.get("cwd"), str) else None,
        model=model,
        parent_session_id=parent,
        source_path=path,
    )
    if model:
        b.model = model  # summary.json's model, even when no token count follows
    conv = Converter(b, tracker, own_id=own_id, own_ts=own_ts, parent=parent)
    conv.context = _meta_context(meta)
    b.state("prompt_context", snapshot(conv.context), ts=first[2])
    if instructions is not None:
        if _carried_by_message(instructions, head):
            report.skipped["session_meta:instructions (a message carries them)"] += 1
        else:
            b.message("user", instructions, id=f"{own_id}:instructions", ts=first[2], synthetic="harness_context")
            conv.instructions["AGENTS.md"] = instructions
            b.state("instructions", [{"path": "AGENTS.md", "text": instructions}], ts=first[2])
    for ltype, payload, ts, lineno in chain(head[1:] if first[0] == "session_meta" else head, records):
        if ltype == "session_meta":
            if payload.get("id") not in (None, own_id):
                conv.enter_inherited(by_time=False)  # a fork's copy of its parent's history starts
                report.skipped["session_meta:ancestor"] += 1
            else:
                report.skipped["session_meta:again"] += 1  # a resumed file repeats it
            continue
        try:
            conv.observe_time(ts)
            dispatch(conv, tracker, ltype, payload, ts, lineno)
        except SHAPE_ERRORS as exc:
            shape_error(exc, path=str(path), line=lineno, report=report, lenient=lenient, warn=warn)
    conv.settle()
    conv.flush()
    conv.answer_inherited(b.last_ts)
    return b
