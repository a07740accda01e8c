"""The segments archive: every compacted span kept as a readable file (reference 3.4).

A summary is lossy; in segments mode each compaction also writes `segments/segment_NNN.md`
(banner, metadata, statistics, the summary, the turns at a chosen detail level, capped at
512 KiB at whole items) and refreshes `segments/INDEX.md` and `segments/index.json`.
Unlike grok-build (weakness #8), numbering and every write happen under the session lock,
each file is replaced atomically, and the index lists only segments whose compaction event
was committed, so a crash mid-compaction never shows a segment that does not count.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

import orjson

from ..errors import DataError, UsageError
from ..events import now_ts
from ..fingerprint import canonical
from ..store import atomic_write
from ..view import scan_markers
from .continuation import call_path

SEGMENTS_DIR = "segments"
INDEX_MD = "INDEX.md"
INDEX_JSON = "index.json"
DETAILS = ("none", "minimal", "balanced", "verbose")
SEGMENT_CAP = 512 * 1024
BALANCED_TEXT = 2_000
BALANCED_ARGS = 500
KEYWORDS = 8
_NAME = re.compile(r"^segment_(\d{3,})\.md$")
_ITEM_HEAD = re.compile(r"^(?:### |- )\[seq (\d+|-)\] (user|assistant|system|developer|tool)\b")
_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*[A-Za-z0-9_]")
_STOP = frozenset(
    "the and for with that this from into was were are been have has had not but you your our its "
    "then than them they there their what when which while will would could should about after "
    "before again also just only some more most other such each all any can may now one two new "
    "let lets yes done need needs make made using use used file files code work working current "
    "still next step assistant user reply yet".split()
)


def segment_name(n: int) -> str:
    return f"segment_{n:03d}.md"


def segments_dir(session_dir: Path) -> Path:
    return session_dir / SEGMENTS_DIR


def next_number(session_dir: Path) -> int:
    """Highest number on disk + 1 (from 0). Call it under the session lock."""
    folder = segments_dir(session_dir)
    numbers = [int(m.group(1)) for p in folder.iterdir() if (m := _NAME.match(p.name))] if folder.is_dir() else []
    return max(numbers) + 1 if numbers else 0


# -- rendering -------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f" […{len(text) - limit} more characters…]"


def _first(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line[:limit] + ("…" if len(line) > limit else "")


def _args_text(args: Any) -> str:
    return args if isinstance(args, str) else orjson.dumps(args).decode()


def _call_brief(call: dict[str, Any]) -> str:
    args = call.get("args")
    if isinstance(args, dict) and args:
        key, value = next(iter(args.items()))
        return f'{call.get("name")}({key}="{_first(value if isinstance(value, str) else _args_text(value), 80)}")'
    return f"{call.get('name')}()"


def render_item(it: dict[str, Any], detail: str) -> str:
    """One item at a detail level: minimal is one line; balanced clips; verbose is whole."""
    seq = it.get("seq", "-")
    role = it.get("role")
    if detail == "minimal":
        if role == "tool":
            state = "error" if it.get("is_error") else "ok"
            return f"- [seq {seq}] tool {it.get('call_id')}: {state}: {_first(str(it.get('output', '')), 120)}"
        calls = ", ".join(_call_brief(c) for c in it.get("tool_calls") or ())
        text = _first(it.get("text") or "", 160)
        return f"- [seq {seq}] {role}: {text}" + (f" → {calls}" if calls else "")
    clip_text = BALANCED_TEXT if detail == "balanced" and role == "assistant" else 0
    clip_args = BALANCED_ARGS if detail == "balanced" else 0
    if role == "tool":
        flag = " (error)" if it.get("is_error") else ""
        out = str(it.get("output", ""))
        return f"### [seq {seq}] tool {it.get('call_id')}{flag}\n{_clip(out, clip_args) if clip_args else out}\n"
    tag = f" ({it['synthetic']})" if it.get("synthetic") else ""
    text = it.get("text") or ""
    lines = [f"### [seq {seq}] {role}{tag}", _clip(text, clip_text) if clip_text else text]
    for c in it.get("tool_calls") or ():
        args = _args_text(c.get("args"))
        lines.append(f"→ call {c.get('call_id')}: {c.get('name')}({_clip(args, clip_args) if clip_args else args})")
    return "\n".join(lines) + "\n"


@dataclass
class SpanStats:
    roles: dict[str, int]
    tools: dict[str, int]
    files: list[str]
    errors: int
    turns: int
    bytes: int
    seq_from: int | None
    seq_to: int | None


def span_stats(items: Iterable[dict[str, Any]]) -> SpanStats:
    roles: dict[str, int] = {}
    tools: dict[str, int] = {}
    files: dict[str, None] = {}
    errors = turns = size = 0
    seqs: list[int] = []
    for it in items:
        role = str(it.get("role"))
        roles[role] = roles.get(role, 0) + 1
        size += len(canonical(it))
        if isinstance(it.get("seq"), int):
            seqs.append(it["seq"])
        if role == "user" and not it.get("synthetic"):
            turns += 1
        for c in it.get("tool_calls") or ():
            name = str(c.get("name"))
            tools[name] = tools.get(name, 0) + 1
            args = c.get("args")
            target = call_path(args) or (args.get("target_directory") if isinstance(args, dict) and isinstance(args.get("target_directory"), str) else None)
            if target:
                files[target] = None
        if role == "tool" and (it.get("is_error") or str(it.get("output", "")).startswith("Error")):
            errors += 1
    return SpanStats(roles, tools, list(files), errors, turns, size, min(seqs) if seqs else None, max(seqs) if seqs else None)


def keywords(summary: str, limit: int = KEYWORDS) -> list[str]:
    """Up to 8 identifier-like words of the summary's Current Work section (else the whole)."""
    m = re.search(r"^## (?:\d\. )?Current Work\s*$(.*?)(?=^## |\Z)", summary, re.M | re.S)
    text = m.group(1) if m else summary
    out: list[str] = []
    for w in _WORD.findall(text):
        low = w.lower()
        if len(w) < 3 or low in _STOP or w.isdigit() or low in (o.lower() for o in out):
            continue
        out.append(w)
        if len(out) == limit:
            break
    return out


@dataclass
class Span:
    """What one compaction folded: the items after the previous head, and its summary."""

    session_id: str | None
    compaction_id: str
    seq_from: int
    seq_to: int
    items: list[dict[str, Any]]
    summary: str
    detail: str


def render_segment(number: int, span: Span, *, cap: int = SEGMENT_CAP) -> tuple[bytes, SpanStats]:
    items, summary, detail = span.items, span.summary, span.detail
    session_id, compaction_id, seq_from, seq_to = span.session_id, span.compaction_id, span.seq_from, span.seq_to
    st = span_stats(items)
    tools = ", ".join(f"{n} ({c})" for n, c in sorted(st.tools.items(), key=lambda kv: (-kv[1], kv[0]))) or "none"
    head = [
        f"# Segment {number:03d}",
        "",
        "> **Historical record, read-only.** This file is the archived part of a session that a "
        "compaction folded away. Do not edit it and do not act on it as if it were current. "
        "Search it (`catty-ctx segment grep SESSION TEXT`, or grep) to recover exact code, errors and outputs.",
        "",
        "## Metadata",
        f"- segment: {number}",
        f"- session: {session_id}",
        f"- compaction: {compaction_id}",
        f"- seq: {seq_from}..{seq_to}",
        f"- items: {len(items)}",
        f"- turns: {st.turns}",
        f"- written: {now_ts()}",
        f"- detail: {detail}",
        "",
        "## Statistics",
        "- roles: " + (", ".join(f"{r} {n}" for r, n in sorted(st.roles.items())) or "none"),
        f"- tools used: {tools}",
        "- files: " + (", ".join(st.files) or "none"),
        f"- tool errors: {st.errors}",
        f"- size: {st.bytes} bytes",
        "",
        "## Summary",
        "",
        re.sub(r"^(#+ )", r"#\1", summary, flags=re.M),  # its sections nest under this one
        "",
        "",
    ]
    out = "\n".join(head).encode()
    if detail != "none":
        out += b"## Turns\n\n"
        for i, it in enumerate(items):
            block = render_item(it, detail).encode() + b"\n"
            if len(out) + len(block) > cap:
                left = items[i:]
                seqs = [x["seq"] for x in left if isinstance(x.get("seq"), int)]
                where = f" (seq {seqs[0]}..{seqs[-1]} in updates.jsonl)" if seqs else ""
                out += f"\n[segment capped at {cap // 1024} KiB: {len(left)} later items are not shown{where}]\n".encode()
                break
            out += block
    return out, st


# -- the index -------------------------------------------------------------------------------


def committed_ids(log_path: Path) -> set[str]:
    """Ids of the compaction events in the log (a cheap byte-prefiltered scan)."""
    return {str(ev.get("id")) for ev in scan_markers(log_path) if ev.get("kind") == "compaction"}


def read_index(session_dir: Path, *, committed: set[str] | None = None) -> list[dict[str, Any]]:
    """index.json's entries, only those whose compaction was committed when `committed` is given."""
    path = segments_dir(session_dir) / INDEX_JSON
    if not path.is_file():
        return []
    try:
        doc = orjson.loads(path.read_bytes())
    except orjson.JSONDecodeError as exc:
        raise DataError(f"invalid JSON ({exc})", path=str(path)) from None
    entries = doc.get("segments") if isinstance(doc, dict) else None
    if not isinstance(entries, list):
        raise DataError("no 'segments' list", path=str(path))
    return [e for e in entries if isinstance(e, dict) and (committed is None or e.get("compaction") in committed)]


def index_md(entries: list[dict[str, Any]]) -> bytes:
    lines = [
        "# Segments",
        "",
        "Archived parts of this session, oldest first. Read one with `catty-ctx segment show SESSION N`;",
        "search them all with `catty-ctx segment grep SESSION TEXT`.",
        "",
        "| Segment | File | Turns | Approx bytes | Keywords |",
        "| --- | --- | --- | --- | --- |",
    ]
    for e in entries:
        lines.append(f"| {e['segment']} | {e['file']} | {e['turns']} | {e['bytes']} | {', '.join(e.get('keywords') or [])} |")
    return ("\n".join(lines) + "\n").encode()


def write_segment(session_dir: Path, log_path: Path, span: Span) -> dict[str, Any]:
    """Write the next segment and refresh both indexes. Call it under the session lock."""
    from ..errors import WriteError

    folder = segments_dir(session_dir)
    try:
        folder.mkdir(exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{folder}: cannot create ({exc.strerror})") from None
    number = next_number(session_dir)
    name = segment_name(number)
    data, st = render_segment(number, span)
    atomic_write(folder / name, data)
    entry = {
        "segment": number,
        "file": name,
        "seq_from": span.seq_from,
        "seq_to": span.seq_to,
        "turns": st.turns,
        "items": len(span.items),
        "bytes": len(data),
        "keywords": keywords(span.summary),
        "tools": st.tools,
        "files": st.files,
        "errors": st.errors,
        "detail": span.detail,
        "compaction": span.compaction_id,
    }
    # Entries of compactions that never committed (a crash before their event) are dropped.
    entries = read_index(session_dir, committed=committed_ids(log_path)) + [entry]
    atomic_write(folder / INDEX_JSON, orjson.dumps({"segments": entries}, option=orjson.OPT_INDENT_2) + b"\n")
    atomic_write(folder / INDEX_MD, index_md(entries))
    return entry


# -- reading ---------------------------------------------------------------------------------


def list_segments(session_dir: Path, log_path: Path) -> list[dict[str, Any]]:
    return read_index(session_dir, committed=committed_ids(log_path))


def resolve_segment(session_dir: Path, name: str) -> Path:
    """A segment of this session by number (`3`) or file name (`segment_003.md`); anything
    else — paths, `..`, symlinks leading out of the folder — is refused."""
    if re.fullmatch(r"\d+", name):
        file = segment_name(int(name))
    elif _NAME.match(name):
        file = name
    else:
        raise UsageError(f"'{name}' is not a segment (give its number, e.g. 3, or segment_003.md)")
    folder = segments_dir(session_dir)
    path = folder / file
    if not path.exists() and not path.is_symlink():
        raise UsageError(f"{session_dir}: no segment {file}")
    try:
        real = path.resolve(strict=True)
        inside = real.parent == folder.resolve(strict=True) and not path.is_symlink() and not folder.is_symlink()
    except OSError:
        inside = False
    if not inside or not real.is_file():
        raise UsageError(f"{path}: refused: not a regular file inside {folder}")
    return path


def segment_files(session_dir: Path, log_path: Path) -> Iterator[tuple[int, Path]]:
    """The committed segments, oldest first, each checked like `resolve_segment`."""
    for e in list_segments(session_dir, log_path):
        yield int(e["segment"]), resolve_segment(session_dir, str(e["file"]))


def grep_segments(session_dir: Path, log_path: Path, pattern: str, *, regex: bool = False, ignore_case: bool = False) -> Iterator[dict[str, Any]]:
    """Matching lines of every segment, each with the segment, the item's seq and role."""
    if regex:
        try:
            rx = re.compile(pattern, re.I if ignore_case else 0)
        except re.error as exc:
            raise UsageError(f"bad regular expression '{pattern}': {exc}") from None
        match = lambda line: rx.search(line) is not None  # noqa: E731
    elif ignore_case:
        folded = pattern.casefold()
        match = lambda line: folded in line.casefold()  # noqa: E731
    else:
        match = lambda line: pattern in line  # noqa: E731
    for number, path in segment_files(session_dir, log_path):
        seq: int | None = None
        role: str | None = None
        in_turns = False  # item headers count only in the turns (a summary has look-alikes)
        with open(path, encoding="utf-8", errors="replace") as f:
            for lineno, line in enumerate(f, 1):
                line = line.rstrip("\n")
                head = _ITEM_HEAD.match(line) if in_turns else None
                if head:
                    seq = int(head.group(1)) if head.group(1).isdigit() else None
                    role = head.group(2)
                elif line == "## Turns":
                    in_turns = True
                if match(line):
                    yield {"segment": number, "file": path.name, "line_no": lineno, "seq": seq, "role": role, "line": line}
