"""opencode sessions → catty-ctx events, from the JSON storage tree or `opencode.db`.

opencode keeps a session, its messages and each message's parts as separate objects:
`storage/{session,message,part}/…/*.json` files in older versions, rows of the SQLite
tables `session`, `message` and `part` (a JSON `data` column) in newer ones, read here with
the standard library, read-only. A tool part is one call and its result (a part still
pending or running is a call without a result: a dangling call that repair answers); a
`step-finish` part is one request's usage; an assistant message with `summary: true` is a
compaction summary.
"""
from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError
from ..formats.calls import opencode_message, opencode_step
from ..formats.database import UNREADABLE, open_read_only
from ..formats.opencode import fresh_input
from .common import SHAPE_ERRORS, EventBuilder, Warn, not_recognised, one_session, shape_error, split_data_url
from .detect import is_opencode_export
from .reading import load_json

WHAT = "an opencode session"
_PENDING = ("pending", "running")


# -- loading: (session, [(message, [parts])]) ----------------------------------------------------

Loaded = tuple[dict[str, Any], list[tuple[dict[str, Any], list[dict[str, Any]]]]]


def _created(obj: dict[str, Any]) -> Any:
    t = obj.get("time")
    return t.get("created") if isinstance(t, dict) else None


def _sort_key(obj: dict[str, Any]) -> tuple[Any, str]:
    created = _created(obj)
    return (created if isinstance(created, (int, float)) else 0, str(obj.get("id")))


def _storage_root(source: Path) -> Path | None:
    """The `storage` folder for SOURCE (the folder itself, a parent, or a session file's)."""
    for p in (source, *source.parents):
        if (p / "session").is_dir() and (p / "message").is_dir():
            return p
        if (p / "storage" / "session").is_dir():
            return p / "storage"
    return None


def _load_obj(path: Path, lenient: bool, warn: Warn | None, report: Any) -> Any:
    """One storage file; a broken one stops the import, or with --lenient is skipped."""
    try:
        return load_json(path)
    except DataError as exc:
        if not lenient:
            raise
        report.invalid.append(str(path))
        if warn:
            warn(f"{exc} (skipped)")
        return None


def _load_tree(source: Path, session_id: str | None, lenient: bool, warn: Warn | None, report: Any) -> Loaded:
    root = _storage_root(source)
    if root is None:
        raise not_recognised(str(source), WHAT)
    if source.is_file():
        session_file = source
    else:
        session_file = one_session(sorted((root / "session").rglob("*.json")), source, WHAT, session_id=session_id,
                                   named=lambda p: p.stem == session_id, missing=f"no opencode session {session_id} in this storage")
    session = load_json(session_file)
    if not isinstance(session, dict) or not isinstance(session.get("id"), str):
        raise not_recognised(str(session_file), WHAT)
    messages = []
    for mp in sorted((root / "message" / path_id(session["id"], session_file)).glob("*.json")):
        msg = _load_obj(mp, lenient, warn, report)
        if not isinstance(msg, dict):
            if msg is not None and not lenient:
                raise DataError("not a JSON object", path=str(mp))
            continue
        mid = msg.get("id")
        if not isinstance(mid, str) or not _PATH_ID.fullmatch(mid):
            if not lenient:
                raise DataError("message id is not a plain name (letters, digits, '_', '-', '.'); it is never made a path", path=str(mp))
            report.invalid.append(str(mp))
            continue
        parts = [_load_obj(pp, lenient, warn, report) for pp in sorted((root / "part" / mid).glob("*.json"))]
        messages.append((msg, sorted((p for p in parts if isinstance(p, dict)), key=_sort_key_part)))
    messages.sort(key=lambda mp: _sort_key(mp[0]))
    return session, messages


_PATH_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,199}")  # opencode's ids (ses_…, msg_…): never '/', never '..' alone


def path_id(value: str, where: Path) -> str:
    """An id from the data that names a folder of the storage, checked to be one plain name
    (no '/', no '..', not absolute): ids from data are never path components otherwise."""
    if not _PATH_ID.fullmatch(value) or value in (".", ".."):
        raise DataError("session id is not a plain name (letters, digits, '_', '-', '.'); it is never made a path", path=str(where))
    return value


def _load_export(path: Path) -> Loaded | None:
    """`opencode export ID`'s document ({info, messages: [{info, parts}]}), or None when PATH
    is no such document."""
    if path.suffix != ".json":
        return None
    doc = load_json(path)
    if not is_opencode_export(doc):
        return None
    messages = [(m["info"], sorted((p for p in m["parts"] if isinstance(p, dict)), key=_sort_key_part))
                for m in doc["messages"] if isinstance(m, dict) and isinstance(m.get("info"), dict) and isinstance(m.get("parts"), list)]
    messages.sort(key=lambda mp: _sort_key(mp[0]))
    return doc["info"], messages


def _sort_key_part(part: dict[str, Any]) -> str:
    return str(part.get("id"))  # part ids sort in creation order


def _rows(con: sqlite3.Connection, sql: str, args: Iterable[Any] = ()) -> list[dict[str, Any]]:
    cur = con.execute(sql, tuple(args))
    names = [d[0] for d in cur.description]
    return [dict(zip(names, row)) for row in cur.fetchall()]


def _with_data(row: dict[str, Any], path: str) -> dict[str, Any]:
    """A row's JSON `data` merged over its columns (ids stay those of the columns)."""
    obj: dict[str, Any] = {}
    data = row.get("data")
    if isinstance(data, (str, bytes)):
        try:
            parsed = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise DataError(f"row {row.get('id')}: data is not JSON", path=path) from None
        if isinstance(parsed, dict):
            obj.update(parsed)
    for key, value in row.items():
        if key != "data" and value is not None:
            obj.setdefault(key, value)
    obj["id"] = row.get("id")
    if "time" not in obj and isinstance(row.get("time_created"), (int, float)):
        obj["time"] = {"created": row["time_created"]}
    return obj


def _load_db(path: Path, session_id: str | None) -> Loaded:
    try:
        con = open_read_only(path)
    except UNREADABLE as exc:
        raise DataError(f"cannot open database ({exc})", path=str(path)) from None
    try:
        try:
            sessions = _rows(con, "SELECT * FROM session ORDER BY id")
        except sqlite3.DatabaseError:
            raise not_recognised(str(path), WHAT) from None
        found = one_session(sessions, path, WHAT, session_id=session_id, named=lambda s: s.get("id") == session_id,
                            missing=f"no opencode session {session_id} in this database")
        session = _with_data(found, str(path))
        if "parentID" not in session and session.get("parent_id"):
            session["parentID"] = session["parent_id"]
        msgs = [_with_data(r, str(path)) for r in _rows(con, "SELECT * FROM message WHERE session_id = ? ORDER BY id", [session["id"]])]
        parts_by_msg: dict[str, list[dict[str, Any]]] = {}
        for r in _rows(con, "SELECT * FROM part WHERE session_id = ? ORDER BY id", [session["id"]]):
            parts_by_msg.setdefault(str(r.get("message_id")), []).append(_with_data(r, str(path)))
    except UNREADABLE as exc:
        raise DataError(f"cannot read database ({exc})", path=str(path)) from None
    finally:
        con.close()
    msgs.sort(key=_sort_key)
    return session, [(m, parts_by_msg.get(str(m["id"]), [])) for m in msgs]


def _is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(16) == b"SQLite format 3\x00"
    except OSError:
        return False


# -- conversion --------------------------------------------------------------------------------


def _usage(b: EventBuilder, record: dict[str, Any], model: Any, ts: Any, message_id: str) -> None:
    """The usage event of RECORD's `tokens` (a step-finish part, or a message without steps, of
    message MESSAGE_ID), named as `usage` names the record's call (`formats.calls`)."""
    tokens, cost = record.get("tokens"), record.get("cost")
    if not isinstance(tokens, dict):
        return

    def n(d: Any, key: str) -> int:
        v = d.get(key) if isinstance(d, dict) else None
        return int(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 else 0

    cache = tokens.get("cache")
    # opencode's output excludes the reasoning tokens, which are billed as output: output is
    # output + reasoning, as the usage ledger counts it (docs/usage.md).
    # An early record's input holds its cache reads (`formats.opencode`): the input beside them, as `usage` reads it.
    fields: dict[str, Any] = {"input": fresh_input(record, n(tokens, "input"), n(cache, "read")),
                              "output": n(tokens, "output") + n(tokens, "reasoning"), "reasoning": n(tokens, "reasoning"),
                              "cache_read": n(cache, "read"), "cache_write": n(cache, "write")}
    if not any(fields.values()):
        return
    rid = record.get("id")
    name = (opencode_step(message_id, rid) if record.get("type") == "step-finish" else opencode_message(message_id)) if isinstance(rid, str) else None
    b.usage(model if isinstance(model, str) else None, **fields, ts=ts, request_id=name,
            cost_usd=cost if isinstance(cost, (int, float)) and not isinstance(cost, bool) else None)


def _convert_message(b: EventBuilder, msg: dict[str, Any], parts: list[dict[str, Any]], pending_compaction: dict[str, Any] | None) -> None:
    role = msg.get("role")
    mid = str(msg.get("id"))
    ts = _created(msg)
    texts = [p.get("text") or "" for p in parts if p.get("type") == "text" and not p.get("synthetic") and not p.get("ignored")]
    synthetic_texts = [p.get("text") or "" for p in parts if p.get("type") == "text" and p.get("synthetic")]
    images = []
    for p in parts:
        if p.get("type") == "file" and isinstance(p.get("url"), str) and str(p.get("mime", "")).startswith("image/"):
            split = split_data_url(p["url"])
            img = b.image(*split) if split else None
            if img:
                images.append(img)
    if role == "user":
        if texts or images:
            b.message("user", "\n".join(texts), id=mid, ts=ts, images=images or None)
        if synthetic_texts:
            b.message("user", "\n".join(synthetic_texts), id=f"{mid}:synthetic", ts=ts, synthetic="opencode")
        for p in parts:
            if p.get("type") not in ("text", "file", "compaction"):
                b.skip(f"part:{p.get('type')}")
        return
    if role != "assistant":
        b.skip(f"message:{role}")
        return
    model = msg.get("modelID")
    if msg.get("summary") is True:
        b.compaction("\n".join(texts), id=mid, ts=ts, summarizer="opencode",
                     trigger=("auto" if pending_compaction.get("auto") else "manual") if pending_compaction else None)
        _usage(b, msg, model, ts, mid)
        return
    # One assistant message can span several requests (steps): text and tools in part
    # order, a usage per step-finish (before that step's results, which the next request
    # holds on top of it); without step-finish parts, the message's own tokens.
    opened = False
    steps = 0
    results: list[tuple[str, str, bool, Any]] = []

    def flush_results() -> None:
        for call_id, output, is_error, rts in results:
            b.tool_result(call_id, output, is_error=is_error, ts=rts)
        results.clear()

    for p in parts:
        ptype = p.get("type")
        pts = p.get("time", {}).get("start") if isinstance(p.get("time"), dict) else None
        if ptype == "text" and not p.get("synthetic"):
            flush_results()
            b.message("assistant", p.get("text") or "", id=str(p.get("id")), ts=pts or ts)
            opened = True
        elif ptype == "reasoning":
            b.reasoning(p.get("text") or "", ts=pts or ts)
        elif ptype == "tool":
            if not opened:
                b.message("assistant", "", id=mid, ts=ts)
                opened = True
            state = p["state"] if isinstance(p.get("state"), dict) else {}
            st = state["time"] if isinstance(state.get("time"), dict) else {}
            call_id = str(p.get("callID") or p.get("id"))
            b.tool_call(call_id, str(p.get("tool") or ""), state.get("input") or {}, ts=st.get("start") or ts)
            status = state.get("status")
            if status in _PENDING:
                continue  # interrupted mid-call: left dangling for repair to answer
            if status == "error":
                results.append((call_id, str(state.get("error") or ""), True, st.get("end") or ts))
            else:
                out = state.get("output")
                results.append((call_id, out if isinstance(out, str) else orjson.dumps(out).decode(), False, st.get("end") or ts))
        elif ptype == "step-finish":
            steps += 1
            _usage(b, p, model, ts, mid)
            flush_results()
        elif ptype in ("step-start", "text"):
            pass
        else:
            b.skip(f"part:{ptype}")
    if not opened:
        b.message("assistant", "", id=mid, ts=ts)
    if not steps:
        _usage(b, msg, model, ts, mid)
    flush_results()


def convert(source: Path, start: Any, *, lenient: bool = False, warn: Warn | None = None, session_id: str | None = None) -> EventBuilder:
    loaded = None
    if source.is_file():
        loaded = _load_db(source, session_id) if _is_sqlite(source) else _load_export(source)
    session, messages = loaded or _load_tree(source, session_id, lenient, warn, start.report)
    if not messages:
        raise not_recognised(str(source), WHAT)
    path = session["path"] if isinstance(session.get("path"), dict) else {}
    cwd = session.get("directory") or path.get("cwd")
    model = next((m.get("modelID") for m, _ in messages if isinstance(m.get("modelID"), str)), None)
    parent = session.get("parentID")
    b: EventBuilder = start(
        session_id=str(session["id"]),
        ts=_created(session) or _created(messages[0][0]),
        cwd=cwd if isinstance(cwd, str) else None,
        model=model,
        parent_session_id=parent if isinstance(parent, str) else None,
        source_path=source,
    )
    pending_compaction: dict[str, Any] | None = None
    for msg, parts in messages:
        try:
            _convert_message(b, msg, parts, pending_compaction)
        except SHAPE_ERRORS as exc:
            shape_error(exc, path=f"{source} (message {msg.get('id')})", line=None, report=start.report, lenient=lenient, warn=warn)
        compaction = next((p for p in parts if p.get("type") == "compaction"), None)
        pending_compaction = compaction if msg.get("role") == "user" and compaction else (None if msg.get("summary") is True else pending_compaction)
    return b
