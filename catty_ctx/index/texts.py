"""A session's texts as `search` matches them, kept in the index so that a query that finds
something reads no session (docs/search.md#the-index).

`search` matches a pattern against what each event says (`event_texts`: a message's text, a
tool call's arguments, a tool's output, a compaction's summary) line by line, and against the
lines of a catty session's segments archive. `read_texts` reads a session once into `Texts`:
those texts with each event's seq, time and role, the session's id and folder, and its segment
lines; `search` then matches from `Texts` alone. The index keeps each session's `Texts`
under a key, `texts_key`: the stat (size, mtime, ctime, inode) and the
fingerprints of the first and last bytes of every file the session is read from (its log or
transcript, a Claude Code session's subagent transcripts, a catty session's quarantine list
and segments). Kept texts are used only while the key is the same; any change to one of those
files (appended, cut back, replaced, deleted, a subagent added) reads the session again, and
the texts read are kept again. What reading a session warned is kept with it and said again
each time its kept texts are used; a session whose reading failed is never kept: it is read,
and fails, each time, as without the index. A query asks the kept body (the texts one after
the other) for the longest string every match holds (`Texts.holding`): only the texts holding
it are matched.
"""
from __future__ import annotations

import bisect
import mmap
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import xxhash

from ..errors import CattyError
from ..formats.roots import NativeSource
from ..session.cursor import look
from ..session.files import replace_file
from ..session.layout import LOG_NAME, QUARANTINE_NAME
from ..session.segments import segment_lines
from ..sources import describe, open_session

_ENCODING = ("utf-8", "surrogatepass")  # (every str back as it was, a lone surrogate included)


@dataclass
class Texts:
    """What `search` matches in one session: every text its events say and every line of its
    segments, one after the other in BODY (UTF-8), each a span of it."""

    format: str
    path: str  # where the session lies, as `describe` names it
    last_ts: str = ""  # the last event's time: a segment line's date
    contexts: list[list[str]] = field(default_factory=lambda: [["", ""]])  # (session id, cwd) as each session event set them
    events: list[list[Any]] = field(default_factory=list)  # [seq, ts or None, role, context number, start, end] of each text
    segments: list[list[Any]] = field(default_factory=list)  # [segment, seq, role, line number, start, end] of each line
    body: Any = b""  # bytes, or the kept file mapped (mmap: find, slices and re alike)
    ascii: bool = True  # whether the body is ASCII (re's case folding of bytes is ASCII's)
    warnings: list[str] = field(default_factory=list)  # what reading it said (said again when kept texts are used)
    segments_error: CattyError | None = None  # a segments archive that could not be read (raised when it is asked)

    def text(self, start: int, end: int) -> str:
        return self.body[start:end].decode(*_ENCODING)

    def meta(self) -> bytes:
        return orjson.dumps([self.format, self.path, self.last_ts, self.contexts, self.events, self.segments, self.warnings, self.ascii])

    @classmethod
    def unpack(cls, meta: bytes, body: Any) -> Texts:
        fmt, path, last_ts, contexts, events, segments, warnings, ascii_ = orjson.loads(meta)
        return cls(fmt, path, last_ts, contexts, events, segments, body=body, warnings=warnings, ascii=ascii_)

    def holding(self, needles: list[str] | None, ignore_case: bool) -> tuple[list[list[Any]], list[list[Any]]]:
        """The events and segment lines whose text may hold a match: those holding the longest of
        NEEDLES (strings every match holds; None: every one), found in one scan of the body."""
        if not needles or (ignore_case and not self.ascii):
            return self.events, self.segments
        needle = max(needles, key=len).encode(*_ENCODING)
        if ignore_case:
            found = [m.start() for m in re.finditer(b"(?=" + re.escape(needle) + b")", self.body, re.I)]
        else:
            found, at = [], self.body.find(needle)
            while at >= 0:  # (overlapping: an occurrence across two texts' seam must not hide the next)
                found.append(at)
                at = self.body.find(needle, at + 1)
        items = self.events + self.segments
        picked: set[int] = set()
        for at in found:
            i = bisect.bisect_right(items, at, key=_start) - 1
            if i >= 0 and at + len(needle) <= items[i][5]:
                picked.add(i)
        n = len(self.events)
        return [items[i] for i in sorted(picked) if i < n], [items[i] for i in sorted(picked) if i >= n]


def _start(item: list[Any]) -> int:
    return int(item[4])


class _Writer:
    """Texts appended one after the other into one body."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0

    def add(self, text: str) -> tuple[int, int]:
        data = text.encode(*_ENCODING)
        self.parts.append(data)
        self.size += len(data)
        return self.size - len(data), self.size


def event_texts(ev: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(role or tool, text) of what an event says."""
    kind = ev["kind"]
    if kind == "message":
        yield str(ev.get("role")), str(ev.get("text") or "")
    elif kind == "tool_call":
        args = ev.get("args")
        yield f"tool:{ev.get('name')}", args if isinstance(args, str) else orjson.dumps(args).decode()
    elif kind == "tool_result":
        yield "tool result", str(ev.get("output") or "")
    elif kind == "compaction":
        yield "compaction", str(ev.get("summary") or "")


def read_texts(unit: Any, warn: Callable[[str], None] | None) -> Texts:
    """UNIT's texts, read whole (its errors raised, its warnings said to WARN and kept)."""
    said: list[str] = []

    def note(message: str) -> None:
        said.append(message)
        if warn is not None:
            warn(message)

    with open_session(unit, warn=note) as s:
        who = describe(s)
        texts = Texts(str(who.get("format")), str(who.get("path")), warnings=said)
        body = _Writer()
        last_ts = None
        for ev in s.events(warn=note):
            ts = ev.get("ts") if isinstance(ev.get("ts"), str) else None
            last_ts = ts or last_ts
            if ev["kind"] == "session":
                texts.contexts.append([str(ev.get("session_id") or ""), str(ev.get("cwd") or who.get("cwd") or "")])
                continue
            for role, text in event_texts(ev):
                texts.events.append([ev["seq"], ts, role, len(texts.contexts) - 1, *body.add(text)])
        texts.last_ts = last_ts or ""
        if s.directory is not None and (s.directory / "segments").is_dir():
            try:
                for g in segment_lines(s.directory):
                    texts.segments.append([g.segment, g.seq, g.role, g.line_number, *body.add(g.line)])
            except CattyError as exc:
                texts.segments, texts.segments_error = [], exc
        texts.body = b"".join(body.parts)
        texts.ascii = texts.body.isascii()
        return texts


def _side_files(unit: Any) -> list[Path] | None:
    """The files UNIT is read from (None: a format whose reader may read others)."""
    if isinstance(unit, NativeSource):
        if unit.format == "codex":
            return [unit.path]
        if unit.format != "claude":
            return None
        main = unit.path  # and its subagents' transcripts, as the importer finds them (importers/claude.py)
        sub = main.with_suffix("") / "subagents"
        found = [*sorted(sub.glob("*.jsonl")), *sorted(sub.glob("workflows/*/agent-*.jsonl"))] if sub.is_dir() else []
        try:
            beside = sorted(n for n in os.listdir(main.parent) if n.startswith("agent-") and n.endswith(".jsonl") and n != main.name)
        except OSError:
            beside = []
        return [main, *found, *(main.parent / n for n in beside)]
    folder = Path(unit)
    out = [folder, folder / LOG_NAME, folder / QUARANTINE_NAME / "index.jsonl", folder / "segments"]
    if out[-1].is_dir():
        out += sorted(out[-1].iterdir())
    return out


def texts_key(unit: Any) -> bytes | None:
    """What UNIT's kept texts hold for (see the module's docstring); None: never kept."""
    files = _side_files(unit)
    if files is None:
        return None
    return orjson.dumps([_file_key(f) for f in files])


def _file_key(f: Path) -> list[Any]:
    """F's stat and, for a file, the cursor of all of it (`session.cursor`: device, inode, size
    and the fingerprints of its first and last bytes)."""
    try:
        if f.is_dir():
            st = os.stat(f)
            return [str(f), st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino, st.st_dev]
        with open(f, "rb") as fh:
            st = os.fstat(fh.fileno())

            def read(start: int, length: int) -> bytes:
                return os.pread(fh.fileno(), length, start)

            return [str(f), st.st_mtime_ns, st.st_ctime_ns, *look(None, st, read).advance(st.st_size, read).fields()]
    except OSError:
        return [str(f)]  # (missing: its coming changes the key)


# -- kept in the index: the metadata in its database, the body in a file of its own beside it,
# mapped when used (a query reads only the pages it searches, none copied) -------------------


def texts_folder(index: Path) -> Path:
    return index.with_name(index.name + ".texts")


def kept(db: sqlite3.Connection, folder: Path, unit: str, key: bytes) -> Texts | None:
    """UNIT's texts kept under KEY, or None (never kept, stale, or the body's file not the one kept)."""
    row = db.execute("select meta, name, size, digest from texts where unit = ? and key = ?", (unit, key)).fetchone()
    if row is None:
        return None
    meta, name, size, digest = row
    try:
        with open(folder / name, "rb") as f:
            if os.fstat(f.fileno()).st_size != size:
                return None
            body: Any = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if size else b""
    except (OSError, ValueError):
        return None
    if signed(xxhash.xxh3_64_intdigest(body)) != digest:
        return None
    return Texts.unpack(meta, body)


def keep(db: sqlite3.Connection, folder: Path, unit: str, root: str | None, key: bytes, texts: Texts) -> None:
    """Keep TEXTS of UNIT under KEY: the body's file first (private: it is the sessions' text), then the row."""
    folder.mkdir(mode=0o700, exist_ok=True)
    name = xxhash.xxh3_128_hexdigest(unit.encode("utf-8", "surrogatepass")) + ".txt"
    body = bytes(texts.body)
    replace_file(folder / name, body, durable=False, mode=0o600)
    db.execute("insert or replace into texts values (?, ?, ?, ?, ?, ?, ?)",
               (unit, root, key, texts.meta(), name, len(body), signed(xxhash.xxh3_64_intdigest(body))))


def forget(db: sqlite3.Connection, folder: Path, units: list[str]) -> None:
    """Drop the kept texts of UNITS (their rows, then their files)."""
    names = [n for u in units for (n,) in db.execute("select name from texts where unit = ?", (u,))]
    db.executemany("delete from texts where unit = ?", [(u,) for u in units])
    for name in names:
        (folder / name).unlink(missing_ok=True)


def signed(value: int) -> int:
    """VALUE (a device, an inode, a 64-bit digest) as an SQLite integer holds it (signed)."""
    return value - (1 << 64) if value >= 1 << 63 else value
