"""`import auto`: name a source's format from its content (never from its name alone).

Looks at a few records: the line shapes of Claude Code, Codex and Gemini JSONL, the
SQLite header of opencode.db, the storage folders of opencode, and, for a JSON document,
the marks of each messages dialect.
"""
from __future__ import annotations

from itertools import chain, islice
from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError
from ..formats import registry
from ..formats.grok import LOG as GROK_LOG
from ..formats.grok import is_session_dir as is_grok_dir
from ..formats.grok import is_update
from ..session.jsonl import numbered_lines
from .reading import open_source

_CODEX_TYPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
_CLAUDE_TYPES = ("user", "assistant", "system", "summary", "file-history-snapshot")
_PROBE_LINES = 20


def _first_records(path: Path) -> list[Any]:
    records = []
    try:
        with open_source(path, str(path)) as f:
            for _, line in islice(numbered_lines(f, str(path), final="kept"), _PROBE_LINES):
                try:
                    records.append(orjson.loads(line))
                except orjson.JSONDecodeError:
                    continue
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None
    return [r for r in records if isinstance(r, dict)]


def _is_codex_header(r: dict[str, Any]) -> bool:
    """The older Codex files' first line: a bare {id, timestamp, instructions?, git?}, no type."""
    return "type" not in r and isinstance(r.get("id"), str) and isinstance(r.get("timestamp"), str) and "role" not in r


def _jsonl_format(records: list[dict[str, Any]]) -> str | None:
    if records and _is_codex_header(records[0]):
        return "codex"
    for r in records:
        if is_update(r):
            return "grok"
        t = r.get("type")
        if (t in _CODEX_TYPES and "payload" in r) or (r.get("record_type") == "state" and t is None):
            return "codex"
        if "parentUuid" in r or ("sessionId" in r and t in _CLAUDE_TYPES and "uuid" in r) or (t == "summary" and "leafUuid" in r):
            return "claude"
        if "$rewindTo" in r or "$set" in r or t == "gemini" or ("projectHash" in r and "sessionId" in r):
            return "gemini"
    for r in records:
        if r.get("role") in ("user", "assistant", "system", "tool"):
            return _messages_format([r])
    return None


def _messages_format(msgs: list[Any], top: dict[str, Any] | None = None) -> str:
    """Anthropic when its marks show (top-level system, tool_use/tool_result blocks), else OpenAI."""
    if top and "system" in top:
        return "anthropic"
    for m in msgs:
        if not isinstance(m, dict):
            continue
        if m.get("role") in ("tool", "system", "developer", "function") or "tool_calls" in m:
            return "openai"
        content = m.get("content")
        if isinstance(content, list):
            for part in content:
                if isinstance(part, dict):
                    if part.get("type") in ("tool_use", "tool_result", "thinking") or "source" in part:
                        return "anthropic"
                    if part.get("type") == "image_url":
                        return "openai"
    return "openai"


def is_opencode_export(doc: Any) -> bool:
    """`opencode export`'s document: {info: the session, messages: [{info, parts}]}."""
    if not isinstance(doc, dict) or not isinstance(doc.get("info"), dict) or not isinstance(doc.get("messages"), list):
        return False
    first = doc["messages"][0] if doc["messages"] else {"info": {}, "parts": []}
    return isinstance(doc["info"].get("id"), str) and isinstance(first, dict) and isinstance(first.get("info"), dict) \
        and isinstance(first.get("parts"), list)


def is_gemini_prompt_log(doc: Any) -> bool:
    """Gemini CLI's `logs.json` beside its chats: the prompts typed ({sessionId, messageId, type,
    message, timestamp} each), no conversation."""
    return isinstance(doc, list) and bool(doc) and all(
        isinstance(e, dict) and "sessionId" in e and "messageId" in e and "message" in e and "role" not in e for e in doc)


def document_format(doc: Any) -> str | None:
    """The format of a whole JSON document (a messages array, a Gemini or opencode file), or None."""
    if is_gemini_prompt_log(doc):
        return "gemini"  # (its importer names it: a file of no conversation)
    if isinstance(doc, list):
        return _messages_format(doc)
    if isinstance(doc, dict):
        if isinstance(doc.get("session"), dict) and isinstance(doc.get("items"), list):
            return "codex"  # the first Codex CLI's {session, items} document
        if "projectHash" in doc and isinstance(doc.get("messages"), list):
            return "gemini"
        if "projectID" in doc and str(doc.get("id", "")).startswith("ses"):
            return "opencode"
        if is_opencode_export(doc):
            return "opencode"
        for key in ("messages", "conversation", "history"):
            if isinstance(doc.get(key), list):
                return _messages_format(doc[key], doc)
    return None


def record_format(record: dict[str, Any]) -> str | None:
    """The format one JSONL record belongs to, or None when it shows no format's marks."""
    return _jsonl_format([record])


def detect(source: Path) -> str:
    """The format name of SOURCE, or a DataError saying it is none of them."""
    if source.is_dir():
        if is_grok_dir(source) or any(is_grok_dir(p.parent) for p in (source / "sessions").glob(f"*/*/{GROK_LOG}")):
            return "grok"  # a session folder, or a home (its sessions/<bucket>/<id>/)
        for p in (source, *source.parents):
            if ((p / "session").is_dir() and (p / "message").is_dir()) or (p / "storage" / "session").is_dir():
                return "opencode"
        if (source / "opencode.db").is_file():
            raise DataError(f"{source}: pass the database itself ({source / 'opencode.db'})")
        for candidate in sorted(chain(source.rglob("*.jsonl"), source.rglob("*.jsonl.zst")))[:50]:
            fmt = _jsonl_format(_first_records(candidate))
            if fmt in registry.with_form("jsonl") and fmt in registry.AGENT_NAMES:
                return fmt
        raise DataError("no session of a known format found in this folder", path=str(source))
    with open(source, "rb") as f:
        head = f.read(16)
    if head == b"SQLite format 3\x00":
        return "opencode"
    stripped = head.lstrip()
    if stripped[:1] == b"[" or (stripped[:1] == b"{" and source.suffix == ".json"):
        try:
            doc = orjson.loads(source.read_bytes())
        except orjson.JSONDecodeError:
            doc = None
        fmt = document_format(doc)
        if fmt is not None:
            return fmt
    fmt = _jsonl_format(_first_records(source))
    if fmt is None:
        raise DataError(f"not a session of any known format ({registry.names_text()})", path=str(source))
    return fmt
