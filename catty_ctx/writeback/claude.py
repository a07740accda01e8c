"""Claude Code records from the steps of a view, and the check its loader's rules ask for.

A Claude Code session is `<config>/projects/<cwd with every non-alphanumeric as '-'>/<id>.jsonl`:
records linked by `uuid`/`parentUuid`. On `--resume` Claude Code walks the chain from the
newest leaf back to the root; a parent it cannot find ends the walk (or makes it guess by
time), a cycle cuts it, several roots make it warn. So the copy is one unbroken chain, root
first, timestamps rising, each record with `type`, `uuid`, `parentUuid`, `sessionId`,
`timestamp`, `cwd`, `version`, `isSidechain`, `userType` and `message` (`role`, content
blocks); the results of an assistant's calls are one user record right after it
(`docs/writeback.md`, "Claude Code").
"""
from __future__ import annotations

import os
import re
import secrets
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ..errors import UsageError
from ..view.providers import anthropic_input
from .steps import Clock, Step, has_text, parse_ts

# The release whose loader and request these records were checked against; a Claude source's
# own version is written instead when it has one.
WRITTEN_VERSION = "2.1.332"
SLUG_LIMIT = 200  # a longer project folder name gets a hash suffix this module does not make
_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
_TOOL_ID = re.compile(r"[A-Za-z0-9_-]{1,256}")  # what the Messages API takes as a tool_use id
_PLAIN_SYNTHETIC = ("interrupted", "command_output")  # user text the importer knows by its words
_BLOCKS = {"user": ("text", "image", "tool_result", "document"), "assistant": ("text", "tool_use", "thinking", "redacted_thinking")}


def valid_session_id(text: str) -> bool:
    return bool(_UUID.fullmatch(text))


def project_folder_name(cwd: str) -> str:
    return re.sub(r"[^a-zA-Z0-9]", "-", cwd)


def default_dest(cwd: str, now: datetime) -> Path:
    """Claude Code's own folder for sessions started in CWD."""
    name = project_folder_name(cwd)
    if len(name) > SLUG_LIMIT:
        raise UsageError(f"{cwd}: too long a path for Claude Code's project folder name; give DEST")
    home = os.environ.get("CLAUDE_CONFIG_DIR") or str(Path.home() / ".claude")
    return Path(home) / "projects" / name


def file_name(session_id: str, now: datetime) -> str:
    return f"{session_id}.jsonl"


def existing(folder: Path, session_id: str) -> Path | None:
    path = folder / file_name(session_id, datetime.now(timezone.utc))
    return path if os.path.lexists(path) else None


def resume_command(session_id: str) -> str:
    return f"claude --resume {session_id}"


# -- the records ---------------------------------------------------------------------------


def _image_block(img: dict[str, Any]) -> dict[str, Any] | None:
    if not isinstance(img.get("data"), str):
        return None
    return {"type": "image", "source": {"type": "base64", "media_type": img.get("media_type") or "image/png", "data": img["data"]}}


def _user_content(item: dict[str, Any]) -> Any:
    text = item.get("text") or ""
    images = [b for b in (_image_block(i) for i in item.get("images") or ()) if b]
    if not images:
        return text
    return ([{"type": "text", "text": text}] if has_text(text) else []) + images


def _result_block(item: dict[str, Any], tool_id: str) -> dict[str, Any]:
    output = item.get("output") or ""
    images = [b for b in (_image_block(i) for i in item.get("images") or ()) if b]
    content: Any = output if not images else ([{"type": "text", "text": output}] if has_text(output) else []) + images
    return {"type": "tool_result", "tool_use_id": tool_id, "content": content, "is_error": bool(item.get("is_error"))}


def records(steps: list[Step], view: Any, session_id: str, now: datetime) -> list[dict[str, Any]]:
    """The records of a new Claude Code session SESSION_ID holding STEPS (instructions are
    left out: Claude Code sends its own system prompt)."""
    version = WRITTEN_VERSION
    if isinstance(view.agent_version, str) and view.agent_version.startswith("claude-code "):
        version = view.agent_version.split(" ", 1)[1]
    base = {"isSidechain": False, "userType": "external", "cwd": view.cwd, "sessionId": session_id, "version": version}
    clock = Clock(now)
    out: list[dict[str, Any]] = []
    used: set[str] = set()
    tool_ids: dict[str, str] = {}
    taken: set[str] = set()
    last_assistant: str | None = None

    def new_uuid(origin: str | None) -> str:
        u = origin if isinstance(origin, str) and _UUID.fullmatch(origin) and origin not in used else str(uuid.uuid4())
        used.add(u)
        return u

    def tool_id(call_id: Any) -> str:
        key = str(call_id)
        if key not in tool_ids:
            tool_ids[key] = key if _TOOL_ID.fullmatch(key) and key not in taken else f"toolu_{secrets.token_hex(12)}"
            taken.add(tool_ids[key])
        return tool_ids[key]

    def add(rtype: str, step: Step, message: dict[str, Any], **extra: Any) -> str:
        u = new_uuid(step.origin_id)
        rec = {"parentUuid": out[-1]["uuid"] if out else None, **base, "type": rtype, "message": message, **extra,
               "uuid": u, "timestamp": clock(step.ts)}
        out.append(rec)
        return u

    for step in steps:
        item = step.item
        if step.kind == "user":
            synthetic = item.get("synthetic")
            meta = {"isMeta": True} if synthetic and synthetic not in _PLAIN_SYNTHETIC else {}
            add("user", step, {"role": "user", "content": _user_content(item)}, **meta)
        elif step.kind == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": item["text"]}] if has_text(item.get("text")) else []
            blocks += [{"type": "tool_use", "id": tool_id(c.get("call_id")), "name": str(c.get("name") or "tool"),
                        "input": anthropic_input(c.get("args"))} for c in step.calls]
            message = {"id": f"msg_{secrets.token_hex(12)}", "type": "message", "role": "assistant", "model": view.model or "unknown",
                       "content": blocks, "stop_reason": "tool_use" if step.calls else "end_turn", "stop_sequence": None,
                       "usage": {"input_tokens": 0, "output_tokens": 0, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
            last_assistant = add("assistant", step, message)
        elif step.kind == "results":
            blocks = [_result_block(it, tool_id(it.get("call_id"))) for it in step.items]
            extra: dict[str, Any] = {}
            if last_assistant is not None:
                extra["sourceToolAssistantUUID"] = last_assistant
            add("user", step, {"role": "user", "content": blocks}, **extra)
    return out


# -- the loader's rules ----------------------------------------------------------------------


def _blocks(content: Any) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def check_records(recs: list[dict[str, Any]], session_id: str) -> list[str]:
    """What in RECS Claude Code's loader or the Messages API would not take (empty: all is well).

    One chain: the first record the only root, every other's parent the record before it;
    uuids unique; every field a resume reads present; times rising; `message.role` the
    record's type; no empty or whitespace-only text; every `tool_use` answered in the very
    next user record, every `tool_result` answering a call of the assistant just before."""
    problems: list[str] = []
    seen: set[str] = set()
    last_t: datetime | None = None
    pending: set[Any] = set()  # (ids as the records hold them, whatever JSON they are)  # calls of the previous assistant record, not yet answered
    for n, rec in enumerate(recs, 1):
        where = f"record {n}"
        rtype = rec.get("type")
        if rtype not in ("user", "assistant"):
            problems.append(f"{where}: type {rtype!r} is not a message record")
            continue
        for key, kind in (("uuid", str), ("sessionId", str), ("timestamp", str), ("cwd", str), ("version", str), ("message", dict)):
            if not isinstance(rec.get(key), kind):
                problems.append(f"{where}: {key} missing or not a {kind.__name__}")
        if problems:
            break
        if rec["uuid"] in seen:
            problems.append(f"{where}: uuid {rec['uuid']} repeated")
        seen.add(rec["uuid"])
        parent = rec.get("parentUuid", "missing")
        want = recs[n - 2]["uuid"] if n > 1 else None
        if parent != want:
            problems.append(f"{where}: parentUuid {parent!r} where {want!r} (the record before) keeps the chain whole")
        if rec["sessionId"] != session_id:
            problems.append(f"{where}: sessionId {rec['sessionId']} is not the file's {session_id}")
        if rec.get("isSidechain") is not False:
            problems.append(f"{where}: isSidechain must be false on the main chain")
        t = parse_ts(rec["timestamp"])
        if t is None or (last_t is not None and t <= last_t):
            problems.append(f"{where}: timestamp {rec['timestamp']!r} does not rise")
        last_t = t or last_t
        msg = rec["message"]
        if msg.get("role") != rtype:
            problems.append(f"{where}: message.role {msg.get('role')!r} in a {rtype} record")
        blocks = _blocks(msg.get("content"))
        if not blocks:
            problems.append(f"{where}: no content")
        answered: set[Any] = set()
        calls: set[Any] = set()
        for b in blocks:
            btype = b.get("type")
            if btype not in _BLOCKS[rtype]:
                problems.append(f"{where}: a {btype!r} block in a {rtype} message")
            elif btype == "text" and not has_text(b.get("text")):
                problems.append(f"{where}: an empty or whitespace-only text block")
            elif btype == "tool_use":
                if not (isinstance(b.get("id"), str) and _TOOL_ID.fullmatch(b["id"])) or not isinstance(b.get("input"), dict):
                    problems.append(f"{where}: a tool_use without a valid id or input")
                calls.add(b.get("id"))
            elif btype == "tool_result":
                tid = b.get("tool_use_id")
                if tid not in pending:
                    problems.append(f"{where}: tool_result {tid} answers no call of the assistant record before it")
                answered.add(tid)
        if rtype == "user":
            missing = pending - answered
            if missing:
                problems.append(f"{where}: tool_use {sorted(missing)[0]} has no tool_result in the next user record")
            pending = set()
        else:
            if pending:
                problems.append(f"{where}: tool_use {sorted(pending)[0]} has no tool_result in the next user record")
            pending = calls
        if len(problems) > 20:
            break
    if pending:
        problems.append(f"record {len(recs)}: tool_use {sorted(pending)[0]} is never answered")
    return problems
