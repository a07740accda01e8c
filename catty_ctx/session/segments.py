"""The segments archive: every compacted span kept verbatim and searchable (docs/design.md#m4).

A compaction in segments mode writes `segments/segment_NNN.md` (banner, metadata,
statistics, the summary, then the span's turns at a detail level) and refreshes
`segments/index.json` and `segments/INDEX.md`, all before its event is appended and all
under the session lock, so numbering never races and a crash leaves at worst an
unreferenced segment (grok-build writes segment and index non-atomically: docs/design.md#w8).
Reading goes through `segment_path`, which refuses any name that is not a segment of
this session.
"""
from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from ..defaults import SEGMENT_CAP, SEGMENT_DETAIL, SEGMENT_DETAILS, SEGMENT_KEYWORDS
from ..errors import DataError, UsageError
from ..patterns import Pattern
from .events import SPAN_KINDS, Event, now_ts
from .store import atomic_write, session_folder

DETAILS = SEGMENT_DETAILS
BALANCED_TEXT = 2000
BALANCED_TOOL = 500
MAX_KEYWORDS = SEGMENT_KEYWORDS
FILE_KEYS = ("target_file", "file_path", "path", "target_directory", "filename", "file")
_GREP_BATCH = 512  # segment lines a pattern is asked of at once
_SEGMENT_NAME = re.compile(r"^segment_(\d{3,})\.md$")
_HEADER = re.compile(r"^#### \[seq (\d+)\] (\S+)")
_SPAN = re.compile(r"^- seq: (\d+)\.\.(\d+)$")
INDEX_FILES = ("index.json", "INDEX.md")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]{2,}")
_STOPWORDS = frozenset(
    ["the", "and", "for", "with", "that", "this", "from", "into", "then", "than", "were", "was", "are", "have", "has", "had", "not", "but", "you", "your", "its", "our", "out", "all", "any", "can", "will", "would", "should", "could", "been", "being", "what", "when", "where", "which", "while", "who", "how", "why", "also", "just", "only", "some", "more", "most", "such", "very", "each", "other", "about", "after", "before", "over", "under", "again", "once", "here", "there", "these", "those", "them", "they", "their", "then", "now", "current", "work", "working", "task", "tasks", "file", "files", "code", "user", "users", "assistant", "tool", "tools", "result", "results", "summary", "session"]
)


@dataclass
class SegmentInfo:
    segment: int
    file: str
    seq_from: int
    seq_to: int
    turns: int
    bytes: int
    keywords: list[str]
    tools: dict[str, int]
    files: list[str]
    errors: int
    roles: dict[str, int]
    detail: str
    created_at: str
    compaction_id: str | None
    truncated: bool

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


# -- rendering ---------------------------------------------------------------------------


def _fence(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`{3,}", text)), default=2)
    return "`" * (longest + 1)


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters; the full text is in updates.jsonl]"


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else orjson.dumps(args, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS).decode()


def _call_line(ev: Event) -> str:
    args = ev.get("args")
    if isinstance(args, dict):
        parts = []
        for key, value in list(args.items())[:3]:
            shown = value if isinstance(value, str) else orjson.dumps(value).decode()
            parts.append(f'{key}="{" ".join(str(shown).split())[:60]}"')
        return f"{ev['name']}({', '.join(parts)})"
    return f"{ev['name']}({' '.join(str(args).split())[:80]})"


def _render_event(ev: Event, detail: str) -> str:
    """One event as markdown; every block starts with a `#### [seq N] role` line for grep."""
    kind = ev["kind"]
    seq = ev["seq"]
    if kind == "message":
        role = ev["role"]
        text = ev.get("text", "")
        if detail == "minimal":
            return f"#### [seq {seq}] {role}: {' '.join(text.split())[:120]}\n"
        if detail == "balanced" and role == "assistant":
            text = _clip(text, BALANCED_TEXT)
        synthetic = f" (synthetic: {ev['synthetic']})" if ev.get("synthetic") else ""
        return f"#### [seq {seq}] {role}{synthetic}\n\n{text}\n"
    if kind == "tool_call":
        if detail == "minimal":
            return f"#### [seq {seq}] tool_call {_call_line(ev)}\n"
        body = _args_text(ev.get("args"))
        if detail == "balanced":
            body = _clip(body, BALANCED_TOOL)
        f = _fence(body)
        return f"#### [seq {seq}] tool_call {ev['name']} ({ev['call_id']})\n\n{f}json\n{body}\n{f}\n"
    if kind == "tool_result":
        output = ev.get("output") or (f"[stored as blob {ev['blob']}]" if ev.get("blob") else "")
        status = "error" if ev.get("is_error") else "ok"
        if detail == "minimal":
            return f"#### [seq {seq}] tool_result {ev['call_id']} → {status}, {len(output)} chars\n"
        if detail == "balanced":
            output = _clip(output, BALANCED_TOOL)
        f = _fence(output)
        return f"#### [seq {seq}] tool_result ({ev['call_id']}, {status})\n\n{f}\n{output}\n{f}\n"
    return ""


def _keywords(summary: str) -> list[str]:
    """Identifier-like words of the summary's Current Work section (else the whole summary)."""
    m = re.search(r"(?ims)^#*\s*\d*\.?\s*current work\s*:?\s*$(.*?)(?=^#+\s|\Z)", summary)
    text = m.group(1) if m else summary
    counts: Counter[str] = Counter()
    order: dict[str, int] = {}
    for i, w in enumerate(_WORD.findall(text)):
        w = w.strip("./-")
        key = w.lower()
        if len(w) < 3 or key in _STOPWORDS or w.isdigit():
            continue
        counts[w] += 1
        order.setdefault(w, i)
    ranked = sorted(counts, key=lambda w: (-counts[w], order[w]))
    return ranked[:MAX_KEYWORDS]


def span_stats(events: list[Event]) -> dict[str, Any]:
    roles: Counter[str] = Counter()
    tools: Counter[str] = Counter()
    files: dict[str, None] = {}
    errors = 0
    turns = 0
    for ev in events:
        kind = ev["kind"]
        if kind == "message":
            roles[ev["role"]] += 1
            if ev["role"] == "user" and not ev.get("synthetic"):
                turns += 1
        elif kind == "tool_call":
            roles["tool_call"] += 1
            tools[ev["name"]] += 1
            args = ev.get("args")
            if isinstance(args, dict):
                for key in FILE_KEYS:
                    if isinstance(args.get(key), str):
                        files.setdefault(args[key])
        elif kind == "tool_result":
            roles["tool_result"] += 1
            if ev.get("is_error") or str(ev.get("output", "")).startswith("Error"):
                errors += 1
    return {"roles": dict(sorted(roles.items())), "tools": dict(tools.most_common()), "files": list(files), "errors": errors, "turns": turns}


def render_segment(
    number: int,
    events: list[Event],
    summary: str,
    *,
    detail: str = SEGMENT_DETAIL,
    created_at: str | None = None,
    compaction_id: str | None = None,
    cap: int = SEGMENT_CAP,
) -> tuple[str, SegmentInfo]:
    """The markdown of one segment and its index entry."""
    if detail not in DETAILS:
        raise UsageError(f"unknown detail level '{detail}' (choose {', '.join(DETAILS)})")
    created_at = created_at or now_ts()
    stats = span_stats(events)
    seq_from = events[0]["seq"] if events else 0
    seq_to = events[-1]["seq"] if events else 0
    name = f"segment_{number:03d}.md"
    tools = ", ".join(f"{n} ({c})" for n, c in stats["tools"].items()) or "none"
    head = [
        f"# Segment {number:03d}",
        "",
        "> Historical record, read-only: this is a verbatim archive of conversation that was",
        "> compacted away. Do not edit it. Search it with `catty-ctx segment grep SESSION TEXT`",
        f"> or read it with `catty-ctx segment show SESSION {number}`.",
        "",
        "## Metadata",
        "",
        f"- segment: {number}",
        f"- seq: {seq_from}..{seq_to}",
        f"- events: {len(events)}",
        f"- turns: {stats['turns']}",
        f"- created: {created_at}",
        f"- detail: {detail}",
    ]
    if compaction_id:
        head.append(f"- compaction: {compaction_id}")
    head += [
        "",
        "## Statistics",
        "",
        "- by role: " + (", ".join(f"{r} {c}" for r, c in stats["roles"].items()) or "none"),
        f"- tools used: {tools}",
        "- files: " + (", ".join(stats["files"]) or "none"),
        f"- tool errors: {stats['errors']}",
        "",
        "## Summary",
        "",
        summary.strip(),
        "",
    ]
    text = "\n".join(head)
    truncated = False
    if detail != "none":
        parts = [text, "## Turns\n"]
        size = len(text.encode()) + 12
        for i, ev in enumerate(events):
            block = _render_event(ev, detail)
            if not block:
                continue
            block_bytes = len(block.encode()) + 1
            if size + block_bytes > cap - 200:
                rest = len(events) - i
                parts.append(f"\n[Segment capped at {cap} bytes: {rest} more events, seq {ev['seq']}..{seq_to}, are in updates.jsonl.]\n")
                truncated = True
                break
            parts.append(block)
            size += block_bytes
        text = "\n".join(parts)
    size_bytes = len(text.encode())
    info = SegmentInfo(
        segment=number,
        file=name,
        seq_from=seq_from,
        seq_to=seq_to,
        turns=stats["turns"],
        bytes=size_bytes,
        keywords=_keywords(summary),
        tools=stats["tools"],
        files=stats["files"],
        errors=stats["errors"],
        roles=stats["roles"],
        detail=detail,
        created_at=created_at,
        compaction_id=compaction_id,
        truncated=truncated,
    )
    return text, info


# -- the archive on disk -------------------------------------------------------------------


def segments_dir(session_dir: Path) -> Path:
    return session_dir / "segments"


def read_index(session_dir: Path) -> list[dict[str, Any]]:
    path = segments_dir(session_dir) / "index.json"
    if not path.is_file() or path.is_symlink():
        return []
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise DataError(f"invalid JSON: {exc.msg}", path=str(path)) from None
    rows = doc.get("segments") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise DataError("has no list of 'segments'", path=str(path))
    for n, row in enumerate(rows, 1):
        problem = row_problem(row)
        if problem is not None:
            raise DataError(f"row {n}: {problem}", path=str(path))
    return rows


# What the readers of index.json take from a row, and its type (`int` never a bool).
_ROW_FIELDS: dict[str, tuple[type, ...]] = {
    "segment": (int,), "file": (str,), "seq_from": (int,), "seq_to": (int,), "turns": (int,), "bytes": (int,),
    "keywords": (list,), "tools": (dict,), "files": (list,), "errors": (int,), "roles": (dict,), "detail": (str,),
    "created_at": (str,), "compaction_id": (str, type(None)), "truncated": (bool,),
}


def row_problem(row: Any) -> str | None:
    """What is wrong with one row of index.json (None: nothing): it is read before use."""
    if type(row) is not dict:
        return "not an object"
    for name in ("segment", "file"):
        if name not in row:
            return f"lacks '{name}'"
    for name, types in _ROW_FIELDS.items():
        if name in row and type(row[name]) not in types:
            return f"'{name}' has the wrong type"
    if row["segment"] < 0 or not _SEGMENT_NAME.match(row["file"]):
        return "'segment' or 'file' is not a segment's"
    if any(type(k) is not str for k in row.get("keywords") or ()):
        return "'keywords' holds a non-string"
    return None


def next_number(session_dir: Path) -> int:
    """Highest segment on disk (or in the index) + 1, from 0."""
    numbers = [int(m.group(1)) for p in _listdir(segments_dir(session_dir)) if (m := _SEGMENT_NAME.match(p))]
    numbers += [r["segment"] for r in read_index(session_dir) if isinstance(r.get("segment"), int)]
    return max(numbers) + 1 if numbers else 0


def _listdir(path: Path) -> list[str]:
    try:
        return sorted(os.listdir(path))
    except (FileNotFoundError, NotADirectoryError):
        return []


def _index_md(rows: list[dict[str, Any]]) -> str:
    lines = [
        "# Segments index",
        "",
        "Verbatim archives of compacted conversation, oldest first. Search them with",
        "`catty-ctx segment grep SESSION TEXT`.",
        "",
        "| Segment | File | Turns | Approx bytes | Keywords |",
        "| --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        kw = ", ".join(r.get("keywords") or []).replace("|", "\\|")
        lines.append(f"| {r['segment']:03d} | {r['file']} | {r.get('turns', 0)} | {r.get('bytes', 0)} | {kw} |")
    return "\n".join(lines) + "\n"


def write_segment(session_dir: Path, events: list[Event], summary: str, *, detail: str = SEGMENT_DETAIL,
                  compaction_id: str | None = None, created_at: str | None = None) -> SegmentInfo:
    """Write the next segment, then index.json and INDEX.md. The caller holds the session lock."""
    seg_dir = session_folder(segments_dir(session_dir))  # never a link out of the session
    old_rows = read_index(session_dir)  # a broken index refuses the compaction before the segment is written
    number = next_number(session_dir)
    text, info = render_segment(number, events, summary, detail=detail, created_at=created_at, compaction_id=compaction_id)
    atomic_write(seg_dir / info.file, text.encode())
    rows = [r for r in old_rows if r.get("segment") != number] + [info.as_dict()]
    write_index(seg_dir, rows)
    return info


def write_index(seg_dir: Path, rows: list[dict[str, Any]]) -> None:
    """index.json and INDEX.md of a segments folder, from its rows (oldest first)."""
    rows = sorted(rows, key=lambda r: r.get("segment", 0))
    atomic_write(seg_dir / "index.json", orjson.dumps({"segments": rows}, option=orjson.OPT_INDENT_2) + b"\n")
    atomic_write(seg_dir / "INDEX.md", _index_md(rows).encode())


def is_segment_name(name: str) -> bool:
    return _SEGMENT_NAME.match(name) is not None


def segment_span(path: Path, row: dict[str, Any] | None = None) -> tuple[int, int] | None:
    """The seqs a segment covers: from its index row, else from its own metadata; None when
    neither says."""
    if row is not None and isinstance(row.get("seq_from"), int) and isinstance(row.get("seq_to"), int):
        return row["seq_from"], row["seq_to"]
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for n, line in enumerate(f):
                m = _SPAN.match(line.rstrip("\n"))
                if m:
                    return int(m.group(1)), int(m.group(2))
                if n > 40 or line.startswith("## Turns"):  # the metadata block is at the top
                    return None
    except OSError:
        return None
    return None


def segment_path(session_dir: Path, name: str | int) -> Path:
    """The file of segment NAME (a number, or segment_NNN.md), refusing anything else."""
    text = str(name)
    m = _SEGMENT_NAME.match(text)
    if m:
        number = int(m.group(1))
    elif text.isdigit():
        number = int(text)
    else:
        raise UsageError(f"'{text}' is not a segment number (segments are named segment_NNN.md)")
    seg_dir = segments_dir(session_dir)
    path = seg_dir / f"segment_{number:03d}.md"
    if path.is_symlink() or seg_dir.is_symlink():
        raise UsageError(f"segment {number} is a symbolic link; refusing to follow it out of the session")
    if not path.is_file():
        raise UsageError(f"{session_dir}: no segment {number}")
    real_dir = os.path.realpath(seg_dir)
    if os.path.dirname(os.path.realpath(path)) != real_dir or os.path.commonpath([real_dir, os.path.realpath(session_dir)]) != os.path.realpath(session_dir):
        raise UsageError(f"segment {number} lies outside the session")
    return path


def open_segment(path: Path, binary: bool = False) -> IO[Any]:
    """A segment opened for reading (text with bad bytes replaced, or binary); what keeps it
    from being read is a DataError naming it."""
    try:
        return open(path, "rb") if binary else open(path, encoding="utf-8", errors="replace")
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None


def list_segments(session_dir: Path) -> list[dict[str, Any]]:
    """The index rows; a segment file missing from the index is listed from its own metadata."""
    rows = {r["segment"]: r for r in read_index(session_dir) if isinstance(r.get("segment"), int)}
    for fname in _listdir(segments_dir(session_dir)):
        m = _SEGMENT_NAME.match(fname)
        if m and int(m.group(1)) not in rows:
            path = segment_path(session_dir, fname)
            rows[int(m.group(1))] = {"segment": int(m.group(1)), "file": fname, "bytes": path.stat().st_size, "keywords": [], "indexed": False}
    return [rows[k] for k in sorted(rows)]


@dataclass
class Match:
    segment: int
    seq: int | None
    role: str | None
    line_number: int
    line: str

    def as_dict(self) -> dict[str, Any]:
        return {"segment": self.segment, "seq": self.seq, "role": self.role, "line_number": self.line_number, "line": self.line}


def grep_segments(session_dir: Path, pattern: str, *, ignore_case: bool = False, regex: bool = False,
                  matcher: Pattern | None = None) -> Iterator[Match]:
    """Lines of every segment matching a fixed string (or a regular expression with regex=True,
    its matching time bounded: `patterns`); MATCHER, a caller's compiled pattern (and budget)."""
    compiled = matcher if matcher is not None else Pattern(pattern, regex=regex, ignore_case=ignore_case)
    yield from matching_lines(compiled, segment_lines(session_dir))


def segment_lines(session_dir: Path) -> Iterator[Match]:
    """Every line of every segment, with the seq and role of the event it belongs to."""
    for row in list_segments(session_dir):
        path = segment_path(session_dir, row["segment"])
        seq: int | None = None
        role: str | None = None
        with open_segment(path) as f:
            for n, line in enumerate(f, 1):
                line = line.rstrip("\n")
                header = _HEADER.match(line)
                if header:
                    seq, role = int(header.group(1)), header.group(2).rstrip(":")
                yield Match(row["segment"], seq, role, n, line)


def matching_lines(compiled: Pattern, lines: Iterable[Match]) -> Iterator[Match]:
    """The LINES that match: the pattern is asked of _GREP_BATCH of them at once first (see `Pattern.holds`)."""
    batch: list[Match] = []
    for m in lines:
        batch.append(m)
        if len(batch) == _GREP_BATCH:
            yield from _matching(compiled, batch)
            batch = []
    yield from _matching(compiled, batch)


def _matching(compiled: Pattern, lines: list[Match]) -> Iterator[Match]:
    if lines and compiled.holds("\n".join(m.line for m in lines)):
        yield from (m for m in lines if compiled.search(m.line))


def native_segments(session: Any) -> Path:
    """The segments a native session's own compactions left out (`sources`: another agent's
    session read in memory), derived into its private spool, never beside the source: each
    compaction the agent recorded (Claude Code's `compact_boundary` and summary, Codex's
    `compacted`) archives the span since the one before it, with the seqs `inspect FILE --seq N`
    prints. The folder to read them from (the spool lives as long as SESSION)."""
    folder = session.log_path.parent
    span: list[Event] = []
    for ev in session.events(warn=None):
        if ev["kind"] == "compaction":
            through = ev["through_seq"]
            write_segment(folder, [e for e in span if e["seq"] <= through], ev.get("summary") or "",
                          compaction_id=ev.get("id"), created_at=ev.get("ts"))
            span = [e for e in span if e["seq"] > through]
        elif ev["kind"] in SPAN_KINDS:
            span.append(ev)
    return folder
