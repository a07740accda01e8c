"""The usage ledger: where the tokens and the money went (grok-build §3.9, and its weakness 9).

Reads three kinds of logs as they lie on disk and turns each provider call into one record:
catty sessions (`usage` events, with `agent` and `incomplete`), Claude Code trees
(projects/<project>/<session>.jsonl and their subagent files) and Codex trees
(sessions/YYYY/MM/DD/rollout-*.jsonl). Then it dedupes the records across files, prices them
from a dated table with LiteLLM's field names, and folds them into rows by model, day, week,
month, session, project or agent.

Speed comes from four things: a byte prefilter (only lines holding a usage marker are
parsed, found with one C-level search over a memory map), forked workers taking files from a
queue, an incremental per-file cache keyed by path, size, mtime and inode that, for a file
that only grew, parses the appended bytes alone, and an answer cache that serves a question
asked before about unchanged files (checked with one stat per folder and per log) without
loading the parsers at all.
"""
from __future__ import annotations

import marshal
import os
import stat
import sys

import xxhash

from .errors import DataError, UsageError
from .layout import LOG_NAME, is_staging

# Only what a cached answer needs is imported here: orjson, mmap, re and datetime load where a
# file is parsed or a ledger built, so `usage` asked again about unchanged files starts fast.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import tzinfo
    from typing import IO, Any, Callable, Iterable, Sequence

BY_CHOICES = ("model", "day", "week", "month", "session", "project", "agent")
MAIN_AGENT = "main"
UNKNOWN_MODEL = "unknown"
TIER_TOKENS = 200_000  # the long-context tier of the `*_above_200k_tokens` prices
TIER_SUFFIX = "_above_200k_tokens"
CACHE_VERSION = 2  # bump when a record's shape or a parser's meaning changes
BAD_SAMPLES_PER_FILE = 5
PARALLEL_MIN_BYTES = 8 << 20  # below this a worker pool costs more than it saves
_CHECK_BYTES = 4096  # bytes hashed at the start and at the end of what was parsed

# One call is a tuple (cheap to cache with marshal and to ship between processes).
TS, MODEL, INPUT, OUTPUT, CACHE_READ, CACHE_WRITE, REASONING, COST, KEY, SIDECHAIN, AGENT, SESSION, PROJECT, INCOMPLETE, MSG_ID, UUID = range(16)
# (ts epoch s, model, input, output, cache_read, cache_write, reasoning, cost|None, dedupe key|None, sidechain, agent, session,
#  project, incomplete, message id|None, record uuid|None)
Record = tuple

CATTY, CLAUDE, CODEX = "catty", "claude", "codex"
_USAGE_MARK = b'"usage"'  # catty: every usage event has it
# Claude Code: every usage object has output_tokens; a longer needle also searches faster.
_CLAUDE_MARK = b'"output_tokens"'
_CODEX_MARK = rb'"(?:token_count|turn_context|session_meta)"'
_NL = b"\n"


# -- timestamps ---------------------------------------------------------------------------------


_DAYS: dict[str, float] = {}
_MINUTES: dict[str, float | str] = {}  # "YYYY-MM-DDTHH:MM:" → its epoch, or "bad", or "iso" (not this form)


def _epoch(value: Any) -> float | None:
    """RFC 3339 / ISO 8601 → seconds since the epoch; a naive time is taken as UTC.

    The common `YYYY-MM-DDTHH:MM:SS.fffZ` form is computed from a per-minute memo (one dict
    lookup and one float() per call: this runs once per usage line); anything else goes
    through datetime.
    """
    if type(value) is not str or len(value) < 10:
        return None
    if len(value) == 24 and value[23] == "Z" and value[19] == ".":
        head = value[:17]
        base = _MINUTES.get(head)
        if base is None:
            if len(_MINUTES) > 100_000:
                _MINUTES.clear()
            base = _MINUTES[head] = _minute_epoch(head)
        if type(base) is float:
            try:
                sec = float(value[17:23])
            except ValueError:
                return None
            return base + sec if 0 <= sec < 61 else None
        if base == "bad":
            return None
    return _iso_epoch(value)


def _minute_epoch(head: str) -> float | str:
    if head[10] != "T" or head[13] != ":" or head[16] != ":":
        return "iso"
    day = _DAYS.get(head[:10])
    if day is None:
        day = _iso_epoch(head[:10] + "T00:00:00Z")
        if day is None:
            return "bad"
        _DAYS[head[:10]] = day
    try:
        h, m = int(head[11:13]), int(head[14:16])
    except ValueError:
        return "bad"
    return day + h * 3600 + m * 60 if 0 <= h < 24 and 0 <= m < 60 else "bad"


def _iso_epoch(value: str) -> float | None:
    from datetime import datetime, timezone

    text = value[:-1] + "+00:00" if value[-1] in "Zz" else value
    try:
        dt = datetime.fromisoformat(text)
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return dt.timestamp()


# -- discovery ---------------------------------------------------------------------------------


def discover(path: str | os.PathLike[str], listings: Listings | None = None) -> list[tuple[str, str | None]]:
    """The log files under PATH with their kind (None: told from the first line when read).

    PATH is a catty session (directory or log), a ROOT of them, a Claude Code config dir or
    its projects tree, a Codex home or its sessions tree, or one log file of any of these.
    LISTINGS, when given, remembers each folder's listing (see `_listing`).
    """
    p = os.fspath(path)
    join = os.path.join
    if os.path.isfile(p):
        return [(p, CATTY if os.path.basename(p) == LOG_NAME else None)]
    if not os.path.isdir(p):
        raise UsageError(f"{p}: no such file or directory")
    if os.path.isfile(join(p, LOG_NAME)):
        return [(join(p, LOG_NAME), CATTY)]
    roots = [join(p, "projects")] if _is_home(p, "projects", _CLAUDE_HOME_MARKS, lambda n: n.startswith("-")) else []
    if _is_home(p, "sessions", _CODEX_HOME_MARKS, lambda n: len(n) == 4 and n.isdigit()):
        roots += [r for r in (join(p, "sessions"), join(p, "archived_sessions")) if os.path.isdir(r)]
    out: list[tuple[str, str | None]] = []
    memo = listings if listings is not None else Listings()
    for root in roots or [p]:
        stack = [root]  # depth first, folders and files in name order
        while stack:
            folder = stack.pop()
            listing = memo.get(folder)
            if listing is None:
                continue
            subdirs, logs = listing
            prefix = folder if folder.endswith(os.sep) else folder + os.sep  # (join's checks, once per folder)
            if LOG_NAME in logs:  # a catty session: its own folders hold no sessions
                out.append((prefix + LOG_NAME, CATTY))
                continue
            out.extend((prefix + name, CODEX if name.startswith("rollout-") else None) for name in logs)
            stack.extend(prefix + d for d in reversed(subdirs))
    return out


class Listings:
    """Folder listings (sub-folders to walk, *.jsonl names) remembered by the folder's mtime.

    A folder's mtime changes whenever an entry is added, removed or renamed in it, so a
    remembered listing whose folder has the same mtime is still true, and a walk over
    unchanged folders costs one stat each instead of reading them. As in git's index, a
    listing taken less than two seconds after the folder changed is not trusted (a second
    change within the clock's tick would leave the mtime as it was).
    """

    RACY_NS = 2_000_000_000

    def __init__(self, known: dict[str, tuple[int, int, list[str], list[str]]] | None = None) -> None:
        self.known = known if type(known) is dict else {}
        self.seen: dict[str, tuple[int, int, list[str], list[str]]] = {}  # what this walk used: what to keep

    def get(self, folder: str) -> tuple[list[str], list[str]] | None:
        try:
            mtime = os.stat(folder).st_mtime_ns
        except OSError:
            return None
        old = self.known.get(folder)
        if old is not None and old[0] == mtime and mtime < old[1] - self.RACY_NS:
            self.seen[folder] = old
            return old[2], old[3]
        import time

        listed_at = time.time_ns()
        subdirs: list[str] = []
        logs: list[str] = []
        try:
            with os.scandir(folder) as entries:
                for e in entries:
                    try:
                        is_dir = e.is_dir()
                        real_dir = is_dir and not e.is_symlink()  # a linked folder is not walked into
                    except OSError:
                        is_dir = real_dir = False
                    if real_dir:
                        if not is_staging(e.name):  # a killed fork's or import's leftovers
                            subdirs.append(e.name)
                    elif not is_dir and e.name.endswith(".jsonl"):
                        logs.append(e.name)
        except OSError:
            return None
        subdirs.sort()
        logs.sort()
        self.seen[folder] = (mtime, listed_at, subdirs, logs)
        return subdirs, logs


_CLAUDE_HOME_MARKS = ("settings.json", "history.jsonl", ".credentials.json", "CLAUDE.md", "todos", "statsig")
_CODEX_HOME_MARKS = ("config.toml", "auth.json", "history.jsonl", "version.json", "log")


def _is_home(p: str, sub: str, marks: tuple[str, ...], child_ok: Callable[[str], bool]) -> bool:
    """Is P an agent's home (read only its SUB folder) rather than any folder that has one?

    Yes when P holds one of the agent's own files, or every entry of SUB looks like the
    agent's (Claude Code's project folders start with '-', Codex's session folders are years).
    """
    folder = os.path.join(p, sub)
    if not os.path.isdir(folder):
        return False
    if any(os.path.exists(os.path.join(p, m)) for m in marks):
        return True
    try:
        names = os.listdir(folder)
    except OSError:
        return False
    return bool(names) and all(child_ok(n) for n in names)


def _sniff(first_line: bytes) -> str:
    if b'"seq"' not in first_line and b'"payload"' not in first_line:
        return CLAUDE  # neither of the keys that tell the others: no need to decode the line
    import orjson

    try:
        obj = orjson.loads(first_line)
    except orjson.JSONDecodeError:
        return CLAUDE
    if type(obj) is dict:
        if "kind" in obj and "v" in obj and "seq" in obj:
            return CATTY
        if "payload" in obj and obj.get("type") in ("session_meta", "response_item", "event_msg", "turn_context", "compacted"):
            return CODEX
    return CLAUDE


# -- parsing one file ----------------------------------------------------------------------------


def _lines_with(mm: Any, start: int, end: int, mark: bytes | None = None, pattern: Any = None) -> Iterable[tuple[int, bytes]]:
    """(offset, line) of each complete line in [start, end) holding the marker, found by a C search."""
    find = mm.find
    rfind = mm.rfind
    pos = start
    while pos < end:
        if pattern is not None:
            m = pattern.search(mm, pos, end)
            if m is None:
                return
            i = m.start()
        else:
            i = find(mark, pos, end)
            if i < 0:
                return
        j = rfind(_NL, start, i)
        ls = j + 1 if j >= 0 else start
        le = find(_NL, i, end)
        if le < 0:
            le = end
        pos = le + 1
        yield ls, mm[ls:le]


def _int(v: Any) -> int:
    return v if type(v) is int and v >= 0 else 0


def _claude_context(path: str) -> tuple[str, str, str]:
    """(project, session, agent) a Claude Code file implies by where it lies."""
    parts = os.path.normpath(path).split(os.sep)
    stem = os.path.splitext(parts[-1])[0]
    project = ""
    if "projects" in parts:
        i = len(parts) - 1 - parts[::-1].index("projects")
        if i + 2 < len(parts):
            project = parts[i + 1]
    session = parts[-3] if len(parts) >= 3 and parts[-2] == "subagents" else stem
    return project, session, stem


def _parse_claude(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]]) -> Any:
    import orjson

    project, default_session, stem = _claude_context(path)
    loads = orjson.loads
    decode_error = orjson.JSONDecodeError
    find, rfind = mm.find, mm.rfind
    append = recs.append
    epoch = _epoch
    intern = {}.setdefault  # one string object per model, session and agent: smaller to ship and cache
    pos = start
    while pos < end:  # the line loop of _lines_with, inlined: this is the hot path
        i = find(_CLAUDE_MARK, pos, end)
        if i < 0:
            break
        j = rfind(_NL, start, i)
        off = j + 1 if j >= 0 else start
        pos = find(_NL, i, end) + 1 or end
        try:
            o = loads(mm[off : pos - 1])
        except decode_error:
            bad.append((off, "not valid JSON"))
            continue
        if type(o) is not dict:
            bad.append((off, "not a JSON object"))
            continue
        m = o.get("message")
        if type(m) is not dict or "usage" not in m:
            # Older versions logged a subagent's responses inside the parent as progress records.
            d = o.get("data")
            inner = d.get("message") if type(d) is dict else None
            if type(inner) is not dict or type(inner.get("message")) is not dict:
                continue
            o = dict(inner, sessionId=o.get("sessionId"), agentId=inner.get("agentId") or d.get("agentId"))
            m = inner["message"]
        u = m["usage"] if "usage" in m else None
        if type(u) is not dict:
            continue
        get = o.get
        model = m.get("model")
        if model == "<synthetic>":  # made up locally: no API call
            continue
        inp = u.get("input_tokens")
        out = u.get("output_tokens")
        ts = epoch(get("timestamp"))
        if type(inp) is not int or type(out) is not int or ts is None:
            bad.append((off, "usage without token counts or timestamp"))
            continue
        cw = u.get("cache_creation_input_tokens")
        if type(cw) is not int:
            cc = u.get("cache_creation")
            cw = sum(_int(v) for v in cc.values()) if type(cc) is dict else 0
        cr = u.get("cache_read_input_tokens")
        session = get("sessionId") or default_session
        mid = m.get("id") or None
        rid = get("requestId") or None
        uid = get("uuid") or None
        if mid and rid:
            key: str | None = f"c\0{mid}\0{rid}"
        elif mid:
            # Without a request id: one response's block lines share an Anthropic message id.
            key = f"c\0{mid}\0\0{session}" + ("" if str(mid).startswith("msg_") else f"\0{ts}")
        else:
            key = f"u\0{uid}" if uid else None
        side = get("isSidechain") is True
        cost = get("costUSD")
        if type(model) is not str or not model:
            model = UNKNOWN_MODEL
        if type(session) is not str:
            session = str(session)
        agent = str(get("agentId") or stem) if side else MAIN_AGENT
        append((ts, intern(model, model), inp if inp >= 0 else 0, out if out >= 0 else 0,
                cr if type(cr) is int and cr >= 0 else 0, cw if cw >= 0 else 0, 0, cost if type(cost) in (int, float) else None, key, side,
                intern(agent, agent), intern(session, session), project, False, mid if type(mid) is str or mid is None else str(mid),
                uid if type(uid) is str or uid is None else str(uid)))
    return state


def _parse_catty(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]]) -> Any:
    import orjson

    from .events import check_event

    if state is None:
        state = [os.path.basename(os.path.dirname(path)), "", "", ""]  # session id, cwd, parent session, forked_from_seq: seq 0 says
        nl = mm.find(_NL, 0, end)
        if nl > 0:
            try:
                first = orjson.loads(mm[0:nl])
            except orjson.JSONDecodeError:
                first = None
            if type(first) is dict and first.get("kind") == "session":
                fseq = first.get("forked_from_seq")
                state = [str(first.get("session_id") or state[0]), str(first.get("cwd") or ""),
                         str(first.get("parent_session_id") or ""), str(fseq) if type(fseq) is int else ""]
    session, cwd, parent, forked_at = state
    for off, line in _lines_with(mm, start, end, _USAGE_MARK):
        try:
            ev = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad.append((off, "not valid JSON"))
            continue
        if type(ev) is not dict:
            bad.append((off, "not a JSON object"))
            continue
        if ev.get("kind") != "usage":
            continue
        problem = check_event(ev)
        ts = _epoch(ev.get("ts"))
        if problem or ts is None:
            bad.append((off, problem or "bad 'ts'"))
            continue
        rid = ev.get("request_id")
        # A fork copies its parent's events keeping their seq: dedupe() traces a copy to its origin.
        key = f"r\0{rid}" if rid else f"e\0{session}\0{ev['seq']}\0{parent}\0{forked_at}"
        cost = ev.get("cost_usd")
        recs.append((ts, ev["model"], ev["input"], ev["output"], _int(ev.get("cache_read")), _int(ev.get("cache_write")),
                     _int(ev.get("reasoning")), float(cost) if cost is not None else None, key, False, ev.get("agent") or MAIN_AGENT,
                     session, cwd, ev.get("incomplete") is True, None, None))
    return state


def _parse_codex(mm: Any, start: int, end: int, path: str, state: Any, recs: list[Record], bad: list[tuple[int, str]]) -> Any:
    # state: last cumulative totals, current model, session id, cwd
    import re

    import orjson

    prev, model, session, cwd = state if state is not None else (None, None, os.path.splitext(os.path.basename(path))[0], "")
    loads = orjson.loads
    for off, line in _lines_with(mm, start, end, pattern=re.compile(_CODEX_MARK)):
        try:
            o = loads(line)
        except orjson.JSONDecodeError:
            bad.append((off, "not valid JSON"))
            continue
        if type(o) is not dict:
            bad.append((off, "not a JSON object"))
            continue
        if type(o.get("payload")) is not dict:
            continue
        p = o["payload"]
        kind = o.get("type")
        if kind == "session_meta":
            session = str(p.get("id") or session)
            cwd = str(p.get("cwd") or cwd)
            model = p.get("model") or model
        elif kind == "turn_context":
            model = p.get("model") or model
        elif kind == "event_msg" and p.get("type") == "token_count":
            info = p.get("info")
            if type(info) is not dict:
                continue  # rate limits only
            total, last = info.get("total_token_usage"), info.get("last_token_usage")
            if type(total) is not dict:
                bad.append((off, "token_count without total_token_usage"))
                continue
            moved = (_int(total.get("input_tokens")), _int(total.get("cached_input_tokens")), _int(total.get("output_tokens")),
                     _int(total.get("reasoning_output_tokens")), _int(total.get("total_tokens")))
            if moved == prev:
                continue  # Codex repeats the last count when nothing was called
            if type(last) is not dict:  # older logs: the call is what the totals moved by
                base = prev or (0, 0, 0, 0, 0)
                last = dict(zip(("input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens"),
                                (max(0, a - b) for a, b in zip(moved, base))))
            prev = moved
            ts = _epoch(o.get("timestamp"))
            if ts is None:
                bad.append((off, "token_count without a timestamp"))
                continue
            inp = _int(last.get("input_tokens"))
            cached = min(_int(last.get("cached_input_tokens")), inp)
            # A forked rollout copies its parent's history: the copy has the same time and totals.
            key = f"x\0{o.get('timestamp')}\0" + "\0".join(map(str, moved))
            recs.append((ts, str(model or UNKNOWN_MODEL), inp - cached, _int(last.get("output_tokens")), cached, 0,
                         _int(last.get("reasoning_output_tokens")), None, key, False, MAIN_AGENT, session, cwd, False, None, None))
    return [prev, model, session, cwd]


_PARSERS: dict[str, Callable[..., Any]] = {CATTY: _parse_catty, CLAUDE: _parse_claude, CODEX: _parse_codex}


def _digest(mm: Any, a: int, b: int) -> int:
    return xxhash.xxh64_intdigest(mm[a:b])


def _line_number(mm: Any, offset: int) -> int:
    n = 1
    pos = 0
    step = 16 << 20
    while pos < offset:
        stop = min(pos + step, offset)
        n += mm[pos:stop].count(_NL)
        pos = stop
    return n


def scan_file(task: tuple[str, str | None, dict[str, Any] | None]) -> tuple[str, dict[str, Any] | None, int, str | None]:
    """Parse one log (or only what was appended since `prev`); returns (path, entry, bytes parsed, error).

    An entry holds the file's key (size, mtime, inode), where parsing stopped (after the last
    complete line), hashes of the first and last bytes before that point, the parser's state,
    the records, and the bad lines. A file that shrank, was replaced, or changed before the
    point is parsed again from the start.
    """
    path, kind, prev = task
    try:
        f = open(path, "rb")
    except OSError as exc:
        return path, None, 0, f"cannot read ({exc.strerror})"
    with f:
        st = os.fstat(f.fileno())
        size = st.st_size
        entry: dict[str, Any] = {"size": size, "mtime": st.st_mtime_ns, "ino": st.st_ino, "kind": kind, "off": 0, "head": 0, "tail": 0,
                                 "state": None, "recs": [], "read": 0, "bad": 0, "samples": [], "torn": 0}
        if size == 0:
            return path, entry, 0, None
        try:
            import mmap

            mm = mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ)
        except (OSError, ValueError) as exc:  # shrank since fstat, or cannot be mapped
            return path, None, 0, f"cannot read ({exc})"
        try:
            start = 0
            if prev is not None and prev["ino"] == st.st_ino and 0 < prev["off"] <= size and prev["kind"] is not None:
                off = prev["off"]
                if _digest(mm, 0, min(off, _CHECK_BYTES)) == prev["head"] and _digest(mm, max(0, off - _CHECK_BYTES), off) == prev["tail"]:
                    start = off
                    entry.update(kind=prev["kind"], state=prev["state"], recs=prev["recs"], read=prev["read"], bad=prev["bad"], samples=prev["samples"])
            last_nl = mm.rfind(_NL, start, size)
            end = last_nl + 1 if last_nl >= 0 else start
            if entry["kind"] is None:
                first_end = mm.find(_NL, 0, min(size, 1 << 20))
                entry["kind"] = _sniff(mm[0 : first_end if first_end >= 0 else min(size, 1 << 20)])
            bad: list[tuple[int, str]] = []
            if end > start:
                recs = list(entry["recs"])
                entry["state"] = _PARSERS[entry["kind"]](mm, start, end, path, entry["state"], recs, bad)
                entry["read"] += len(recs) - len(entry["recs"])
                entry["recs"] = collapse(recs) if len(recs) > len(entry["recs"]) else recs
            entry["bad"] += len(bad)
            room = BAD_SAMPLES_PER_FILE - len(entry["samples"])
            if room > 0 and bad:
                entry["samples"] = entry["samples"] + [(_line_number(mm, off), why) for off, why in bad[:room]]
            if end < size:
                entry["torn"] = _line_number(mm, end)
            entry["off"] = end
            entry["head"] = _digest(mm, 0, min(end, _CHECK_BYTES))
            entry["tail"] = _digest(mm, max(0, end - _CHECK_BYTES), end)
            return path, entry, size - start, None
        finally:
            mm.close()


# -- the cache -----------------------------------------------------------------------------------


def _cache_base() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "catty-ctx")


def cache_dir() -> Path:
    """Where the per-file and answer caches live: $XDG_CACHE_HOME/catty-ctx."""
    from pathlib import Path

    return Path(_cache_base())


def _cache_file(kind: str, key: str) -> str:
    tag = f"{sys.version_info[0]}{sys.version_info[1]}"  # marshal's format follows the interpreter
    return os.path.join(_cache_base(), f"{kind}-v{CACHE_VERSION}-py{tag}-{xxhash.xxh64_hexdigest(key.encode('utf-8', 'surrogateescape'))}.bin")


def _read_marshal(path: str) -> Any:
    """A cache file's content, or None when missing or unreadable (a cache is only ever a shortcut)."""
    try:
        with open(path, "rb") as f:
            return marshal.loads(f.read())
    except (OSError, EOFError, ValueError, TypeError):
        return None


def _load_cache(arg: str) -> dict[str, Any]:
    cache = _read_marshal(_cache_file("usage", arg))
    return cache if type(cache) is dict and cache.get("arg") == arg else {}


def _write_cache_file(path: str, data: bytes) -> None:
    """temp + rename, without fsync: a cache lost in a crash is only read as empty next time."""
    from .files import replace_file

    os.makedirs(os.path.dirname(path), exist_ok=True)
    replace_file(path, data, durable=False)


def _save_cache(arg: str, files: dict[str, Any]) -> str | None:
    """Write the per-file cache; a failure costs speed next time, never the result."""
    try:
        _write_cache_file(_cache_file("usage", arg), marshal.dumps({"arg": arg, "files": files}))
    except Exception as exc:  # noqa: BLE001 - any failure here only loses the cache
        return f"usage cache not written: {exc}"
    return None


# -- scanning ------------------------------------------------------------------------------------


class Scan:
    """What a scan read: the records in file order, and how it went.

    (A plain class, not a dataclass: the dataclasses module is too slow to import for a
    cached answer.)
    """

    def __init__(self, records: list[Record] | None = None, calls_read: int = 0, files: int = 0, files_parsed: int = 0,
                 bytes_parsed: int = 0, bad_lines: int = 0, bad_samples: list[str] | None = None, warnings: list[str] | None = None) -> None:
        self.records: list[Record] = records if records is not None else []
        self.calls_read = calls_read  # usage records seen, copies included
        self.files = files
        self.files_parsed = files_parsed
        self.bytes_parsed = bytes_parsed
        self.bad_lines = bad_lines
        self.bad_samples: list[str] = bad_samples if bad_samples is not None else []
        self.warnings: list[str] = warnings if warnings is not None else []


if TYPE_CHECKING:
    from pathlib import Path

    Progress = Callable[[int, int], None]
    Survey = list[tuple[str, list[tuple[str, str | None, int, int, int]]]]  # per PATH: (file, kind, size, mtime_ns, inode)


def survey(paths: Sequence[str | os.PathLike[str]], listings: Listings | None = None) -> Survey:
    """Every log under PATHS with its size, mtime and inode (a file named twice counts once)."""
    out: Survey = []
    seen: set[str] = set()
    for raw in paths:
        arg = os.path.abspath(os.fspath(raw))
        files = []
        for path, kind in discover(arg, listings):
            if path in seen:
                continue
            seen.add(path)
            try:
                st = os.stat(path)
            except OSError:
                continue  # gone since the walk
            if not stat.S_ISREG(st.st_mode):
                continue  # a FIFO or device would block or never end
            files.append((path, kind, st.st_size, st.st_mtime_ns, st.st_ino))
        out.append((arg, files))
    return out


def validate_catty_logs(found: Survey) -> None:
    """--strict: read every line of each catty log as the store does, not only its usage
    lines, so a corrupt session is a DataError naming file:line even where the ledger would
    not have looked (costs a full parse; the default scan stays a byte search)."""
    from .store import Session

    for _, files in found:
        for path, kind, *_ in files:
            if kind == CATTY:
                for _ in Session.open(path).events(warn=None):
                    pass


def scan(paths: Sequence[str | os.PathLike[str]] | Survey, *, jobs: int | None = None, use_cache: bool = True, progress: Progress | None = None,
         max_samples: int = BAD_SAMPLES_PER_FILE) -> Scan:
    """Read every log under PATHS: unchanged files from the cache, grown ones from where they stopped."""
    found = paths if paths and isinstance(paths[0], tuple) else survey(paths)  # type: ignore[arg-type]
    result = Scan()
    plans: list[tuple[str, list[str], dict[str, Any], dict[str, Any]]] = []  # arg, files, old entries, new entries
    tasks: list[tuple[str, str | None, dict[str, Any] | None]] = []
    sizes: dict[str, int] = {}
    for arg, listing in found:  # type: ignore[union-attr]
        old = _load_cache(arg).get("files", {}) if use_cache else {}
        new: dict[str, Any] = {}
        files: list[str] = []
        for path, kind, size, mtime, ino in listing:
            files.append(path)
            prev = old.get(path)
            if prev is not None and prev["size"] == size and prev["mtime"] == mtime and prev["ino"] == ino:
                new[path] = prev
            else:
                tasks.append((path, kind, prev))
                sizes[path] = size - (prev["off"] if prev is not None and prev["ino"] == ino and prev["off"] <= size else 0)
        plans.append((arg, files, old, new))
    result.files = sum(len(p[1]) for p in plans)

    done: dict[str, dict[str, Any]] = {}
    total = sum(sizes.values())
    for path, entry, nbytes, error in _run(tasks, sizes, jobs, total, progress):
        if error is not None:
            result.bad_lines += 1
            if len(result.bad_samples) < max_samples:
                result.bad_samples.append(f"{path}: {error}")
            continue
        assert entry is not None
        done[path] = entry
        result.files_parsed += 1
        result.bytes_parsed += nbytes

    for arg, files, old, new in plans:
        new.update((p, done[p]) for p in files if p in done)
        for path in files:
            entry = new.get(path)
            if entry is None:
                continue
            result.records.extend(entry["recs"])
            result.calls_read += entry["read"]
            result.bad_lines += entry["bad"] + (1 if entry["torn"] else 0)
            for line, why in entry["samples"]:
                if len(result.bad_samples) < max_samples:
                    result.bad_samples.append(f"{path}:{line}: {why}")
            if entry["torn"] and len(result.bad_samples) < max_samples:
                result.bad_samples.append(f"{path}:{entry['torn']}: torn final line (no newline)")
        if use_cache and (new.keys() != old.keys() or any(p in done for p in files)):
            warning = _save_cache(arg, new)
            if warning:
                result.warnings.append(warning)
    return result


if TYPE_CHECKING:
    Task = tuple[str, str | None, dict[str, Any] | None]
QUEUE_ITEMS = 1024  # work items in the queue pipe: 4 KiB, within any pipe's buffer, so filling it never blocks


def _run(tasks: list[Task], sizes: dict[str, int], jobs: int | None, total: int,
         progress: Progress | None) -> Iterable[tuple[str, dict[str, Any] | None, int, str | None]]:
    """scan_file over TASKS, in JOBS processes when there is enough to read.

    The files, largest first, are dealt through a queue: a pipe holding their numbers, from
    which this process and JOBS-1 forked children each take the next one when they are free
    (reads of four bytes from a pipe are whole), so all end together whatever the files cost.
    A child hands back its entries marshalled (three times cheaper than pickle both ways), see
    `_fork_worker`. Whatever a child did not report (it failed, or could not start) is read
    here: a worker can cost time, never a result.
    """
    from .forking import can_fork, usable_cpus

    jobs = min(jobs or usable_cpus(), len(tasks))
    if jobs <= 1 or total < PARALLEL_MIN_BYTES or not can_fork():
        yield from _scan_items([[t] for t in tasks], range(len(tasks)), sizes, total, progress)
        return
    order = sorted(tasks, key=lambda t: -sizes.get(t[0], 0))
    step = -(-len(order) // QUEUE_ITEMS)  # files per work item
    items = [order[i : i + step] for i in range(0, len(order), step)]
    try:
        queue_r, queue_w = os.pipe()
    except OSError:
        yield from _scan_items(items, range(len(items)), sizes, total, progress)
        return
    os.write(queue_w, b"".join(i.to_bytes(4, "little") for i in range(len(items))))
    children = [child for child in (_fork_worker(items, queue_r, queue_w) for _ in range(jobs - 1)) if child is not None]
    os.close(queue_w)
    taken = _queue_reader(queue_r)
    done: set[int] = set()
    with os.fdopen(queue_r, "rb", buffering=0):
        for _n, res in _scan_taken(items, taken, sizes, total, progress, done, workers=1 + len(children)):
            yield res
    for child in children:
        for n, results in _collect(child):
            done.add(n)
            yield from results
    left = [n for n in range(len(items)) if n not in done]  # a failed child's items
    yield from _scan_items(items, left, sizes, total, progress)


def _queue_reader(fd: int) -> Iterable[int]:
    """Work item numbers taken from the queue pipe until it is empty."""
    while True:
        data = os.read(fd, 4)
        if len(data) < 4:
            return
        yield int.from_bytes(data, "little")


def _scan_taken(items: list[list[Task]], taken: Iterable[int], sizes: dict[str, int], total: int, progress: Progress | None,
                done: set[int], workers: int = 1) -> Iterable[tuple[int, tuple[str, dict[str, Any] | None, int, str | None]]]:
    """Read the work items TAKEN here, adding each to DONE once read whole."""
    nbytes = 0
    for n in taken:
        for task in items[n]:
            res = scan_file(task)
            nbytes += sizes.get(task[0], 0)
            yield n, res
        done.add(n)
        if progress is not None:
            progress(min(total, nbytes * workers), total)  # the children read about as much meanwhile


def _scan_items(items: list[list[Task]], numbers: Iterable[int], sizes: dict[str, int], total: int,
                progress: Progress | None) -> Iterable[tuple[str, dict[str, Any] | None, int, str | None]]:
    for _n, res in _scan_taken(items, numbers, sizes, total, progress, set()):
        yield res


def _fork_worker(items: list[list[Task]], queue_r: int, queue_w: int) -> tuple[int, int] | None:
    """Start a child taking work from the queue; (pid, the file it writes its results to), or None.

    The child writes each work item's entries as it finishes it, to an in-memory file where
    there is one (a pipe would block once full, while this process is busy reading its own
    share), so at the end only its last item is left to hand over.
    """
    try:
        out = os.memfd_create("catty-ctx-usage") if hasattr(os, "memfd_create") else _unlinked_temp()
    except OSError:
        return None
    try:
        pid = os.fork()
    except OSError:  # no processes to be had (sandbox, limits): the work stays here
        os.close(out)
        return None
    if pid == 0:  # the child: never returns, never runs the parent's exit handlers
        code = 1
        try:
            os.close(queue_w)
            for n in _queue_reader(queue_r):
                data = marshal.dumps((n, [scan_file(task) for task in items[n]]))
                data = len(data).to_bytes(8, "little") + data  # (marshal.load on a file reads piecemeal: slow)
                while data:
                    data = data[os.write(out, data):]
            code = 0
        finally:
            os._exit(code)
    return pid, out


def _unlinked_temp() -> int:
    import tempfile

    fd, name = tempfile.mkstemp(prefix="catty-ctx-usage-")
    os.unlink(name)
    return fd


def _collect(child: tuple[int, int]) -> Iterable[tuple[int, list[Any]]]:
    """(work item, its entries) for each item a child read whole; none when it failed (its items are then read here)."""
    pid, fd = child
    _, status = os.waitpid(pid, 0)
    with os.fdopen(fd, "rb") as f:
        if status != 0:
            return
        f.seek(0)
        data = memoryview(f.read())
    pos = 0
    while pos + 8 <= len(data):
        end = pos + 8 + int.from_bytes(data[pos : pos + 8], "little")
        try:
            item = marshal.loads(data[pos + 8 : end])
        except (EOFError, ValueError, TypeError):
            return
        pos = end
        yield item


# -- prices --------------------------------------------------------------------------------------


class Prices:
    """Per-model prices in USD per token, LiteLLM's field names; `date` says when they were true."""

    def __init__(self, table: dict[str, dict[str, Any]], date: str | None = None, digest: str = "") -> None:
        self.table = table
        self.date = date
        self.digest = digest  # of the files the table came from: part of the answer cache's key
        self._memo: dict[str, dict[str, Any] | None] = {}
        self._norm: dict[str, str] | None = None

    def lookup(self, model: str) -> dict[str, Any] | None:
        """The price entry of MODEL: exact name, else without provider prefix and date suffix."""
        try:
            return self._memo[model]
        except KeyError:
            pass
        entry = self.table.get(model)
        if entry is None:
            if self._norm is None:
                self._norm = {}
                for name in self.table:
                    self._norm.setdefault(_normal_model(name), name)
            name = self._norm.get(_normal_model(model))
            entry = self.table.get(name) if name else None
        self._memo[model] = entry
        return entry


def _normal_model(name: str) -> str:
    import re

    n = name.lower().rsplit("/", 1)[-1]
    n = re.sub(r"^(?:anthropic|openai|us|eu|apac)\.", "", n)
    n = re.sub(r"(?:-v\d+(?::\d+)?|@\d{8}|-\d{8}|@latest|-latest)$", "", n)
    return n


def _price_entries(doc: Any, origin: str) -> dict[str, dict[str, Any]]:
    if type(doc) is not dict:
        raise DataError("a price table is a JSON object of model → prices", path=origin)
    return {k: v for k, v in doc.items() if type(v) is dict and not k.startswith("_") and k != "sample_spec"}


def _price_files(override: str | os.PathLike[str] | None) -> list[tuple[str, bytes]]:
    """(name, bytes) of the bundled table and of OVERRIDE: read, not parsed (their digest keys the answer cache)."""
    with open(os.path.join(os.path.dirname(__file__), "prices.json"), "rb") as f:
        files = [("prices.json", f.read())]
    if override is not None:
        path = os.fspath(override)
        try:
            with open(path, "rb") as f:
                files.append((path, f.read()))
        except OSError as exc:
            raise UsageError(f"{path}: cannot read price table ({exc.strerror})") from None
    return files


def _digest_of(files: list[tuple[str, bytes]]) -> str:
    h = xxhash.xxh64()
    for _name, data in files:
        h.update(data)
    return h.hexdigest()


def load_prices(override: str | os.PathLike[str] | None = None, files: list[tuple[str, bytes]] | None = None) -> Prices:
    """The bundled table, with the entries of OVERRIDE (a LiteLLM-style file) replacing its own."""
    import orjson

    files = files if files is not None else _price_files(override)
    bundled = orjson.loads(files[0][1])
    table = _price_entries(bundled, "prices.json")
    stamp = bundled.get("_meta", {}).get("date")
    for path, data in files[1:]:
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise DataError(f"not valid JSON ({exc})", path=path) from None
        table.update(_price_entries(doc, path))
        meta = doc.get("_meta") if type(doc) is dict else None
        stamp = (meta.get("date") if type(meta) is dict else None) or f"{stamp} + {os.path.basename(path)}"
    return Prices(table, stamp, _digest_of(files))


def price_tokens(p: dict[str, Any] | None, inp: int, out: int, cache_read: int, cache_write: int, above: bool) -> float | None:
    """Price token counts at a model's rates (None: no price).

    The tier rule: a call whose prompt (input + cache reads + cache writes) is more than
    200,000 tokens is priced entirely at the `*_above_200k_tokens` rates, where the model has
    them; cache rates a model lacks fall back to its input rate.
    """
    if p is None or p.get("input_cost_per_token") is None or p.get("output_cost_per_token") is None:
        return None

    def rate(name: str, fallback: float) -> float:
        if above:
            v = p.get(name + TIER_SUFFIX)
            if v is not None:
                return float(v)
        v = p.get(name)
        return float(v) if v is not None else fallback

    r_in = rate("input_cost_per_token", 0.0)
    return (inp * r_in + out * rate("output_cost_per_token", 0.0)
            + cache_write * rate("cache_creation_input_token_cost", r_in) + cache_read * rate("cache_read_input_token_cost", r_in))


def call_cost(rec: Record, prices: Prices) -> float | None:
    """One call's cost: the provider's when it reported one, else priced from the table."""
    if rec[COST] is not None:
        return float(rec[COST])
    above = rec[INPUT] + rec[CACHE_READ] + rec[CACHE_WRITE] > TIER_TOKENS
    return price_tokens(prices.lookup(rec[MODEL]), rec[INPUT], rec[OUTPUT], rec[CACHE_READ], rec[CACHE_WRITE], above)


# -- the ledger ----------------------------------------------------------------------------------


def collapse(records: Iterable[Record]) -> list[Record]:
    """Keep one record per dedupe key, in the order keys first appear.

    Of the copies the main conversation's wins over a sidechain's, then the largest usage,
    then the first seen. A record whose uuid was seen is a replay of that record even when its
    ids were rewritten. Workers collapse each file (a response's content-block lines repeat
    its usage), the ledger collapses again across files: the rule is the same both times.
    """
    out: list[Record] = []
    where: dict[str, int] = {}
    by_uuid: dict[str, int] = {}
    for rec in records:
        key = rec[KEY]
        if key is None:
            out.append(rec)
            continue
        uid = rec[UUID]
        i = where.get(key)
        if i is None and uid is not None:
            i = by_uuid.get(uid)
        if i is None:
            where[key] = len(out)
            if uid is not None:
                by_uuid[uid] = len(out)
            out.append(rec)
            continue
        where.setdefault(key, i)
        if uid is not None:
            by_uuid.setdefault(uid, i)
        cur = out[i]
        if cur[SIDECHAIN] != rec[SIDECHAIN]:
            if cur[SIDECHAIN]:
                out[i] = rec
        elif rec[INPUT] + rec[OUTPUT] + rec[CACHE_READ] + rec[CACHE_WRITE] > cur[INPUT] + cur[OUTPUT] + cur[CACHE_READ] + cur[CACHE_WRITE]:
            out[i] = rec
    return out


def _trace_forks(records: Iterable[Record]) -> list[Record]:
    """Key (and attribute) a catty event a fork copied (seq <= forked_from_seq) by the session it came from.

    Followed up the chain of forks as far as the scanned sessions tell it; a parent not
    scanned still keys its copies alike in every child.
    """
    records = list(records)
    forks: dict[str, tuple[str, int]] = {}
    for r in records:
        k = r[KEY]
        if k is not None and k[:2] == "e\0":
            _e, session, _seq, parent, forked_at = k.split("\0")
            if parent and forked_at:
                forks[session] = (parent, int(forked_at))
    if not forks:
        return records
    out = []
    for r in records:
        k = r[KEY]
        if k is not None and k[:2] == "e\0":
            _e, session, seq_text, _p, _f = k.split("\0")
            seq = int(seq_text)
            hops = 0
            while session in forks and seq <= forks[session][1] and hops < 1000:  # hops: a cycle in bad data ends
                session = forks[session][0]
                hops += 1
            # The call was made in the session it came from: count it there.
            r = r[:KEY] + (f"e\0{session}\0{seq}",) + r[KEY + 1 : SESSION] + (session,) + r[SESSION + 1 :]
        out.append(r)
    return out


def dedupe(records: Iterable[Record]) -> list[Record]:
    """One record per provider call, sorted by time.

    Copies share a key (Claude: message id + request id; Codex: time and cumulative totals;
    catty: request id, else time, seq and counts) and are collapsed. A sidechain record whose
    message id the main conversation of the same session already has is a replay (a side
    question re-logging its parent under a new request id) and is dropped.
    """
    kept = collapse(_trace_forks(records))
    side_ids = {r[MSG_ID] for r in kept if r[SIDECHAIN] and r[MSG_ID] is not None}
    if side_ids:  # (few: only the sidechains' ids are looked up among the main conversation's)
        main_ids = {(r[SESSION], r[MSG_ID]) for r in kept if not r[SIDECHAIN] and r[MSG_ID] in side_ids}
        if main_ids:
            kept = [r for r in kept if not (r[SIDECHAIN] and r[MSG_ID] is not None and (r[SESSION], r[MSG_ID]) in main_ids)]
    kept.sort(key=lambda r: r[TS])
    return kept


def parse_day(text: str) -> str:
    """YYYY-MM-DD or YYYYMMDD → YYYY-MM-DD, or UsageError."""
    from datetime import date

    t = text.strip()
    if len(t) == 8 and t.isdigit():
        t = f"{t[:4]}-{t[4:6]}-{t[6:]}"
    try:
        return date.fromisoformat(t).isoformat()
    except ValueError:
        raise UsageError(f"'{text}' is not a date (YYYY-MM-DD)") from None


def timezone_named(name: str | None) -> tzinfo | None:
    """An IANA zone (or UTC); None means the local zone."""
    if not name:
        return None
    if name.upper() in ("UTC", "Z"):
        from datetime import timezone

        return timezone.utc
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise UsageError(f"unknown time zone '{name}'") from None


def _day_of(tz: tzinfo | None) -> Callable[[float], str]:
    """ts → its day in TZ (None: local), remembering the last day's bounds (calls come sorted)."""
    from datetime import date, datetime

    bounds = [1.0, 0.0, ""]  # start, end, day: empty until the first call

    def day(ts: float) -> str:
        if bounds[0] <= ts < bounds[1]:
            return bounds[2]  # type: ignore[return-value]
        d = datetime.fromtimestamp(ts, tz).date()
        start = datetime(d.year, d.month, d.day, tzinfo=tz).timestamp()
        nxt = date.fromordinal(d.toordinal() + 1)
        end = datetime(nxt.year, nxt.month, nxt.day, tzinfo=tz).timestamp()
        if not start <= ts < end:  # a day that starts at a gap in the clock: do not remember it
            return d.isoformat()
        bounds[:] = [start, end, d.isoformat()]
        return bounds[2]  # type: ignore[return-value]

    return day


def _week(day: str) -> str:
    from datetime import date

    y, w, _ = date.fromisoformat(day).isocalendar()
    return f"{y}-W{w:02d}"


class Ledger:
    """Rows by one key and their totals, with what the dedupe dropped and the price table's date.

    `rendered` is what a caller of `usage(render=…)` made of it, kept with a cached answer.
    """

    FIELDS = ("by", "rows", "totals", "incomplete", "calls_read", "duplicates", "prices_date")

    def __init__(self, by: str, rows: list[dict[str, Any]], totals: dict[str, Any], incomplete: bool, calls_read: int,
                 duplicates: int, prices_date: str | None, rendered: Any = None) -> None:
        self.by = by
        self.rows = rows
        self.totals = totals
        self.incomplete = incomplete
        self.calls_read = calls_read
        self.duplicates = duplicates
        self.prices_date = prices_date
        self.rendered = rendered

    def document(self, scan: Scan | None = None) -> dict[str, Any]:
        doc: dict[str, Any] = {"by": self.by, "rows": self.rows, "totals": self.totals, "incomplete": self.incomplete,
                               "calls_read": self.calls_read, "duplicates_dropped": self.duplicates, "prices_date": self.prices_date}
        if scan is not None:
            doc.update(files=scan.files, files_parsed=scan.files_parsed, bytes_parsed=scan.bytes_parsed, bad_lines=scan.bad_lines)
        return doc


_FIELDS = ("input", "output", "cache_read", "cache_write", "reasoning", "calls")


def build_ledger(records: Iterable[Record], *, by: str = "model", tz: tzinfo | None = None, since: str | None = None,
                 until: str | None = None, prices: Prices | None = None) -> Ledger:
    """Fold calls into rows: input, output, cache_read, cache_write, reasoning, calls, cost_usd, partial.

    A row is partial when some of its calls have no price (its cost counts the priced ones;
    with none priced it is null).
    A session holding an `incomplete` usage makes the ledger incomplete: every row with calls of
    that session is partial and shows no cost, and neither do the totals.
    """
    if by not in BY_CHOICES:
        raise UsageError(f"--by must be one of {', '.join(BY_CHOICES)}")
    prices = prices or load_prices()
    records = list(records)
    kept = dedupe(records)
    duplicates = len(records) - len(kept)
    day_of = _day_of(tz)
    if since or until:
        lo, hi = since or "0000-00-00", until or "9999-99-99"
        kept = [r for r in kept if lo <= day_of(r[TS]) <= hi]
    incomplete_sessions = {r[SESSION] for r in kept if r[INCOMPLETE]}

    if by in ("day", "week", "month"):
        keys = [day_of(r[TS]) for r in kept]
        if by == "week":
            weeks = {d: _week(d) for d in dict.fromkeys(keys)}
            keys = [weeks[d] for d in keys]
        elif by == "month":
            keys = [d[:7] for d in keys]
    else:
        field = {"model": MODEL, "session": SESSION, "project": PROJECT, "agent": AGENT}[by]
        keys = [r[field] for r in kept]

    # One pass into (group, model, tier, unpriced) buckets; groups are summed from them and
    # the unpriced buckets priced once each at the end. Reported costs are added in call order.
    buckets: dict[tuple[str, str, bool, bool], list[int]] = {}
    reported: dict[str, float] = {}
    for r, k in zip(kept, keys):
        inp, cr, cw, cost = r[INPUT], r[CACHE_READ], r[CACHE_WRITE], r[COST]
        bk = (k, r[MODEL], inp + cr + cw > TIER_TOKENS, cost is None)
        b = buckets.get(bk)
        if b is None:
            b = buckets[bk] = [0, 0, 0, 0, 0, 0]
        b[0] += inp
        b[1] += r[OUTPUT]
        b[2] += cr
        b[3] += cw
        b[4] += r[REASONING]
        b[5] += 1
        if cost is not None:
            reported[k] = reported.get(k, 0.0) + cost
    acc: dict[str, list[Any]] = {}  # per group: 6 counts, cost, unpriced calls, incomplete
    for (k, _model, _above, _unpriced), b in buckets.items():
        a = acc.get(k)
        if a is None:
            a = acc[k] = [0, 0, 0, 0, 0, 0, reported.get(k, 0.0), 0, False]
        for i in range(6):
            a[i] += b[i]
    for (k, model, above, unpriced), b in buckets.items():
        if unpriced:
            cost = price_tokens(prices.lookup(model), b[0], b[1], b[2], b[3], above)
            if cost is None:
                acc[k][7] += b[5]
            else:
                acc[k][6] += cost
    if incomplete_sessions:
        for r, k in zip(kept, keys):
            if r[SESSION] in incomplete_sessions:
                acc[k][8] = True

    def row(a: list[Any]) -> dict[str, Any]:
        out = dict(zip(_FIELDS, a[:6]))
        # Withheld when incomplete; unknown (not zero) when no call of the row has a price.
        out["cost_usd"] = None if a[8] or (a[7] and a[7] == a[5]) else round(a[6], 6)
        out["partial"] = bool(a[7]) or a[8]
        return out

    rows = [{by: k, **row(a)} for k, a in sorted(acc.items())]
    tot = [sum(a[i] for a in acc.values()) for i in range(8)] + [any(a[8] for a in acc.values())]
    return Ledger(by=by, rows=rows, totals=row(tot), incomplete=bool(incomplete_sessions), calls_read=len(records),
                  duplicates=duplicates, prices_date=prices.date)


def _answers_path(paths: Sequence[str | os.PathLike[str]]) -> str:
    return _cache_file("usage-answers", "\0".join(os.path.abspath(os.fspath(p)) for p in paths))


def _query_key(found: Survey, query: tuple[Any, ...]) -> str:
    """Same files (path, size, mtime, inode), same question, same catty-ctx: same answer (the
    printed forms kept with it follow the version's output)."""
    from ._version import __version__

    h = xxhash.xxh3_128(repr((CACHE_VERSION, __version__, query)).encode())
    for arg, files in found:
        h.update(arg.encode("utf-8", "surrogateescape"))
        h.update(repr(files).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _local_zone_key() -> tuple[Any, ...]:
    import time

    try:
        localtime_mtime = os.stat("/etc/localtime").st_mtime_ns
    except OSError:
        localtime_mtime = 0
    return (os.environ.get("TZ"), time.tzname, time.timezone, time.altzone, localtime_mtime)


ANSWERS_KEPT = 16


if TYPE_CHECKING:
    Render = Callable[[Ledger, Scan], Any]


def usage(paths: Sequence[str | os.PathLike[str]], *, by: str = "model", since: str | None = None, until: str | None = None,
          timezone_name: str | None = None, prices_file: str | os.PathLike[str] | None = None, jobs: int | None = None,
          use_cache: bool = True, progress: Progress | None = None, stdin: IO[bytes] | None = None,
          strict: bool = False, render: Render | None = None) -> tuple[Ledger, Scan]:
    """The whole pipeline as one call: scan PATHS, dedupe, price, fold by BY.

    A PATH of `-` reads one log from stdin (any of the three kinds; never cached). With the
    cache, a question asked before about files that have not changed since is answered from
    the answer cache without reading the per-file cache, parsing the price table or importing
    the parsers. RENDER(ledger, scan) is kept with the answer (the CLI keeps its printed
    forms there) and comes back as `ledger.rendered` when the answer is served from the cache.
    """
    if not any(os.fspath(p) == "-" for p in paths):
        return _usage(paths, by=by, since=since, until=until, timezone_name=timezone_name, prices_file=prices_file, jobs=jobs,
                      use_cache=use_cache, progress=progress, strict=strict, render=render)
    import shutil
    import tempfile

    with tempfile.TemporaryDirectory(prefix="catty-ctx-") as spool:
        piped = os.path.join(spool, "stdin.jsonl")
        with open(piped, "wb") as out:
            shutil.copyfileobj(stdin if stdin is not None else sys.stdin.buffer, out, 1 << 20)
        real = [piped if os.fspath(p) == "-" else p for p in paths]
        ledger, result = _usage(real, by=by, since=since, until=until, timezone_name=timezone_name, prices_file=prices_file, jobs=jobs,
                                use_cache=False, progress=progress, strict=strict)
    result.bad_samples = [sample.replace(piped, "-") for sample in result.bad_samples]
    return ledger, result


def _usage(paths: Sequence[str | os.PathLike[str]], *, by: str, since: str | None, until: str | None, timezone_name: str | None,
           prices_file: str | os.PathLike[str] | None, jobs: int | None, use_cache: bool, progress: Progress | None, strict: bool,
           render: Render | None = None) -> tuple[Ledger, Scan]:
    """`usage` for files on disk; `strict` first validates every line of each catty log (see `validate_catty_logs`)."""
    if by not in BY_CHOICES:
        raise UsageError(f"--by must be one of {', '.join(BY_CHOICES)}")
    lo = parse_day(since) if since else None
    hi = parse_day(until) if until else None
    price_files = _price_files(prices_file)
    # The answer cache: {"answers": {query key: answer}, "dirs": the folder listings of the last walk}.
    cached = _read_marshal(_answers_path(paths)) if use_cache else None
    if type(cached) is not dict:
        cached = {}
    answers = cached.get("answers")
    if type(answers) is not dict:
        answers = {}
    listings = Listings(cached.get("dirs"))
    found = survey(paths, listings)
    if strict:
        validate_catty_logs(found)
    key = ""
    if use_cache:
        # An answer is stored only after the question was checked in full (time zone, price table), so a hit needs no checks.
        key = _query_key(found, (by, timezone_name or _local_zone_key(), lo, hi, _digest_of(price_files)))
        hit = answers.get(key)
        if hit is not None:
            scan_info = Scan(files=hit["files"], bad_lines=hit["bad_lines"], bad_samples=list(hit["bad_samples"]))
            return Ledger(**hit["ledger"], rendered=hit.get("rendered")), scan_info
    tz = timezone_named(timezone_name)
    prices = load_prices(prices_file, price_files)
    result = scan(found, jobs=jobs, use_cache=use_cache, progress=progress)
    ledger = build_ledger(result.records, by=by, tz=tz, since=lo, until=hi, prices=prices)
    # The workers already collapsed each file's own copies: count those too.
    ledger.duplicates += result.calls_read - len(result.records)
    ledger.calls_read = result.calls_read
    if use_cache:
        as_hit = Scan(files=result.files, bad_lines=result.bad_lines, bad_samples=result.bad_samples)
        answers.pop(key, None)
        answers[key] = {"ledger": {name: getattr(ledger, name) for name in Ledger.FIELDS}, "files": result.files,
                        "bad_lines": result.bad_lines, "bad_samples": result.bad_samples,
                        "rendered": render(ledger, as_hit) if render is not None else None}
        while len(answers) > ANSWERS_KEPT:
            answers.pop(next(iter(answers)))
        try:
            _write_cache_file(_answers_path(paths), marshal.dumps({"answers": answers, "dirs": listings.seen}))
        except Exception as exc:  # noqa: BLE001 - the cache is an optimisation only
            result.warnings.append(f"usage answer cache not written: {exc}")
    return ledger, result
