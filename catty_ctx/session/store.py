"""The session store: open (dir | updates.jsonl | stdin), stream, append under the lock.

One reader and one writer for every command (docs/spec.md#the-session-directory, docs/spec.md#events).
The reader streams line by line and never holds the log in memory; the writer appends each
event as a single write under the session lock and keeps summary.json current through
temp + fsync + rename. The log is the source of truth; summary.json is a cache of it.
"""
from __future__ import annotations

import errno
import os
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

from ..defaults import DEFAULT_LOCK_TIMEOUT
from ..errors import DataError, LockBusy, UsageError, WriteError
from .batch import kept_copy, marked, settle, write_batch
from .event_ids import KnownIds, event_key, split_known
from .events import DEFAULT_WINDOW, SCHEMA_VERSION, Event, check_event, now_ts
from .files import FILE_MODE, check_replaceable, commit_staged, discard_staged, replace_file, stage_file, write_file
from .jsonl import STDIN_NAME, Warn, last_newline_end, numbered_lines, read_last_line, records, stderr_warning
from .layout import LOG_NAME, QUARANTINE_NAME, SUMMARY_NAME

_CHUNK = 1 << 20
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
MAX_SEQ = (1 << 63) - 1  # seqs are written as JSON integers of at most 64 bits


@dataclass
class Session:
    """A session on disk (a directory or a bare updates.jsonl) or a spooled stdin stream."""

    log_path: Path
    directory: Path | None = None
    display: str = ""
    stdin: bool = False
    _spool: tempfile.TemporaryDirectory[str] | None = field(default=None, repr=False)
    origin: dict[str, Any] | None = None  # another agent's session read in memory (`sources`): read-only
    refusal: str = ""  # ... and what a writer handed it says

    # -- opening -------------------------------------------------------------------------
    @classmethod
    def open(cls, target: str | os.PathLike[str], *, stdin: IO[bytes] | None = None) -> Session:
        """Open SESSION as the CLI names it: a directory, an updates.jsonl file, or '-'."""
        if str(target) == "-":
            return cls.from_stream(stdin if stdin is not None else sys.stdin.buffer)
        path = Path(target)
        if path.is_dir():
            log = path / LOG_NAME
            try:
                log.stat()
            except FileNotFoundError:
                pass
            except OSError as exc:  # (a folder that cannot be searched: named, never an internal error)
                raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None
            if log.exists() and not log.is_file():
                raise DataError("not a regular file", path=str(log))
            if not log.is_file():
                raise UsageError(f"{path}: not a session (no {LOG_NAME})")
            return cls(log_path=log, directory=path, display=str(log))
        if path.is_file():
            return cls(log_path=path, directory=path.parent if path.name == LOG_NAME else None, display=str(path))
        if path.exists():
            raise UsageError(f"{path}: not a regular file or directory")
        raise UsageError(f"{path}: no such session")

    @classmethod
    def from_stream(cls, stream: IO[bytes]) -> Session:
        """Spool a stream to a private temp file so it can be read more than once."""
        spool = tempfile.TemporaryDirectory(prefix="catty-ctx-")
        log = Path(spool.name) / LOG_NAME
        with open(log, "wb") as out:
            shutil.copyfileobj(stream, out, _CHUNK)
        return cls(log_path=log, directory=None, display=STDIN_NAME, stdin=True, _spool=spool)

    def close(self) -> None:
        if self._spool is not None:
            self._spool.cleanup()
            self._spool = None

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- paths ---------------------------------------------------------------------------
    @property
    def summary_path(self) -> Path | None:
        return self.directory / SUMMARY_NAME if self.directory is not None else None

    @property
    def lock_path(self) -> Path:
        return self.log_path.with_name(self.log_path.name + ".lock")

    @property
    def quarantine_dir(self) -> Path:
        if self.directory is not None:
            return self.directory / QUARANTINE_NAME
        return self.log_path.with_name(self.log_path.name + "." + QUARANTINE_NAME)

    def require_directory(self, command: str) -> Path:
        if self.directory is None:
            raise UsageError(f"{command} needs a session directory, not {self.display}")
        return self.directory

    # -- reading -------------------------------------------------------------------------
    def summary_bytes(self) -> bytes | None:
        """summary.json as it lies (None: there is none); one that cannot be read is a DataError naming it."""
        path = self.summary_path
        if path is None or not path.is_file():
            return None
        try:
            return path.read_bytes()
        except OSError as exc:
            raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None

    def summary(self) -> dict[str, Any] | None:
        data = self.summary_bytes()
        if data is None:
            return None
        try:
            doc = orjson.loads(data)
        except orjson.JSONDecodeError as exc:
            raise DataError(f"invalid JSON: {exc}", path=str(self.summary_path)) from None
        return doc if isinstance(doc, dict) else None

    def allowed_gaps(self) -> frozenset[int]:
        """Seqs of lines that `repair` moved to quarantine: the reader accepts their gap."""
        index = self.quarantine_dir / "index.jsonl"
        if self.quarantine_dir.is_symlink() or index.is_symlink():
            raise DataError("is a symbolic link; the list of accepted seq gaps is never read through one", path=str(index))
        if not index.is_file():
            return frozenset()
        gaps: set[int] = set()
        for _, line in numbered_lines(index, str(index), final="parses"):
            try:
                rec = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("seq"), int):
                gaps.add(rec["seq"])
        return frozenset(gaps)

    def events(
        self,
        *,
        warn: Warn | None = stderr_warning,
        validate: bool = True,
        progress: Callable[[int], None] | None = None,
    ) -> Iterator[Event]:
        """Stream validated events; the first invalid line raises DataError naming file:line.

        `progress`, when given, is called with the bytes read so far every few MiB.
        """
        values = records(self.log_path, self.display, warn=warn, progress=progress)
        if not validate:
            yield from values
            return
        gaps = self.allowed_gaps() if not self.stdin else frozenset()
        expect = 0
        display = self.display
        for lineno, ev in enumerate(values, 1):
            problem = check_event(ev)
            if problem is not None:
                raise DataError(problem, path=display, line=lineno)
            seq = ev["seq"]
            if seq != expect:
                problem = seq_problem(seq, expect, gaps)
                if problem is not None:
                    raise DataError(problem, path=display, line=lineno)
            if seq == 0 and ev["kind"] != "session":
                raise DataError(SEQ0_PROBLEM, path=display, line=lineno)
            expect = seq + 1
            yield ev
        if expect == 0:
            raise DataError("no events: a log starts with its session event", path=display)

    def first_event(self) -> Event | None:
        for ev in self.events(warn=None):
            return ev
        return None

    # -- writing -------------------------------------------------------------------------
    def lock(self, timeout: float = DEFAULT_LOCK_TIMEOUT, *, warn: Warn | None = stderr_warning) -> SessionLock:
        """The writer lock; taking it settles a batch a killed writer left cut short (`batch.settle`)."""
        if self.stdin:
            raise UsageError("cannot write to a stream read from stdin")
        if self.origin is not None:
            raise DataError(self.refusal or "another agent's session read in memory; nothing was changed", path=self.display)
        return SessionLock(self.lock_path, timeout, self.display, lambda: settle(self, warn))

    def append(
        self,
        events: Iterable[dict[str, Any]],
        *,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
        warn: Warn | None = stderr_warning,
        allow_duplicate_ids: bool = False,
    ) -> list[Event]:
        """Append events (kind + fields, or full envelopes) with contiguous seqs.

        Every event is checked before anything is written, and the batch lands whole or not
        at all, so bad input or a full disk never leaves a partial write. An event whose id is
        already in the log (see `event_ids`) is skipped, and said so through WARN, unless
        ALLOW_DUPLICATE_IDS. Returns the events as written.
        """
        pending = [dict(ev) for ev in events]
        with self.lock(lock_timeout, warn=warn):
            return self.append_locked(pending, warn=warn, skip_known_ids=not allow_duplicate_ids)

    def append_locked(self, pending: list[dict[str, Any]], *, warn: Warn | None, skip_known_ids: bool = False) -> list[Event]:
        """Append PENDING (envelopes filled in here); the caller already holds `self.lock()`,
        so it can read, decide and append as one step.

        Whatever can refuse the append is met before a byte changes: the log's last complete
        line, the events, summary.json (read, and its replacement staged on disk), the log
        opened for writing (never through a link). Only then is a torn tail moved to
        quarantine and the batch written, as one write; a write the disk cuts short is
        truncated away, so the log is left as it was, and one a kill cuts short is cut back by
        the next writer (`batch.marked`). summary.json is renamed in last."""
        if not pending:
            return []
        known = None
        if skip_known_ids and any(event_key(ev) is not None for ev in pending):
            known = KnownIds(self.log_path, last_newline_end(self.log_path))
            pending, skipped = split_known(pending, known)
            if skipped and warn:
                warn(f"{self.display}: {len(skipped)} event(s) already in the log (same id) not appended again")
            if not pending:
                return []
        next_seq = self.next_seq()  # from the last complete line: a torn tail is not counted
        written: list[Event] = []
        lines: list[bytes] = []
        for i, ev in enumerate(pending):
            out = prepare_event(ev, next_seq + i)
            problem = check_event(out)
            if problem is None and out["seq"] == 0 and out["kind"] != "session":
                problem = "the first event of a session must be its session event (use --create)"
            if problem is not None:
                raise DataError(f"event {i + 1}: {problem}")
            written.append(out)
            lines.append(orjson.dumps(out) + b"\n")
        batch = b"".join(lines)
        summary = self._summary_before_append()
        fd = open_log_for_append(self.log_path, self.display)
        staged: str | None = None
        try:
            start = last_newline_end(self.log_path)
            if summary is not None:
                staged = self._stage_summary(written, summary, start + len(batch))
            self.quarantine_torn_tail(warn)
            start = os.lseek(fd, 0, os.SEEK_END)
            with marked(self.log_path, fd, start, len(batch)):  # (a kill inside a write that crosses a page)
                write_batch(fd, batch, start, self.display)
        except BaseException:
            if staged is not None:
                discard_staged(staged)
            raise
        finally:
            os.close(fd)
        if staged is not None:
            try:
                commit_staged(staged, self.directory / SUMMARY_NAME)  # type: ignore[operator]  # staged only with a directory
            except OSError as exc:
                raise WriteError(f"{self.directory / SUMMARY_NAME}: cannot write ({exc.strerror}); the events are in the log") from None  # type: ignore[operator]  # (as above)
        if known is not None:
            known.save(start + len(batch))
        return written

    def next_seq(self) -> int:
        """1 + the seq of the last complete line (0 for an empty log)."""
        last = read_last_line(self.log_path)
        if last is None:
            return 0
        try:
            seq = orjson.loads(last)["seq"]
        except (orjson.JSONDecodeError, KeyError, TypeError):
            seq = None
        # Only a seq the log can hold: a string, a float (orjson reads a 20-digit number as
        # one) or a count past 64 bits would number the new events wrongly or fail to write.
        if type(seq) is not int or not 0 <= seq < MAX_SEQ:
            raise DataError("last line is not a valid event; run 'catty-ctx repair'", path=self.display)
        return seq + 1

    def quarantine_torn_tail(self, warn: Warn | None) -> Path | None:
        size = self.log_path.stat().st_size if self.log_path.exists() else 0
        if size == 0:
            return None
        with open(self.log_path, "rb") as f:
            if os.pread(f.fileno(), 1, size - 1) == b"\n":
                return None
        offset = last_newline_end(self.log_path)
        moved = self.quarantine_tail(offset, size, reason="torn final line")
        if warn:
            warn(f"{self.display}: torn final line ({size - offset} bytes at offset {offset}) moved to {moved}")
        return moved

    def quarantine_tail(self, offset: int, size: int, *, reason: str) -> Path:
        """The log's end [OFFSET, SIZE) moved to quarantine (copied there, then cut off; under the
        lock); a copy a killed writer already made is not made twice (`batch.kept_copy`)."""
        moved = kept_copy(self.quarantine_dir, offset, size, reason) or quarantine_bytes(self, offset, size, reason=reason)
        with open(self.log_path, "r+b") as f:
            f.truncate(offset)  # (flushes first)
            os.fsync(f.fileno())
        return moved

    def _summary_before_append(self) -> dict[str, Any] | None:
        """summary.json as the append will update it (None: a bare log has none), read and
        checked replaceable first, so a summary that is corrupt or cannot be rewritten refuses
        the append instead of failing after the event was committed."""
        if self.directory is None:
            return None
        path = self.directory / SUMMARY_NAME
        if path.is_symlink():
            raise WriteError(f"{path}: is a symbolic link; refusing to write through it")
        summary = self.summary() or {}
        try:
            check_replaceable(path)
        except OSError as exc:
            raise WriteError(f"{path}: cannot write ({exc.strerror})") from None
        return summary

    def _stage_summary(self, written: list[Event], summary: dict[str, Any], log_size: int) -> str:
        """summary.json as it will be after WRITTEN, staged on disk (see `files.stage_file`)."""
        if not summary:
            # A directory without summary.json gets one rebuilt from its session event.
            first = written[0] if written and written[0]["seq"] == 0 else self.first_event()
            summary = new_summary(first or {})
        for ev in written:
            if ev["kind"] == "session" and ev["seq"] == 0:
                summary.update(new_summary(ev))
            elif ev["kind"] == "message" and ev.get("role") == "user" and not ev.get("synthetic") and not summary.get("title"):
                summary["title"] = session_title(ev.get("text", ""))
            elif ev["kind"] == "usage" and not ev.get("agent") and ev.get("model"):
                summary["model"] = ev["model"]
        summary["updated_at"] = written[-1]["ts"] if written else now_ts()
        summary["last_seq"] = written[-1]["seq"]
        summary["events"] = written[-1]["seq"] + 1
        summary["log_size"] = log_size
        path = self.directory / SUMMARY_NAME  # type: ignore[operator]  # a session that writes has a directory
        try:
            return stage_file(path, summary_document(summary))
        except OSError as exc:
            raise WriteError(f"{path}: cannot write ({exc.strerror})") from None


def open_log_for_append(path: Path, display: str) -> int:
    """The log opened to append, never through a symbolic link nor onto anything but a
    regular file (WriteError, exit 73)."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise WriteError(f"{display}: is a symbolic link; a log is never written through one") from None
        raise WriteError(f"{display}: cannot append ({exc.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise WriteError(f"{display}: not a regular file; refusing to append")
    return fd


class SessionLock:
    """The per-session writer lock (filelock: readers never need it)."""
    def __init__(self, path: Path, timeout: float, display: str, settle: Callable[[], object] | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self.display = display
        self.settle = settle  # run once the lock is held, before the holder reads the log
        self._lock: Any = None

    def __enter__(self) -> SessionLock:
        import filelock

        self._lock = filelock.FileLock(str(self.path), timeout=self.timeout)
        try:
            self._lock.acquire()
        except filelock.Timeout:
            raise LockBusy(
                f"{self.display}: session is locked by another writer (waited {self.timeout:g}s); try again"
            ) from None
        except OSError as exc:
            raise WriteError(f"{self.path}: cannot take the session lock ({exc.strerror})") from None
        if self.settle is not None:
            try:
                self.settle()
            except BaseException:
                self._lock.release()
                raise
        return self

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


# -- helpers shared by readers and writers ---------------------------------------------------


SEQ0_PROBLEM = "seq 0 must be the session event"


def seq_problem(seq: int, expect: int, gaps: frozenset[int]) -> str | None:
    """Why SEQ cannot come where EXPECT is next (the quarantined seqs in GAPS may be missing); None: it can."""
    while expect in gaps and expect < seq:
        expect += 1
    return None if seq == expect else f"seq {seq} where {expect} was expected"


def quarantine_bytes(session: Session, start: int, end: int, *, reason: str, seq: int | None = None, lineno: int | None = None) -> Path:
    """Copy log bytes [start, end) into the session's quarantine folder (fsynced) and index them."""
    qdir = session_folder(session.quarantine_dir)
    target = qdir / f"offset-{start}.bin"
    n = 1
    while target.exists():  # two crashes at the same offset must not overwrite each other
        target = qdir / f"offset-{start}.{n}.bin"
        n += 1
    def fill(out: IO[bytes]) -> None:  # by chunks: a torn tail may be as long as the disk allows
        with open(session.log_path, "rb") as src:
            src.seek(start)
            left = end - start
            while left > 0 and (chunk := src.read(min(left, _CHUNK))):
                out.write(chunk)
                left -= len(chunk)

    try:
        write_file(target, fill)
    except OSError as exc:
        raise WriteError(f"{target}: cannot write ({exc.strerror})") from None
    record: dict[str, Any] = {"file": target.name, "offset": start, "bytes": end - start, "reason": reason, "ts": now_ts()}
    if seq is not None:
        record["seq"] = seq
    if lineno is not None:
        record["line"] = lineno
    append_quarantine_record(session, record)
    return target


def append_quarantine_record(session: Session, record: dict[str, Any]) -> None:
    """One line of quarantine/index.jsonl, appended and fsynced (a record with "seq" is a gap readers accept)."""
    qdir = session_folder(session.quarantine_dir)
    try:
        fd = os.open(qdir / "index.jsonl", os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), FILE_MODE)
    except OSError as exc:
        raise WriteError(f"{qdir / 'index.jsonl'}: cannot write ({exc.strerror})") from None
    try:
        os.write(fd, orjson.dumps(record) + b"\n")
        os.fsync(fd)
    finally:
        os.close(fd)


def session_folder(path: Path) -> Path:
    """A folder of a session that a writer puts files in (quarantine/, blobs/, segments/,
    compaction_requests/), made when missing. A symbolic link there, or anything but a
    folder, is refused (WriteError): no write ever follows a link out of the session."""
    try:
        os.mkdir(path)
    except FileExistsError:
        pass
    except OSError as exc:
        raise WriteError(f"{path}: cannot create ({exc.strerror})") from None
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise WriteError(f"{path}: is a symbolic link or not a folder; refusing to write through it")
    return path


def prepare_event(ev: dict[str, Any], seq: int) -> Event:
    """Give an input event its envelope: v and seq assigned, ts kept or stamped now."""
    out: Event = {"v": SCHEMA_VERSION, "seq": seq, "ts": ev.get("ts") or now_ts(), "kind": ev.get("kind")}
    for key, value in ev.items():
        if key not in ("v", "seq", "ts", "kind"):
            out[key] = value
    return out


def new_summary(session_event: dict[str, Any]) -> dict[str, Any]:
    ts = session_event.get("ts") or now_ts()
    return {
        "schema": SCHEMA_VERSION,
        "session_id": session_event.get("session_id"),
        "parent_session_id": session_event.get("parent_session_id"),
        "forked_from_seq": session_event.get("forked_from_seq"),
        "created_at": ts,
        "updated_at": ts,
        "model": session_event.get("model"),
        "window": session_event.get("window") or DEFAULT_WINDOW,
        "cwd": session_event.get("cwd"),
        "title": "",
        "source": session_event.get("source"),
        "events": 1,
        "last_seq": 0,
    }


def session_title(text: str) -> str:
    """A session's title in summary.json: the first user text on one line, at most 80 characters."""
    line = " ".join(text.split())
    return line[:80] + ("…" if len(line) > 80 else "")


def atomic_write(path: Path, data: bytes) -> None:
    """Whole-file rewrite through temp + fsync + rename; errors become WriteError (exit 73)."""
    try:
        replace_file(path, data)
    except OSError as exc:
        raise WriteError(f"{path}: cannot write ({exc.strerror})") from None


def summary_document(summary: dict[str, Any]) -> bytes:
    return orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n"


def session_window(session: Session, session_event: Event | None = None) -> int:
    """summary.json's window, else the session event's, else the default (docs/spec.md#events)."""
    summary = session.summary()
    if summary and isinstance(summary.get("window"), int) and summary["window"] > 0:
        return summary["window"]
    if session_event and isinstance(session_event.get("window"), int) and session_event["window"] > 0:
        return session_event["window"]
    return DEFAULT_WINDOW
