"""Usage records of opencode: its storage tree's message and part files, `opencode.db`, an `opencode export` document.

opencode keeps each message (`storage/message/<session>/msg_….json`, or a row of the
`message` table) apart from its parts (`storage/part/<message>/prt_….json`, or `part` rows).
One assistant message can span several requests: each `step-finish` part holds one request's
`tokens` and `cost`, and the message's own `tokens` are only the last step's. So a call is a
step-finish part, and a message counts as one call only when none of its parts is known
(`copies.dedupe` drops it then, and gives each step its message's model, time and folder). The
same ids are the keys in the tree, the database and an export, so a session present in more
than one (a tree migrated into the database) counts once.

`tokens` is `{input, output, reasoning, cache: {read, write}}`: `input` excludes the cached
tokens (an early record's holds the cache reads: `formats.opencode` takes them out) and `output` the reasoning ones, which are billed as output, so `output` here is
output + reasoning. A cost opencode recorded (above zero) is kept; a zero cost (a model it had
no price for, or a subscription) is priced like any other call.
"""
from __future__ import annotations

import os
from stat import S_ISREG
from typing import Any

import msgspec

from ..formats.calls import opencode_message, opencode_step
from ..formats.opencode import fresh_input
from .lines import UNDECODABLE, count
from .records import MAIN_AGENT, UNKNOWN_MODEL, FileEntry, Record
from .walk import OPENCODE, survey_row

TYPE_CHECKING = False
if TYPE_CHECKING:
    from .records import Scanned

DB_NAME = "opencode.db"
_decode = msgspec.json.decode


def _ms(v: Any) -> float | None:
    return v / 1000.0 if type(v) in (int, float) and v > 0 else None


def _tokens(t: Any, record: dict[str, Any]) -> tuple[int, int, int, int, int] | None:
    """(input, output + reasoning, cache read, cache write, reasoning) of RECORD's tokens object T
    (its input beside the cache: `formats.opencode`)."""
    if type(t) is not dict:
        return None
    cache = t.get("cache")
    cache = cache if type(cache) is dict else {}
    reasoning = count(t.get("reasoning"))
    read = count(cache.get("read"))
    return fresh_input(record, count(t.get("input")), read), count(t.get("output")) + reasoning, read, count(cache.get("write")), reasoning


def _cost(v: Any) -> float | None:
    return float(v) if type(v) in (int, float) and v > 0 else None


def message_record(m: dict[str, Any], session: Any = None) -> Record | None:
    """The record of an assistant message's own tokens (None: not an assistant message with tokens)."""
    if m.get("role") != "assistant":
        return None
    got = _tokens(m.get("tokens"), m)
    mid = m.get("id")
    if got is None or not any(got) or type(mid) is not str:
        return None
    t = m.get("time")
    ts = _ms(t.get("created")) if type(t) is dict else None
    where = m.get("path")
    cwd = where.get("cwd") if type(where) is dict else None
    model = m.get("modelID")
    sid = m.get("sessionID") or session
    return Record(ts or 0.0, model if type(model) is str and model else UNKNOWN_MODEL, got[0], got[1], got[2], got[3], got[4],
                  _cost(m.get("cost")), "r\0" + opencode_message(mid), False, MAIN_AGENT, str(sid or ""), cwd if type(cwd) is str else "",
                  False, mid, None)


def step_record(p: dict[str, Any], message: Any = None, session: Any = None, ts: float | None = None) -> Record | None:
    """The record of a step-finish part; its model, folder (and time, unless TS) come from its message in `copies.dedupe`."""
    if p.get("type") != "step-finish":
        return None
    got = _tokens(p.get("tokens"), p)
    pid = p.get("id")
    mid = p.get("messageID") or message
    if got is None or type(pid) is not str or type(mid) is not str:
        return None
    sid = p.get("sessionID") or session
    return Record(ts or 0.0, UNKNOWN_MODEL, got[0], got[1], got[2], got[3], got[4], _cost(p.get("cost")), "r\0" + opencode_step(mid, pid), False,
                  MAIN_AGENT, str(sid or ""), "", False, mid, None)


def _holds_no_call(name: str, data: Any) -> bool:
    """Whether the storage file NAME, holding DATA, cannot hold a call: most parts are text and
    tool calls, half the messages are the user's, and those need no decoding. A step-finish part
    names its type, a message with tokens has the key, as JSON writes them (neither needs escaping)."""
    return (name.startswith("prt_") and data.find(b'"step-finish"') < 0) or (name.startswith("msg_") and data.find(b'"tokens"') < 0)


def scan_storage_file(path: str, key: tuple[int, int, int] | None, samples: int) -> Scanned:
    """`filescan.scan_file` for one of opencode's storage files: a small JSON document read whole
    into memory, never resumed (no offsets or hashes to keep). Thousands of them make a tree, so
    each costs one open, read and close: KEY is its (size, mtime, inode) as the survey just took
    it (a file changed since is read as it is now, under the older key, so the next run reads it
    again), None to take it here. SAMPLES: how many bad lines to name."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        return path, None, 0, f"cannot read ({exc.strerror or exc})"
    if key is None:
        try:
            st = os.fstat(fd)
        except OSError as exc:
            os.close(fd)
            return path, None, 0, f"cannot read ({exc.strerror or exc})"
        key = st.st_size, st.st_mtime_ns, st.st_ino
    return _read_storage(fd, path, key, samples)


def survey_storage_file(path: str, samples: int, since_ns: int | None = None) -> tuple[tuple[int, int, int], Scanned | None] | None:
    """`walk.survey_row` and `scan_storage_file` of a storage file in one open: (its key, taken from
    the open file, and what the scan reads of it: None for a file last written before SINCE_NS, which
    the scan passes over); None where the survey passes a file over (gone since the walk, or not a
    regular file: opened without blocking, so a FIFO is told, not waited on). With SINCE_NS, a file is
    stat'ed first and opened only when written since (most are not: one call each instead of three)."""
    if since_ns is not None:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            return None
        except OSError:
            st = None  # (named below, as the survey and the scan name it)
        if st is not None:
            if not S_ISREG(st.st_mode):
                return None
            if st.st_mtime_ns < since_ns:
                return (st.st_size, st.st_mtime_ns, st.st_ino), None
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError:  # (one that cannot be opened is named as the survey and the scan name it)
        row = survey_row(path, OPENCODE)
        if row is None:
            return None
        return row[2:], scan_storage_file(path, row[2:], samples) if since_ns is None or row[3] >= since_ns else None
    try:
        st = os.fstat(fd)
    except OSError:
        os.close(fd)
        return None
    if not S_ISREG(st.st_mode):
        os.close(fd)
        return None
    key = st.st_size, st.st_mtime_ns, st.st_ino
    if since_ns is not None and st.st_mtime_ns < since_ns:
        os.close(fd)
        return key, None
    return key, _read_storage(fd, path, key, samples)


def _read_storage(fd: int, path: str, key: tuple[int, int, int], samples: int) -> Scanned:
    """The scan of the storage file PATH open as FD (closed here), whose key is KEY."""
    try:
        want = key[0] + 1  # (one read reaches the end of a file as large as the survey saw it)
        data = os.read(fd, want)
        if len(data) == want:  # (grown since: the rest too)
            chunks = [data]
            while chunk := os.read(fd, 1 << 16):
                chunks.append(chunk)
            data = b"".join(chunks)
    except OSError as exc:
        return path, None, 0, f"cannot read ({exc.strerror or exc})"
    finally:
        os.close(fd)
    entry = FileEntry(key[0], key[1], key[2], OPENCODE, off=len(data))
    if _holds_no_call(path[path.rfind(os.sep) + 1 :], data):
        return path, entry, len(data), None
    bad: list[tuple[int, str]] = []
    recs: list[Record] = []
    parse(data, 0, len(data), path, None, recs, bad)
    if recs and recs[0].ts == 0.0:  # (a step: the time of its file until its message gives its own, see copies.dedupe)
        mtime = key[1]
        when = mtime // 1_000_000_000 + (mtime % 1_000_000_000) * 1e-9  # (as os.stat_result.st_mtime reckons it)
        recs = [msgspec.structs.replace(r, ts=when) for r in recs]
    entry.recs, entry.read, entry.bad = recs, len(recs), len(bad)
    entry.samples = [(1, why) for _off, why in bad[:samples]]
    return path, entry, len(data), None


def parse(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]], typed: bool = True) -> Any:
    """Append the records of one storage file or export document (read whole) to RECS."""
    if path.endswith(DB_NAME) or mm[0:16] == _SQLITE_HEADER:  # (a database under another name: its content tells)
        recs.extend(db_records(path, bad))
        return state
    if _holds_no_call(os.path.basename(path), mm):
        return state
    try:
        doc = _decode(mm[0:len(mm)])
    except UNDECODABLE:
        bad.append((0, "not valid JSON"))
        return state
    if type(doc) is not dict:
        bad.append((0, "not a JSON object"))
        return state
    if type(doc.get("messages")) is list and type(doc.get("info")) is dict:  # `opencode export`
        session = doc["info"].get("id")
        for item in doc["messages"]:
            if type(item) is not dict or type(item.get("info")) is not dict:
                continue
            m = item["info"]
            rec = message_record(m, session)
            if rec is not None:
                recs.append(rec)
            for p in item.get("parts") or ():
                step = step_record(p, m.get("id"), session) if type(p) is dict else None
                if step is not None:
                    recs.append(step)
        return state
    rec = step_record(doc) if "messageID" in doc else message_record(doc)
    if rec is not None:
        recs.append(rec)  # (a step's time is its message's; the scan gives it its file's meanwhile)
    return state


_SQLITE_HEADER = b"SQLite format 3\x00"


def db_records(path: str, bad: list[tuple[int, str]] | None = None) -> list[Record]:
    """The calls of an `opencode.db`, opened read-only (its write-ahead log included); a database
    that cannot be read is one entry of BAD."""
    from ..formats.database import UNREADABLE, open_read_only  # (sqlite3 only for a database: a scan of logs loads none)

    out: list[Record] = []
    try:
        con = open_read_only(path)
    except UNREADABLE as exc:
        if bad is not None:
            bad.append((0, f"cannot read the database ({exc})"))
        return out
    try:
        for mid, sid, created, data in con.execute("SELECT id, session_id, time_created, data FROM message WHERE data LIKE '%\"tokens\"%'"):
            m = _row(data)
            if m is None:
                continue
            m["id"] = mid
            m.setdefault("sessionID", sid)
            if type(m.get("time")) is not dict:
                m["time"] = {"created": created}
            rec = message_record(m)
            if rec is not None:
                out.append(rec)
        for pid, mid, sid, created, data in con.execute(
                "SELECT id, message_id, session_id, time_created, data FROM part WHERE data LIKE '%\"step-finish\"%'"):
            p = _row(data)
            if p is None:
                continue
            p["id"] = pid
            rec = step_record(p, mid, sid, _ms(created))
            if rec is not None:
                out.append(rec)
    except UNREADABLE as exc:
        if bad is not None:
            bad.append((0, "cannot read the database" + (" (not UTF-8)" if isinstance(exc, UnicodeDecodeError) else f" ({exc})")))
    finally:
        con.close()
    return out


def _row(data: Any) -> dict[str, Any] | None:
    try:
        obj = _decode(data)
    except (*UNDECODABLE, TypeError):
        return None
    return obj if type(obj) is dict else None
