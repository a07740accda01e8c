"""Recall: what an agent asks of its own session while it runs (docs/agents.md#the-recall-server).

Four read-only questions, each answered in a bounded document: the matches of a pattern in
what the compactions took out of the context (every event up to the last compaction, and the
segments archive: a catty session's own, or the one derived from a native file's compactions);
the exact text of events by seq, a cursor continuing what one answer could not hold; where the
context stands (`inspect`'s report, with the threshold); the session's tokens and cost (the
`usage` ledger, every call counted once). The MCP server (`mcp_server`) is a thin protocol
layer over these; nothing here knows of MCP.

The session is a path (a catty session or an agent's native file, read through `sources`) or,
when none is given, the newest session of a working folder — a transcript of its Claude Code
project or a Codex rollout started in it — looked up again at every call so that a `/clear` or
a new session is followed.
"""
from __future__ import annotations

import math
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ..errors import CattyError, DataError, UsageError
from ..formats.registry import get, home_folders
from ..inspect.session import inspect_session
from ..patterns import Pattern
from ..session.blobs import open_blob
from ..session.jsonl import raw_lines
from ..session.segments import grep_segments, native_segments
from ..sources import open_session
from ..usage.pipeline import usage
from ..writeback.claude import SLUG_LIMIT, project_folder_name
from .codex_sessions import newest_rollout
from .settings import RECALL_SERVER

if TYPE_CHECKING:
    from ..session.store import Session

TOOLS = ("recall_search", "recall_show", "context_status", "session_usage")
# What the model sees: Claude Code names an MCP tool `mcp__<server>__<tool>`; Codex lists the
# server as a namespace `mcp__<server, '-' as '_'>` holding the tools by their own names.
MODEL_TOOL_PREFIX = f"mcp__{RECALL_SERVER}__"
RECALL_SEARCH_TOOL = MODEL_TOOL_PREFIX + "recall_search"
RECALL_SHOW_TOOL = MODEL_TOOL_PREFIX + "recall_show"
CODEX_NAMESPACE = "mcp__" + RECALL_SERVER.replace("-", "_")

SEARCH_LIMIT = 20  # matches per answer unless asked for fewer or more
SEARCH_LIMIT_MAX = 50
PATTERN_MAX = 1000
CONTEXT_LINES = 2  # lines shown before and after a matching line
LINE_CHARS = 240  # a matching line is cut around the match to this many characters
CONTEXT_CHARS = 160  # ... and each line around it to this many
SHOW_CHARS = 20_000  # characters of event text per recall_show answer unless asked otherwise
SHOW_CHARS_MAX = 50_000
SHOW_EVENTS_MAX = 100  # events per recall_show answer
ROLLOUTS_READ_MAX = 200  # the newest rollouts whose first record is read to find the working folder's
BLOB_READ_MAX = 8 << 20  # an externalised payload larger than this is searched and shown in part


class RecallError(CattyError):
    """A question the session cannot answer (bad arguments, no such seq): said in one line."""


@dataclass
class _Opened:
    """A session kept open between calls while its file is unchanged (size and mtime)."""

    path: Path
    stamp: tuple[int, int]
    session: Session
    segments: Path | None = None
    segments_done: bool = False


@dataclass
class Recall:
    """The recall questions over one session: GIVEN (a path) or, when None, the newest session
    of CWD (`newest_session`; None: the process's working folder at each call) — or, with
    CODEX_HOME, the newest Codex rollout of CWD in that home."""

    given: str | None = None
    cwd: str | None = None
    codex_home: str | None = None
    _opened: _Opened | None = field(default=None, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    # -- which session ---------------------------------------------------------------------

    def target(self) -> Path:
        """The session a call reads now: the given path, or the project's newest transcript."""
        if self.given is not None:
            return Path(self.given)
        cwd = Path(self.cwd) if self.cwd is not None else Path.cwd()
        if self.codex_home is not None:
            return newest_rollout(cwd, Path(self.codex_home))
        return newest_session(cwd)

    def _open(self) -> _Opened:
        path = self.target()
        try:
            st = (path / "updates.jsonl").stat() if path.is_dir() else path.stat()
        except OSError as exc:
            raise DataError(f"cannot read the session ({exc.strerror})", path=str(path)) from None
        stamp = (st.st_size, st.st_mtime_ns)
        kept = self._opened
        if kept is not None and kept.path == path and kept.stamp == stamp:
            return kept
        self.close()

        self._opened = _Opened(path, stamp, open_session(path, warn=None))
        return self._opened

    def _segments(self, opened: _Opened) -> Path | None:
        """The folder whose segments/ holds the session's archive (None: it has none)."""
        if not opened.segments_done:
            session = opened.session
            if session.origin is not None:
                opened.segments = native_segments(session)
            elif session.directory is not None and (session.directory / "segments").is_dir():
                opened.segments = session.directory
            opened.segments_done = True
        return opened.segments

    def close(self) -> None:
        if self._opened is not None:
            self._opened.session.close()
            self._opened = None

    def _describe(self, opened: _Opened) -> dict[str, Any]:
        origin = opened.session.origin or {}
        return {"path": str(opened.path), "agent": origin.get("format", "catty"), "session_id": origin.get("session_id")}

    # -- the four questions -----------------------------------------------------------------

    def search(self, pattern: str, *, regex: bool = False, ignore_case: bool = False, limit: int = SEARCH_LIMIT) -> dict[str, Any]:
        """The matches of PATTERN before the last compaction (log and archive), oldest first."""
        rx = compile_pattern(pattern, regex, ignore_case)
        with self._lock:
            opened = self._open()
            return {"session": self._describe(opened),
                    **search_compacted(opened.session, rx, limit=limit, archive=lambda: self._segments(opened),
                                       pattern=pattern, regex=regex, ignore_case=ignore_case)}

    def show(self, *, seq: int | None = None, from_seq: int | None = None, to_seq: int | None = None, cursor: str | None = None,
             max_chars: int = SHOW_CHARS) -> dict[str, Any]:
        """The exact text of event SEQ, or of FROM_SEQ..TO_SEQ, or what CURSOR continues."""
        start, offset, end = show_range(seq, from_seq, to_seq, cursor)
        with self._lock:
            opened = self._open()
            return {"session": self._describe(opened), **show_events(opened.session, start, end, offset=offset, max_chars=max_chars)}

    def status(self) -> dict[str, Any]:
        """Where the context stands: `inspect`'s window, tokens, percent, compactions and largest
        items, and the tokens left until the compaction threshold."""
        with self._lock:
            opened = self._open()
            return {"session": self._describe(opened), **context_status(opened.session)}

    def usage(self) -> dict[str, Any]:
        """The session's tokens and cost by model, each provider call counted once."""
        with self._lock:
            opened = self._open()
            return {"session": self._describe(opened), **session_usage(opened.path)}


# -- the session of a working folder --------------------------------------------------------


def agent_homes(name: str) -> list[Path]:
    """The homes of agent format NAME (claude, codex) as the registry finds them: its variable
    (CLAUDE_CONFIG_DIR, CODEX_HOME), else its default folders."""
    return [Path(h) for h in home_folders(get(name), os.environ, os.path.expanduser("~"))]


def claude_project_dirs(cwd: Path) -> list[Path]:
    """The folders of each Claude Code home's `projects/` that may hold CWD's transcripts (for a
    name Claude Code cut and suffixed, every folder that begins as it does: its transcripts are
    then taken only when they say CWD is their working folder, `_claude_transcripts`)."""
    name = project_folder_name(str(cwd))
    out: list[Path] = []
    for home in agent_homes("claude"):
        projects = home / "projects"
        if len(name) <= SLUG_LIMIT:
            out.append(projects / name)
            continue
        try:
            out += sorted(p for p in projects.iterdir() if p.name.startswith(name[:SLUG_LIMIT]) and p.is_dir())
        except OSError:
            continue
    return out


def _claude_transcripts(cwd: Path) -> list[tuple[int, str, Path]]:
    found: list[tuple[int, str, Path]] = []
    cut = len(project_folder_name(str(cwd))) > SLUG_LIMIT  # folders found by a prefix: another project's may share it
    want = os.path.realpath(cwd)
    for folder in claude_project_dirs(cwd):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name.endswith(".jsonl") and not entry.name.startswith("agent-"):
                try:
                    if entry.is_file() and (not cut or _transcript_cwd(Path(entry.path)) == want):
                        found.append((entry.stat().st_mtime_ns, entry.name, Path(entry.path)))
                except OSError:
                    continue
    return found


def _transcript_cwd(path: Path, lines: int = 50) -> str | None:
    """The working folder a Claude Code transcript's first records name (resolved), if any."""
    try:
        for n, raw in enumerate(raw_lines(path, warn=None)):
            if n >= lines:
                break
            try:
                doc = orjson.loads(raw.data)
            except orjson.JSONDecodeError:
                continue
            if isinstance(doc, dict) and isinstance(doc.get("cwd"), str):
                return os.path.realpath(doc["cwd"])
    except (OSError, CattyError):
        return None
    return None


def _rollout_cwd(path: Path) -> str | None:
    """The working folder a main Codex rollout's first record (`session_meta`) names; None for a
    subagent's rollout or a file that does not start so."""
    try:
        first = orjson.loads(next(iter(raw_lines(path, warn=None))).data)
    except (StopIteration, OSError, CattyError, orjson.JSONDecodeError):
        return None
    meta = first.get("payload") if isinstance(first, dict) and first.get("type") == "session_meta" else None
    if not isinstance(meta, dict):
        return None
    source = meta.get("source")
    if (isinstance(source, dict) and "subagent" in source) or meta.get("thread_source") == "subagent":
        return None
    cwd = meta.get("cwd")
    return cwd if isinstance(cwd, str) else None


def _codex_rollouts(cwd: Path) -> list[tuple[int, str, Path]]:
    """The newest main rollout of the Codex homes whose working folder is CWD (at most one)."""
    files: list[tuple[int, str, Path]] = []
    for home in agent_homes("codex"):
        for path in (home / "sessions").glob("*/*/*/rollout-*.jsonl"):
            try:
                files.append((path.stat().st_mtime_ns, path.name, path))
            except OSError:
                continue
    want = os.path.realpath(cwd)
    for entry in sorted(files, reverse=True)[:ROLLOUTS_READ_MAX]:
        named = _rollout_cwd(entry[2])
        if named is not None and os.path.realpath(named) == want:
            return [entry]
    return []


def newest_session(cwd: Path) -> Path:
    """The most recently written main session of CWD: a transcript of its Claude Code project, or
    a Codex rollout started in it."""
    found = _claude_transcripts(cwd) + _codex_rollouts(cwd)
    if not found:
        where = ", ".join(str(p) for p in claude_project_dirs(cwd)[:2] + [h / "sessions" for h in agent_homes("codex")][:1])
        raise DataError(f"no Claude Code transcript or Codex rollout for the project of {cwd} (looked in {where}); "
                        "start the server with --session PATH to name one")
    return max(found)[2]


# -- recall_search ---------------------------------------------------------------------------


def compile_pattern(pattern: str, regex: bool, ignore_case: bool) -> Pattern:
    """PATTERN (a model's) with its matching time bounded (`patterns`): one line when it is bad or spends its budget."""
    if not pattern:
        raise RecallError("pattern is empty")
    if len(pattern) > PATTERN_MAX:
        raise RecallError(f"pattern is longer than {PATTERN_MAX} characters")
    try:
        return Pattern(pattern, regex=regex, ignore_case=ignore_case)
    except UsageError as exc:
        raise RecallError(str(exc)) from None


def _cut(line: str, start: int, width: int) -> str:
    if len(line) <= width:
        return line
    begin = max(0, min(start - width // 3, len(line) - width))
    return ("…" if begin else "") + line[begin:begin + width] + ("…" if begin + width < len(line) else "")


def event_text(ev: dict[str, Any], session: Session, limit: int = BLOB_READ_MAX) -> tuple[str, bool]:
    """What an event says, exactly (an externalised payload read back from its blob, at most
    LIMIT bytes of it), and whether it was cut there. An event without words of its own (usage,
    state, ...) is its JSON."""
    kind = ev["kind"]
    if "blob" in ev and kind in ("message", "tool_result") and session.directory is not None:
        whole = _blob_text(session.directory, str(ev["blob"]), limit)
        if whole is not None:
            return whole
    if kind == "message":
        return str(ev.get("text") or ""), False
    if kind == "tool_call":
        args = ev.get("args")
        return (args if isinstance(args, str) else orjson.dumps(args).decode()), False
    if kind == "tool_result":
        return str(ev.get("output") or ""), False
    if kind == "compaction":
        return str(ev.get("summary") or ""), False
    rest = {k: v for k, v in ev.items() if k not in ("seq", "id", "ts", "kind")}
    return orjson.dumps(rest, option=orjson.OPT_SORT_KEYS).decode(), False


def _blob_text(directory: Path, handle: str, limit: int) -> tuple[str, bool] | None:
    try:
        with open_blob(directory, handle) as f:
            data = f.read(limit + 1)
    except CattyError:
        return None  # the event's own preview stands in for a blob that cannot be read
    return data[:limit].decode("utf-8", "replace"), len(data) > limit


def event_role(ev: dict[str, Any], tools: dict[str, str]) -> str:
    """Who said it: user, assistant, system; `tool_call NAME`; `tool_result NAME` (the name of the
    call it answers); or the event's kind."""
    kind = ev["kind"]
    if kind == "message":
        return str(ev.get("role"))
    if kind == "tool_call":
        return f"tool_call {ev.get('name')}"
    if kind == "tool_result":
        name = tools.get(str(ev.get("call_id")))
        return f"tool_result {name}" if name else "tool_result"
    return str(kind)


def _line_matches(text: str, rx: Pattern) -> Iterator[dict[str, Any]]:
    if not rx.holds(text):
        return
    lines = text.splitlines() or [""]
    for n, line in enumerate(lines):
        m = rx.search(line)
        if m is None:
            continue
        before = [_cut(x, 0, CONTEXT_CHARS) for x in lines[max(0, n - CONTEXT_LINES):n]]
        after = [_cut(x, 0, CONTEXT_CHARS) for x in lines[n + 1:n + 1 + CONTEXT_LINES]]
        yield {"line_number": n + 1, "line": _cut(line, m.start(), LINE_CHARS), "before": before, "after": after}


def search_compacted(session: Session, rx: Pattern, *, limit: int = SEARCH_LIMIT, archive: Any = None,
                     pattern: str = "", regex: bool = False, ignore_case: bool = False) -> dict[str, Any]:
    """The first LIMIT matches of RX in the events the session's last compaction covers (its
    `through_seq` and before), each with seq, role or tool and the lines around it; then the
    archive's (ARCHIVE(): the folder of a segments/ archive, or None) matches at seqs the log does
    not hold. Matches after the last compaction are in the context already: not listed."""
    if not 1 <= limit <= SEARCH_LIMIT_MAX:
        raise RecallError(f"limit must be 1..{SEARCH_LIMIT_MAX}, not {limit}")
    found: list[dict[str, Any]] = []
    tools: dict[str, str] = {}
    through = -1
    compactions = 0
    seqs: set[int] = set()
    for ev in session.events(warn=None):
        kind = ev["kind"]
        if kind == "compaction" and ev.get("agent") is None:
            through = max(through, int(ev.get("through_seq", -1)))
            compactions += 1
            continue
        if kind == "tool_call":
            tools[str(ev.get("call_id"))] = str(ev.get("name"))
        if kind not in ("message", "tool_call", "tool_result"):
            continue
        seqs.add(ev["seq"])
        if len(found) > limit:
            continue  # enough matches: the rest of the log only moves the compaction line
        text, _cut_short = event_text(ev, session)
        for hit in _line_matches(text, rx):
            row = {"seq": ev["seq"], "role": event_role(ev, tools), "source": "log", **hit}
            if ev.get("agent") is not None:
                row["agent"] = ev["agent"]
            if ev.get("ts"):
                row["ts"] = ev["ts"]
            found.append(row)
            if len(found) > limit:
                break
    matches = [m for m in found if m["seq"] <= through]
    seqs = {s for s in seqs if s <= through}
    folder = archive() if archive is not None and compactions else None
    if folder is not None and len(matches) <= limit:
        for g in grep_segments(folder, pattern, matcher=rx):
            if g.seq is None or g.seq in seqs:
                continue  # a segment's heading and summary, or an event the log itself said exactly
            matches.append({"seq": g.seq, "role": g.role, "source": f"segment {g.segment}", "line_number": g.line_number,
                            "line": _cut(g.line, 0, LINE_CHARS), "before": [], "after": []})
            if len(matches) > limit:
                break
    more = len(matches) > limit
    return {"compactions": compactions, "compacted_through_seq": through if compactions else None,
            "matches": matches[:limit], "more": more,
            "note": _search_note(compactions, len(matches), more)}


def _search_note(compactions: int, count: int, more: bool) -> str:
    if not compactions:
        return "no compaction yet: everything the session said is still in the context"
    if not count:
        return "no match before the last compaction"
    how = f" (more beyond these: ask again with a narrower pattern or a larger limit, at most {SEARCH_LIMIT_MAX})" if more else ""
    return f"recall_show with a match's seq gives that event's exact text{how}"


# -- recall_show ------------------------------------------------------------------------------


def show_range(seq: int | None, from_seq: int | None, to_seq: int | None, cursor: str | None) -> tuple[int, int, int]:
    """(first seq, character offset in it, last seq) of a recall_show question."""
    if cursor is not None:
        if seq is not None or from_seq is not None or to_seq is not None:
            raise RecallError("give a cursor alone, or seq, or from_seq..to_seq")
        m = re.fullmatch(r"(\d{1,18}):(\d{1,18}):(\d{1,18})", cursor)
        if m is None:
            raise RecallError(f"not a cursor of recall_show: {cursor!r}")
        start, offset, end = (int(g) for g in m.groups())
        if end < start:
            raise RecallError(f"not a cursor of recall_show: {cursor!r}")
        return start, offset, end
    if seq is not None:
        if from_seq is not None or to_seq is not None:
            raise RecallError("give seq, or from_seq..to_seq, not both")
        from_seq = to_seq = seq
    if from_seq is None:
        raise RecallError("give seq, or from_seq (and to_seq), or a cursor")
    to_seq = from_seq if to_seq is None else to_seq
    if from_seq < 0 or to_seq < from_seq:
        raise RecallError(f"from_seq..to_seq must be a range of seqs (0 or more, from <= to), not {from_seq}..{to_seq}")
    return from_seq, 0, to_seq


def show_events(session: Session, start: int, end: int, *, offset: int = 0, max_chars: int = SHOW_CHARS) -> dict[str, Any]:
    """The events START..END, exactly, in at most MAX_CHARS characters of their text and
    SHOW_EVENTS_MAX events; `next_cursor` continues where this stopped (None: done). The text of
    START begins at character OFFSET (a cursor's)."""
    if not 1 <= max_chars <= SHOW_CHARS_MAX:
        raise RecallError(f"max_chars must be 1..{SHOW_CHARS_MAX}, not {max_chars}")
    out: list[dict[str, Any]] = []
    tools: dict[str, str] = {}
    left = max_chars
    last = -1
    cursor: str | None = None
    for ev in session.events(warn=None):
        last = ev["seq"]
        if ev["kind"] == "tool_call":
            tools[str(ev.get("call_id"))] = str(ev.get("name"))
        if last < start:
            continue
        if last > end:
            break
        if left <= 0 or len(out) >= SHOW_EVENTS_MAX:
            cursor = f"{last}:0:{end}"
            break
        text, blob_cut = event_text(ev, session)
        skip = offset if last == start else 0
        piece = text[skip:skip + left]
        row: dict[str, Any] = {"seq": last, "kind": ev["kind"], "role": event_role(ev, tools), "text": piece}
        for key in ("ts", "agent", "call_id", "is_error"):
            if ev.get(key) is not None:
                row[key] = ev[key]
        if skip:
            row["offset"] = skip
        if ev.get("blob") is not None:
            row["blob"] = ev["blob"]
        left -= len(piece)
        if skip + len(piece) < len(text):
            row["truncated"] = True
            out.append(row)
            cursor = f"{last}:{skip + len(piece)}:{end}"
            break
        if blob_cut:
            row["truncated"] = True  # past what is read back of a payload: `catty-ctx blob` gives it whole
        out.append(row)
    if not out and cursor is None:
        if last < 0:
            raise RecallError("the session holds no event")
        raise RecallError(f"no event with seq {start}" + (f"..{end}" if end != start else "") + f" (its seqs run 0..{last})")
    return {"events": out, "next_cursor": cursor}


# -- context_status and session_usage ------------------------------------------------------------


def context_status(session: Session) -> dict[str, Any]:
    """`inspect`'s report of the context (window, tokens, percent, compactions, largest items)
    and how far it is from the compaction threshold."""
    rep = inspect_session(session, parallel=False)
    window, tokens, threshold = rep["window"], rep["tokens"], rep["threshold"]
    at = math.ceil(window * threshold / 100) if window > 0 else 0  # the least total that reaches it (>=)
    last = rep["compactions"][-1] if rep["compactions"] else None
    return {
        "window": window,
        "tokens": tokens,
        "percent": rep["percent"],
        "tokens_from": rep["tokens_from"],
        "threshold_percent": threshold,
        "status": rep["status"],
        "threshold_tokens": at,
        "tokens_to_threshold": max(0, at - tokens),
        "compactions": len(rep["compactions"]),
        "last_compaction": last,
        "largest": rep["largest"],
        "turns": rep["turns"],
        "items": rep["items"],
    }


def session_usage(path: Path) -> dict[str, Any]:
    """The `usage` ledger of the session at PATH by model: tokens, calls and cost, every
    provider call counted once."""
    ledger, _scan = usage([path], by="model")
    doc = ledger.document()
    return {"totals": doc["totals"], "models": doc["rows"], "incomplete": doc["incomplete"], "calls_read": doc["calls_read"],
            "duplicates_dropped": doc["duplicates_dropped"], "prices_date": doc["prices_date"]}
