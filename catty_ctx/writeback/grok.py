"""A Grok Build session folder from the steps of a view, and the check `grok --resume` asks for.

A grok session is a folder `$GROK_HOME/sessions/<url-encoded cwd>/<id>/` (`formats.grok`):
`summary.json` (what makes it a session grok lists and resumes: `info.id`, `info.cwd`, the
required fields, and for a fork `parent_session_id`, `forked_at`, `session_kind: "fork"`),
`updates.jsonl` (the log of record: the turns as grok's own envelopes) and
`chat_history.jsonl` (the model's view grok resumes from: `system`, `user` with the prompt in
`<user_query>`, `assistant` with `tool_calls`, `tool_result`). The folder appears whole
(built under a hidden name beside it, then renamed), never over another
(`docs/writeback.md`, "Grok Build").
"""
from __future__ import annotations

import os
import re
import secrets
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import quote

import orjson

from ..errors import UsageError
from ..formats import grok as layout
from ..view.providers import openai_arguments
from .steps import Clock, Step, has_text

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
MODEL = "grok-4.6"  # written when the source names no model grok knows
_BUCKET_MAX = 255


def valid_session_id(text: str) -> bool:
    return bool(_UUID.fullmatch(text))


def new_session_id() -> str:
    """A UUIDv7 (grok's own ids are): 48 bits of Unix milliseconds, then random bits."""
    value = (int(time.time() * 1000) << 80) | (0x7 << 76) | (secrets.randbits(12) << 64) | (0b10 << 62) | secrets.randbits(62)
    h = f"{value:032x}"
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def home() -> Path:
    value = os.environ.get("GROK_HOME")
    return Path(value) if value else Path.home() / ".grok"


def default_dest(cwd: str, now: datetime) -> Path:
    """The bucket grok keeps CWD's sessions in (url-encoded; a longer name is grok's hashed form,
    which needs its blake3: refused, name a DEST). A home without `sessions/` is refused: grok
    has not run there, or GROK_HOME names the wrong folder."""
    sessions = home() / "sessions"
    if not sessions.is_dir():
        raise UsageError(f"{sessions}: no Grok Build home there (run grok once, set GROK_HOME, or name DEST)")
    bucket = quote(cwd, safe="-_.~")
    if len(bucket.encode()) > _BUCKET_MAX:
        raise UsageError(f"{cwd}: grok keeps so long a directory in a hashed folder; name DEST (its sessions/<bucket>)")
    return home() / "sessions" / bucket


def file_name(session_id: str, now: datetime) -> str:
    return session_id  # a folder


def existing(folder: Path, session_id: str) -> Path | None:
    path = folder / session_id
    return path if os.path.lexists(path) else None


def resume_command(session_id: str) -> str:
    return f"grok --resume {session_id}"


def _envelope(session_id: str, kind: str, fields: dict[str, Any], counter: int, ms: int, *, xai: bool = False) -> dict[str, Any]:
    return {"timestamp": ms // 1000, "method": "_x.ai/session/update" if xai else "session/update",
            "params": {"sessionId": session_id, "update": {"sessionUpdate": kind, **fields},
                       "_meta": {"eventId": f"{session_id}-{counter}", "agentTimestampMs": ms}}}


def _ms(stamp: str) -> int:
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


def records(steps: list[Step], view: Any, session_id: str, now: datetime) -> list[dict[str, Any]]:
    """The lines of the new session's updates.jsonl (its chat_history and summary follow from
    them and the view: `session_files`)."""
    clock = Clock(now)
    out: list[dict[str, Any]] = []
    prompt = -1
    model = view.model or MODEL

    def add(kind: str, fields: dict[str, Any], ts: Any, xai: bool = False) -> None:
        out.append(_envelope(session_id, kind, fields, len(out) + 1, _ms(clock(ts)), xai=xai))

    def end_turn() -> None:
        if prompt >= 0:
            add("turn_completed", {"prompt_id": f"{session_id}-prompt-{prompt}", "stop_reason": "end_turn"}, None, xai=True)

    for step in steps:
        item = step.item
        if step.kind == "user" and not item.get("synthetic"):
            end_turn()
            prompt += 1
            add("user_message_chunk", {"content": {"type": "text", "text": item.get("text") or ""},
                                       "_meta": {"modelId": model, "promptIndex": prompt}}, step.ts)
        elif step.kind == "assistant":
            if has_text(item.get("text")):
                add("agent_message_chunk", {"content": {"type": "text", "text": item["text"]}}, step.ts)
            for c in step.calls:
                add("tool_call", {"toolCallId": str(c.get("call_id")), "title": str(c.get("name") or "tool"),
                                  "rawInput": c.get("args") if isinstance(c.get("args"), dict) else {"input": c.get("args")}}, step.ts)
        elif step.kind == "results":
            for it in step.items:
                add("tool_call_update", {"toolCallId": str(it.get("call_id")), "status": "failed" if it.get("is_error") else "completed",
                                         "content": [{"type": "content", "content": {"type": "text", "text": it.get("output") or ""}}]},
                    step.ts)
    end_turn()
    return out


def chat_items(steps: list[Step], view: Any) -> list[dict[str, Any]]:
    """chat_history.jsonl's items: what grok sends the model when it resumes the session."""
    items: list[dict[str, Any]] = []
    system = next((s.item.get("text") for s in steps if s.kind == "instructions" and s.item.get("role") == "system"), None)
    items.append({"type": "system", "content": system or "You are Grok, a coding agent."})
    prompt = -1
    for step in steps:
        item = step.item
        if step.kind == "user":
            text = item.get("text") or ""
            if item.get("synthetic"):
                items.append({"type": "user", "content": [{"type": "text", "text": text}], "synthetic_reason": "compaction_meta"})
                continue
            prompt += 1
            items.append({"type": "user", "content": [{"type": "text", "text": f"<user_query>\n{text}\n</user_query>"}],
                          "prompt_index": prompt})
        elif step.kind == "instructions" and item.get("role") != "system":
            items.append({"type": "user", "content": [{"type": "text", "text": item.get("text") or ""}],
                          "synthetic_reason": "system_reminder"})
        elif step.kind == "assistant":
            row: dict[str, Any] = {"type": "assistant", "content": item.get("text") or ""}
            if step.calls:
                row["tool_calls"] = [{"id": str(c.get("call_id")), "name": str(c.get("name") or "tool"),
                                      "arguments": openai_arguments(c.get("args"))} for c in step.calls]
            items.append(row)
        elif step.kind == "results":
            items.extend({"type": "tool_result", "tool_call_id": str(it.get("call_id")), "content": it.get("output") or ""}
                         for it in step.items)
    return items


def _stamp(t: datetime) -> str:
    return t.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def session_files(lines: list[dict[str, Any]], steps: list[Step], view: Any, session_id: str, now: datetime) -> dict[str, bytes]:
    """The folder's files, by name: summary.json, updates.jsonl, chat_history.jsonl."""
    chat = chat_items(steps, view)
    title = next((s.item.get("text") or "" for s in steps if s.kind == "user" and not s.item.get("synthetic")), "")
    stamp = _stamp(now)
    summary: dict[str, Any] = {
        "info": {"id": session_id, "cwd": view.cwd}, "session_summary": " ".join(title.split())[:80],
        "created_at": stamp, "updated_at": stamp, "last_active_at": stamp, "num_messages": len(lines),
        "num_chat_messages": len(chat), "current_model_id": view.model or MODEL, "chat_format_version": 1,
        "next_trace_turn": 0, "session_kind": "fork", "forked_at": stamp,
    }
    if view.source_id:
        summary["parent_session_id"] = view.source_id
    return {
        layout.SUMMARY: orjson.dumps(summary, option=orjson.OPT_INDENT_2),
        layout.LOG: b"".join(orjson.dumps(r) + b"\n" for r in lines),
        layout.CHAT: b"".join(orjson.dumps(i) + b"\n" for i in chat),
    }


def check_records(lines: list[dict[str, Any]], session_id: str) -> list[str]:
    """What in LINES grok's replay would not take (empty: all is well): envelopes of this
    session, every tool call answered once, after it, by a terminal update."""
    problems: list[str] = []
    open_calls: set[str] = set()
    answered: set[str] = set()
    for n, line in enumerate(lines, 1):
        if not layout.is_update(line) or line["params"].get("sessionId") != session_id:
            problems.append(f"line {n}: not an update of session {session_id}")
            continue
        update = line["params"]["update"]
        kind = update["sessionUpdate"]
        cid = update.get("toolCallId")
        if kind == "tool_call":
            if not isinstance(cid, str) or not cid or cid in open_calls or cid in answered:
                problems.append(f"line {n}: a tool_call without a new id")
            open_calls.add(str(cid))
        elif kind == "tool_call_update":
            if cid not in open_calls:
                problems.append(f"line {n}: a result for {cid}, which no open call has")
            open_calls.discard(str(cid))
            answered.add(str(cid))
    if open_calls:
        problems.append(f"tool_call {min(open_calls)} has no result")
    return problems
