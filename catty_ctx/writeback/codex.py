"""Codex rollout lines from the steps of a view, and the check its resume asks for.

A Codex session is `<CODEX_HOME>/sessions/YYYY/MM/DD/rollout-<time>-<id>.jsonl`: a
`session_meta` line (the id, time, cwd, origin, version), then `response_item` lines, the
items Codex sends back to the model on resume — messages (`input_text` from the user and the
developer, `output_text` from the assistant), `function_call`s (arguments as a JSON string)
and their `function_call_output`s. Codex answers a call it finds without an output with an
output it makes up, so every call of the copy carries the answer the view gives it
(`docs/writeback.md`, "Codex").
"""
from __future__ import annotations

import os
import re
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..view.providers import openai_arguments
from .steps import Clock, Step, has_text, parse_ts

# The release whose resume these lines were checked against; a Codex source's own version is
# written instead when it has one.
WRITTEN_VERSION = "0.171.0"
ORIGINATOR = "catty_ctx"
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_ROLES = {"user": "input_text", "developer": "input_text", "system": "input_text", "assistant": "output_text"}


def valid_session_id(text: str) -> bool:
    return bool(_UUID.fullmatch(text))


def _home() -> Path:
    return Path(os.environ.get("CODEX_HOME") or str(Path.home() / ".codex"))


def default_dest(cwd: str, now: datetime) -> Path:
    """Codex's own folder for a session started NOW (it keeps them by day, not by cwd)."""
    return _home() / "sessions" / now.strftime("%Y") / now.strftime("%m") / now.strftime("%d")


def file_name(session_id: str, now: datetime) -> str:
    return f"rollout-{now.astimezone(timezone.utc).strftime('%Y-%m-%dT%H-%M-%S')}-{session_id}.jsonl"


def existing(folder: Path, session_id: str) -> Path | None:
    """A rollout of that id already in FOLDER (its time in the name may differ)."""
    if not folder.is_dir():
        return None
    return next(iter(sorted(folder.glob(f"rollout-*-{session_id}.jsonl"))), None)


def resume_command(session_id: str) -> str:
    return f"codex resume {session_id}"


# -- the lines -------------------------------------------------------------------------------


def _content(role: str, item: dict[str, Any]) -> list[dict[str, Any]]:
    kind = _ROLES[role]
    text = item.get("text") or ""
    blocks: list[dict[str, Any]] = [{"type": kind, "text": text}] if has_text(text) else []
    if role != "assistant":
        for img in item.get("images") or ():
            if isinstance(img, dict) and isinstance(img.get("data"), str):
                blocks.append({"type": "input_image", "image_url": f"data:{img.get('media_type') or 'image/png'};base64,{img['data']}"})
    return blocks


def _output(item: dict[str, Any]) -> str:
    out = item.get("output") or ""
    if item.get("images"):
        n = len(item["images"])
        out += f"\n[{n} image{'s' if n > 1 else ''} of this result not carried in a function output]"
    return out


def records(steps: list[Step], view: Any, session_id: str, now: datetime) -> list[dict[str, Any]]:
    """The lines of a new Codex rollout SESSION_ID holding STEPS."""
    version = WRITTEN_VERSION
    if isinstance(view.agent_version, str) and view.agent_version.startswith("codex "):
        version = view.agent_version.split(" ", 1)[1]
    clock = Clock(now)
    started = clock(steps[0].ts if steps else None)
    meta = {"id": session_id, "timestamp": started, "cwd": view.cwd, "originator": ORIGINATOR, "cli_version": version,
            "source": "cli", "instructions": None}
    out: list[dict[str, Any]] = [{"timestamp": started, "type": "session_meta", "payload": meta}]
    call_ids: dict[str, str] = {}

    def call_id(cid: Any) -> str:
        key = str(cid)
        if key not in call_ids:
            call_ids[key] = key if key and len(key) <= 64 else f"call_{uuid.uuid4().hex[:24]}"
        return call_ids[key]

    def add(payload: dict[str, Any], ts: Any) -> None:
        out.append({"timestamp": clock(ts), "type": "response_item", "payload": payload})

    for step in steps:
        item = step.item
        if step.kind in ("user", "assistant", "instructions"):
            role = item.get("role") if step.kind == "instructions" else step.kind
            role = "developer" if role == "system" else role
            blocks = _content(str(role), item)
            if blocks:
                add({"type": "message", "role": role, "content": blocks}, step.ts)
            for c in step.calls:
                add({"type": "function_call", "name": str(c.get("name") or "tool"), "arguments": openai_arguments(c.get("args")),
                     "call_id": call_id(c.get("call_id"))}, step.ts)
        elif step.kind == "results":
            for it in step.items:
                # Text only: Codex 0.171 takes no other output on resume (an older {content, success}
                # object makes it drop the output and answer "aborted"), so a failure lives in the text.
                add({"type": "function_call_output", "call_id": call_id(it.get("call_id")), "output": _output(it)}, step.ts)
    return out


# -- what resume takes -----------------------------------------------------------------------


def check_records(lines: list[dict[str, Any]], session_id: str) -> list[str]:
    """What in LINES Codex's resume or the Responses API would not take (empty: all is well).

    The first line the session_meta of SESSION_ID (with time and cwd); then response items
    only, times rising; messages of a known role with non-empty text blocks of the role's
    kind; every function_call answered by exactly one function_call_output after it, and no
    output without its call."""
    problems: list[str] = []
    if not lines or lines[0].get("type") != "session_meta":
        return ["line 1: not a session_meta"]
    meta = lines[0].get("payload") or {}
    if meta.get("id") != session_id or not isinstance(meta.get("cwd"), str) or parse_ts(meta.get("timestamp")) is None:
        problems.append("line 1: session_meta without this id, a cwd or a time")
    last = parse_ts(lines[0].get("timestamp"))
    open_calls: set[Any] = set()  # the records' call ids, whatever JSON they hold
    answered: set[Any] = set()
    for n, line in enumerate(lines[1:], 2):
        where = f"line {n}"
        t = parse_ts(line.get("timestamp"))
        if t is None or (last is not None and t < last):
            problems.append(f"{where}: timestamp {line.get('timestamp')!r} goes back")
        last = t or last
        p = line.get("payload")
        if line.get("type") != "response_item" or not isinstance(p, dict):
            problems.append(f"{where}: not a response_item")
            continue
        ptype = p.get("type")
        if ptype == "message":
            role = p.get("role")
            blocks = p.get("content")
            if role not in _ROLES or not isinstance(blocks, list) or not blocks:
                problems.append(f"{where}: a message without a known role or content")
                continue
            for b in blocks:
                if b.get("type") == "input_image" and role != "assistant":
                    continue
                if b.get("type") != _ROLES[role] or not has_text(b.get("text")):
                    problems.append(f"{where}: a {b.get('type')!r} block in a {role} message, or no text")
        elif ptype == "function_call":
            cid = p.get("call_id")
            if not isinstance(cid, str) or not cid or cid in open_calls or cid in answered or not isinstance(p.get("arguments"), str):
                problems.append(f"{where}: a function_call without a new call_id or string arguments")
            open_calls.add(cid)
        elif ptype == "function_call_output":
            cid = p.get("call_id")
            if cid not in open_calls:
                problems.append(f"{where}: function_call_output {cid} answers no open call")
            open_calls.discard(cid)
            answered.add(cid)
            if not isinstance(p.get("output"), str):
                problems.append(f"{where}: output is not text (Codex drops any other on resume)")
        else:
            problems.append(f"{where}: response item {ptype!r} is not one this writer makes")
        if len(problems) > 20:
            break
    if open_calls:
        problems.append(f"function_call {min(open_calls)} has no output")
    return problems
