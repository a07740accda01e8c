"""A live agent transcript mirrored into a catty session, brought up to date incrementally, with
a segment archived at each compaction and the continuation state recorded (docs/agents.md).

The mirror is an ordinary catty session folder. Beside its log, `mirror.json` (the cursor)
records how far into the transcript it has read: the file cursor (`session.cursor`: the offset
of the last complete line, the transcript's device and inode, and fingerprints of the first and
of the last bytes before that offset). At each run only the bytes past the offset are read (plus
the two fingerprint windows, a few KiB), imported by the agent's importer as a file of their own, and appended through
`Session.append_locked` under the session lock, so an event already mirrored (same id) is never
written twice. A transcript whose fingerprints no longer match was rewritten or cut back: it is
imported whole and only what the mirror does not hold yet is appended. Nothing is ever removed
from the mirror, so it outlives the transcript being rewritten, truncated or deleted.

`sync(..., archive=True)` (a PreCompact) also archives the span since the previous archive as
the next segment (`compact.segments.write_segment`: the same index, keywords and seq range a
catty compaction writes) and records `continuation.json`, the state `continuation.AgentContinuation`
keeps event by event.
"""
from __future__ import annotations

import bisect
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError, UsageError
from ..importers.pipeline import import_events
from ..instructions import discover_instructions
from ..session.blobs import TOOL_LIMIT, USER_LIMIT, externalize, write_blob
from ..session.cursor import NEW, Cursor, look
from ..session.event_ids import KnownIds, event_key
from ..session.events import SPAN_KINDS, Event
from ..session.files import clear_dead_temps, replace_file
from ..session.jsonl import MAX_LINE_BYTES, last_newline_end, records
from ..session.layout import LOG_NAME
from ..session.segments import is_segment_name, read_index, write_segment
from ..session.store import Session, open_log_for_append, session_folder
from .continuation import VERSION as STATE_VERSION
from .continuation import AgentContinuation, render

CURSOR_NAME = "mirror.json"
PENDING = "pending"  # in the cursor file while an append it names is under way (see `_settle`)
STATE_NAME = "continuation.json"
CHUNK_NAME = ".appended.jsonl"  # the appended bytes, imported as a file of their own, then removed
CURSOR_VERSION = 1
BLOCK = 1 << 20
STEP = 4 << 20  # bytes of the transcript imported and appended at a time (bounds memory, keeps progress)
_SEQ_FIELDS = ("through_seq", "target_seq")
_EXTERNALIZED = ("message", "tool_result")
# Formats whose records only make sense after the file's first line (Codex: its session_meta).
NEEDS_FIRST_LINE = frozenset({"codex"})


@dataclass
class SyncReport:
    """What one run did: bytes of the transcript read, events appended, how it read them."""

    mode: str = "unchanged"  # first | append | rewritten | missing | unchanged
    bytes_read: int = 0
    appended: int = 0
    segment: int | None = None
    warning: str | None = None  # one line for stderr (the mirror kept everything)
    more: bool = False  # a step stopped before the transcript's end


def _session(mirror: Path) -> Session:
    log = mirror / LOG_NAME
    return Session(log_path=log, directory=mirror, display=str(log))


def read_cursor(mirror: Path) -> dict[str, Any] | None:
    try:
        doc = orjson.loads((mirror / CURSOR_NAME).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    return doc if isinstance(doc, dict) and doc.get("version") == CURSOR_VERSION else None


def _write_json(path: Path, doc: Any) -> None:
    replace_file(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


class _Reader:
    """The transcript's bytes, counted as they are read."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.read = 0
        self.cut = False  # the last copy stopped at its limit, before the end

    def at(self, start: int, length: int) -> bytes:
        data = os.pread(self.fd, max(length, 0), start) if length > 0 else b""
        self.read += len(data)
        return data

    def copy(self, start: int, size: int, out: Path, first_line: bytes = b"", limit: int = STEP) -> int:
        """Copy the lines of [START, SIZE) to OUT, stopping past LIMIT bytes once a line has
        ended; the end of the last whole line. A line longer than MAX_LINE_BYTES (the reader's
        bound) is left out alone (`skipped`: its start and length), so the records around it are
        still mirrored."""
        end = line_start = pos = start
        skipping = False
        self.skipped: list[tuple[int, int]] = []
        with open(out, "wb") as f:
            f.write(first_line)
            kept = f.tell()  # the file's end after the last whole line copied
            while pos < size and (pos - start < limit or end == start):
                room = limit - (pos - start)
                block = self.at(pos, min(BLOCK, size - pos, room) if room > 0 else min(BLOCK, size - pos))
                if not block:
                    break
                i = 0
                while i < len(block):
                    newline = block.find(b"\n", i)
                    stop = len(block) if newline < 0 else newline + 1
                    if not skipping and pos + stop - line_start > MAX_LINE_BYTES:
                        skipping = True
                        f.seek(kept)
                        f.truncate()
                    if not skipping:
                        f.write(block[i:stop])
                    if newline >= 0:
                        end = pos + stop
                        if skipping:
                            self.skipped.append((line_start, end - line_start))
                            skipping = False
                        line_start, kept = end, f.tell()
                    i = stop
                pos += len(block)
            f.truncate(kept)
        self.cut = pos < size
        return end

    def first_line(self, limit: int = 4 << 20) -> bytes:
        head = self.at(0, min(limit, os.fstat(self.fd).st_size))
        newline = head.find(b"\n")
        return head[: newline + 1] if newline >= 0 else b""


def _import_chunk(fmt: str, chunk: Path, mirror: Path, sid: str) -> list[Event]:
    events: list[Event] = []

    def sink(ev: Event) -> None:
        if ev["kind"] in _EXTERNALIZED:
            ev = externalize(ev, mirror, user_limit=USER_LIMIT, tool_limit=TOOL_LIMIT)
        events.append(ev)

    try:
        import_events(fmt, chunk, sink, blob_sink=lambda _h, data: _blob(mirror, data), lenient=True,
                      warn=lambda m: None, session_id=sid)
    except (DataError, UsageError):  # bytes with no conversation in them (the agent's bookkeeping records)
        return []
    return events


def _blob(mirror: Path, data: bytes) -> None:
    write_blob(mirror, data)  # content-addressed: the importer's handle


def _new_events(events: list[Event], session: Session, *, first: bool, appended: bool) -> list[Event]:
    """What of EVENTS the mirror does not hold. Appended bytes are all new; from a transcript
    imported whole again (rewritten), an event with an id is new when the log lacks the id, and
    one without (state, usage, reasoning) only once the first new one has come. An id comes
    once, as the append keeps it: the number of events named in PENDING is the number written."""
    known: KnownIds | set[bytes] = set() if first else KnownIds(session.log_path, last_newline_end(session.log_path))
    kept: list[Event] = []
    fresh = appended or first
    for ev in events:
        if not first and (ev["kind"] == "session" or (appended and ev["kind"] == "state" and ev.get("facet") == "prompt_context")):
            continue  # the session's own event and the per-file prompt context are the first import's
        key = event_key(ev)
        if key is not None:
            if key in known:
                continue
            known.add(key)
            fresh = True
        elif not fresh:
            continue
        kept.append(ev)
    return kept


def _renumber(events: list[Event], base: int) -> None:
    """Seq references inside EVENTS (importer numbering) → the mirror's numbering from BASE."""
    olds = [ev["seq"] for ev in events]
    for ev in events:
        for name in _SEQ_FIELDS:
            value = ev.get(name)
            if type(value) is int:
                at = bisect.bisect_right(olds, value) - 1
                ev[name] = base + at if at >= 0 else max(base - 1, 0)


def _append(session: Session, events: list[Event]) -> list[Event]:
    if not events:
        return []
    first = not session.log_path.exists() or last_newline_end(session.log_path) == 0
    if first:
        os.close(open_log_for_append(session.log_path, session.display))
    _renumber(events, 0 if first else session.next_seq())
    return session.append_locked([{k: v for k, v in ev.items() if k != "seq"} for ev in events], warn=None, skip_known_ids=True)


def _span(session: Session, cursor: dict[str, Any]) -> list[Event]:
    """The conversation events appended since the last archived segment."""
    start = cursor["archived_offset"] if type(cursor.get("archived_offset")) is int else 0
    through = cursor["archived_through"] if type(cursor.get("archived_through")) is int else -1
    end = last_newline_end(session.log_path)
    if not 0 <= start <= end:
        start = 0
    span: list[Event] = []
    with open(session.log_path, "rb") as f:
        f.seek(start)
        for ev in records(f, session.display, warn=None):
            if isinstance(ev, dict) and ev.get("kind") in SPAN_KINDS and isinstance(ev.get("seq"), int) and ev["seq"] > through:
                span.append(ev)
    cursor["archived_offset"] = end
    return span


def _archive(mirror: Path, session: Session, cursor: dict[str, Any], tracker: AgentContinuation, trigger: str | None) -> int | None:
    span = _span(session, cursor)
    if not span:
        return None
    done = read_index(mirror)
    _drop_unindexed(mirror, done)
    if done and type(done[-1].get("seq_to")) is int:  # a run killed after its segment, before its cursor: not archived twice
        span = [ev for ev in span if ev["seq"] > done[-1]["seq_to"]]
        if not span:
            cursor["archived_through"] = done[-1]["seq_to"]
            return None
    what = f"trigger {trigger}" if trigger else "a compaction"
    summary = (f"Archived by catty-ctx at the agent's PreCompact ({what}): events {span[0]['seq']}..{span[-1]['seq']} "
               "of the mirror, verbatim below.\n\n" + render(tracker.state()))
    info = write_segment(mirror, span, summary, compaction_id=f"precompact-{span[-1]['seq']}")
    cursor["archived_through"] = span[-1]["seq"]
    return info.segment


def _drop_unindexed(mirror: Path, rows: list[dict[str, Any]]) -> None:
    """Segment files numbered past the index's last row: an archive killed between its segment
    and the index left them (the span is written again, once; else `segment grep`, which reads
    every segment file, would meet its seqs twice)."""
    last = max((r["segment"] for r in rows if type(r.get("segment")) is int), default=-1)
    folder = session_folder(mirror / "segments")  # never a link out of the mirror
    for name in os.listdir(folder):
        if is_segment_name(name) and int(name[len("segment_"):-len(".md")]) > last:
            os.unlink(folder / name)


def _instructions(tracker: AgentContinuation, cwd: str | None) -> None:
    """Instruction files for the agent's working folder (the agent keeps them in its prompt,
    never in the transcript)."""
    if not cwd or not os.path.isdir(cwd):
        return

    try:
        tracker.add_instructions(part.path for part in discover_instructions(cwd).parts)
    except (OSError, UsageError, DataError):
        pass


def sync(mirror: Path, transcript: str | None, fmt: str, session_id: str, *, archive: bool = False,
         trigger: str | None = None, cwd: str | None = None, lock_timeout: float = 5.0, budget: float | None = None) -> SyncReport:
    """Bring MIRROR up to date with TRANSCRIPT (FMT, the agent's session SESSION_ID): read the
    bytes appended since the last run, append what is new; with ARCHIVE, archive the span since
    the previous archive as a segment; record the continuation state. The mirror keeps
    everything it held whatever became of the transcript (a rewrite, a cut, a deletion).

    The bytes are read in steps of STEP, each one appended and recorded before the next, so a
    long transcript read for the first time makes progress within any deadline: past BUDGET
    seconds no step starts, and the next run goes on from there."""
    report = SyncReport()
    session_folder(mirror)  # never a link out of the mirrors folder
    session = _session(mirror)
    stop_at = time.monotonic() + budget if budget is not None else None
    with session.lock(lock_timeout):
        cursor = read_cursor(mirror) or {}
        tracker = AgentContinuation.from_json(cursor.get("continuation")) if cursor else None
        if tracker is None:
            tracker = AgentContinuation()
            if _log_end(session) > 0:  # a mirror from before the cursor: its state from its own events
                for ev in session.events(warn=None):
                    tracker.track(ev)
        if PENDING in cursor:
            _settle(mirror, session, cursor, tracker)
        had_log = _log_end(session) > 0  # (after `_settle`: it may cut a batch cut short back to an empty log)
        for folder in (mirror, mirror / "blobs", mirror / "segments", session.quarantine_dir):
            clear_dead_temps(folder)  # what a killed hook left half-written
        _instructions(tracker, cwd)
        for step in range(1 << 30):
            done = SyncReport()
            written = _read_transcript(mirror, session, transcript, fmt, session_id, cursor, done, had_log)
            for ev in written:
                tracker.track(ev)
            report.appended += len(written)
            report.bytes_read += done.bytes_read
            if step == 0:
                report.mode = done.mode
            report.warning = done.warning or report.warning  # (a line left out is said whichever step met it)
            if not session.log_path.exists():
                return report  # nothing mirrored yet, nothing to keep
            had_log = True
            _record(mirror, cursor, tracker)
            if not done.more:
                break
            if stop_at is not None and time.monotonic() > stop_at:
                report.warning = (f"{transcript}: {cursor['offset']} of its bytes mirrored within the time budget; "
                                  "the next hook goes on from there")
                break
        if archive:
            report.segment = _archive(mirror, session, cursor, tracker, trigger)
            _record(mirror, cursor, tracker)
    return report


def _log_end(session: Session) -> int:
    return last_newline_end(session.log_path) if session.log_path.exists() else 0


def _settle(mirror: Path, session: Session, cursor: dict[str, Any], tracker: AgentContinuation) -> None:
    """A run killed between naming its append (PENDING: the log's end before it, the number of
    events, the cursor it earns) and recording the cursor. When the log holds that many whole
    lines past the end named, the batch landed: the cursor it earned is taken and its events are
    tracked. Else the same bytes are read again, from a log cut back to where the batch began.
    A kill inside the append's write never gets here with part of the batch in the log: taking
    the lock settled it (`batch.settle` cut it back to where the batch began). The cut here is
    for what that record, not fsynced, does not survive: a crash of the machine that kept part
    of the batch's pages (and a torn line the log held before the run, which the append would
    have moved to quarantine the same way). Either way no event is appended twice or lost."""
    pending = cursor.pop(PENDING)
    log_end = pending.get("log_end") if isinstance(pending, dict) else None
    size = session.log_path.stat().st_size if session.log_path.exists() else 0
    if type(log_end) is int and isinstance(pending.get("cursor"), dict) and 0 <= log_end < size:
        count = pending.get("events")
        with open(session.log_path, "rb") as f:
            f.seek(log_end)
            try:
                landed = list(records(f, session.display, warn=None))  # (one batch: a step's events)
            except DataError:  # a line past the end named that is not JSON: not the batch whole
                landed = []
        if landed and (type(count) is not int or len(landed) >= count):  # (a record without a count: every batch taken)
            cursor.update(pending["cursor"])
            for ev in landed:
                if isinstance(ev, dict):
                    tracker.track(ev)
        else:
            session.quarantine_tail(log_end, size, reason="a mirror batch cut short (read again from the transcript)")
    _record(mirror, cursor, tracker)


def _record(mirror: Path, cursor: dict[str, Any], tracker: AgentContinuation) -> None:
    """The cursor and the continuation state, as they stand (the state first: the cursor names
    what the mirror holds)."""
    cursor["version"] = CURSOR_VERSION
    cursor["continuation"] = tracker.as_json()
    _write_json(mirror / STATE_NAME, tracker.state())
    _write_json(mirror / CURSOR_NAME, cursor)


def _read_transcript(mirror: Path, session: Session, transcript: str | None, fmt: str, sid: str, cursor: dict[str, Any],
                     report: SyncReport, had_log: bool) -> list[Event]:
    """Import what TRANSCRIPT holds past the cursor (all of it when it was rewritten); the events
    appended. CURSOR is updated to the new offset and fingerprints."""
    if not transcript:
        return []
    path = os.path.abspath(transcript)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError as exc:
        report.mode = "missing"
        if had_log:
            report.warning = f"{path}: cannot read ({exc.strerror}); the mirror keeps what it holds"
            return []
        raise DataError(f"cannot read ({exc.strerror})", path=path) from None
    try:
        reader = _Reader(fd)
        st = os.fstat(fd)
        reading = look(Cursor.from_json(cursor) if cursor.get("transcript") == path else None, st, reader.at)
        same = reading.verdict != NEW
        start = reading.start
        if not same:
            cursor["filter_until"] = st.st_size  # up to here, the file may hold what the mirror holds
        filtering = had_log and start < cursor.get("filter_until", 0)
        if had_log and not same:
            report.warning = (f"{path}: rewritten or cut back since the last run; the mirror keeps what it holds "
                              "and takes what is new")
        chunk = mirror / CHUNK_NAME
        try:
            first_line = reader.first_line() if fmt in NEEDS_FIRST_LINE and start > 0 else b""
            end = reader.copy(start, st.st_size, chunk, first_line, STEP)
            events = _import_chunk(fmt, chunk, mirror, sid) if end > start else []
            # the new fingerprint windows: bytes just copied, read again (not counted) from the transcript
            moved = reading.advance(end, lambda at, n: os.pread(fd, n, at))
            for at, length in reader.skipped:
                report.warning = (f"{path}: the line at byte {at} is {length} bytes, longer than {MAX_LINE_BYTES}: left out of the "
                                  "mirror (the records around it are kept)")
        finally:
            try:
                chunk.unlink()
            except FileNotFoundError:
                pass
        report.bytes_read = reader.read
        fresh = _new_events(events, session, first=not had_log, appended=not filtering)
        advanced = {"transcript": path, **moved.as_json()}
        if fresh:  # the cursor the append earns, named before it: a kill between the two is told apart next run
            named = {"log_end": _log_end(session), "events": len(fresh), "cursor": advanced}
            _write_json(mirror / CURSOR_NAME, {**cursor, "version": CURSOR_VERSION, PENDING: named})  # (the first run's cursor too)
        written = _append(session, fresh)
        report.more = reader.cut and end > start
        report.mode = "first" if not had_log else "rewritten" if not same else "append" if written else "unchanged"
        cursor.update(advanced)
        return written
    finally:
        os.close(fd)


def load_state(mirror: Path) -> dict[str, Any]:
    """The continuation state the last run recorded (built from the mirror's events when none was)."""
    try:
        doc = orjson.loads((mirror / STATE_NAME).read_bytes())
        if isinstance(doc, dict) and doc.get("version") == STATE_VERSION:
            return doc
    except (OSError, orjson.JSONDecodeError):
        pass
    tracker = AgentContinuation()
    with Session.open(str(mirror)) as session:
        for ev in session.events(warn=None):
            tracker.track(ev)
    return tracker.state()
