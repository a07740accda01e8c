"""Context assembly: prompt-context snapshots, instruction discovery, blobs, announcement budgets.

The seed's first lesson: what goes into a prompt must be a data structure that can be dumped
and explained ("what was injected this turn, from where, and why"), and large inputs leave
the prompt as handles instead of being cut off. Four mechanisms live here:

- the prompt-context snapshot (`state` facet `prompt_context`) and its report with the
  provenance of every part and the parts nobody recorded marked unknown;
- instruction discovery (global → repository root → DIR; deeper files win), recorded as the
  `instructions` facet, idempotently;
- externalised payloads: a large user message or tool output moves to `blobs/<xxh3-128 hex>`
  (written durably before the event that names it) and a head and a tail stay inline;
- announcement budgets: skills, the tool catalog and MCP servers are announced to the model
  within a byte budget, and only what changed since the last announcement is announced again,
  also across compactions.
"""
from __future__ import annotations

import os
import re
import stat
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Callable, Iterable, Iterator

from .errors import DataError, UsageError, WriteError
from .events import DEFAULT_WINDOW, Event
from .fingerprint import blob_handle

if TYPE_CHECKING:
    from .store import Session

Warn = Callable[[str], None]

# -- externalised payloads ---------------------------------------------------------------

BLOBS_DIR = "blobs"
USER_LIMIT = 25_000  # bytes of a user message kept inline (reference: first prompt > 25 KB)
TOOL_LIMIT = 40_000  # bytes of a tool output kept inline (reference: general tools 40 KB)
PREVIEW_SHARE = 0.8  # the inline preview takes this share of the limit
_HANDLE = re.compile(r"[0-9a-f]{32}")


def is_handle(text: str) -> bool:
    return bool(_HANDLE.fullmatch(text))


def write_blob(session_dir: Path, data: bytes) -> str:
    """Store a payload under its content address; identical payloads are stored once.

    temp + fsync + rename, then the folder is fsynced: once this returns, an event may name
    the handle. Raises OSError when it cannot write (WriteError when blobs/ is a link).
    """
    from .store import replace_file, session_folder

    handle = blob_handle(data)
    folder = session_folder(session_dir / BLOBS_DIR)  # never a link out of the session
    target = folder / handle
    try:
        st = os.lstat(target)
        if stat.S_ISREG(st.st_mode) and st.st_size == len(data):
            return handle  # content-addressed: same name and size is the same payload
    except FileNotFoundError:
        pass
    replace_file(target, data)
    return handle


def _cut_head(data: bytes, n: int) -> bytes:
    """The first ≤ n bytes, never splitting a UTF-8 character."""
    if n >= len(data):
        return data
    while n > 0 and (data[n] & 0xC0) == 0x80:
        n -= 1
    return data[:n]


def _cut_tail(data: bytes, n: int) -> bytes:
    """The last ≤ n bytes, never splitting a UTF-8 character."""
    if n >= len(data):
        return data
    start = len(data) - n
    while start < len(data) and (data[start] & 0xC0) == 0x80:
        start += 1
    return data[start:]


def preview(data: bytes, limit: int, *, keep_end: bool) -> tuple[str, str, int]:
    """Head and tail of a payload for an inline budget of `limit` bytes, and the bytes left out.

    A user message keeps more of its end (where the question usually is): a fifth of the
    preview for the head, the rest for the tail. A tool output keeps both halves alike.
    """
    budget = max(2, int(limit * PREVIEW_SHARE))
    head_n = budget // 5 if keep_end else budget // 2
    head = _cut_head(data, head_n)
    tail = _cut_tail(data, budget - len(head))
    omitted = len(data) - len(head) - len(tail)
    return head.decode("utf-8", "replace"), tail.decode("utf-8", "replace"), omitted


def externalize(
    event: dict[str, Any],
    session_dir: Path | None,
    *,
    user_limit: int = USER_LIMIT,
    tool_limit: int = TOOL_LIMIT,
    warn: Warn | None = None,
) -> dict[str, Any]:
    """Move a large user message or tool output into `blobs/` and keep a preview inline.

    Returns the event to append (a new dict; the input is not changed). A limit of 0 turns
    that kind off; an event that already names a blob, or a session without a directory,
    is returned as it is. When the blob cannot be written the event keeps the preview, says
    so in its text and in `blob_error`, and carries no handle.
    """
    kind = event.get("kind")
    if session_dir is None or "blob" in event:
        return event
    if kind == "message" and event.get("role") == "user" and user_limit > 0:
        field_name, limit, keep_end, what = "text", user_limit, True, "message"
    elif kind == "tool_result" and tool_limit > 0:
        field_name, limit, keep_end, what = "output", tool_limit, False, "output"
    else:
        return event
    payload = event.get(field_name)
    if not isinstance(payload, str) or len(payload) <= limit // 4:  # ≥ 1 byte a char: cheap no
        return event
    data = payload.encode("utf-8")
    if len(data) <= limit:
        return event
    head, tail, omitted = preview(data, limit, keep_end=keep_end)
    out = dict(event)
    out["bytes"] = len(data)
    try:
        handle = write_blob(session_dir, data)
    except (OSError, WriteError) as exc:
        reason = getattr(exc, "strerror", None) or str(exc)
        note = (
            f"[… {omitted:,} bytes of this {what} ({len(data):,} in all) are not shown: "
            f"storing the whole {what} failed ({reason}), so only this preview exists …]"
        )
        out["blob_error"] = reason
        if warn:
            warn(f"cannot store a {len(data):,}-byte {what} in {session_dir / BLOBS_DIR} ({reason}); only a preview is kept")
    else:
        note = (
            f"[… {omitted:,} bytes of this {what} are not shown; the whole {what} "
            f"({len(data):,} bytes) is blob {handle}: catty-ctx blob SESSION {handle} …]"
        )
        out["blob"] = handle
    out[field_name] = f"{head}\n\n{note}\n\n{tail}"
    return out


def blob_path(session_dir: Path, handle: str) -> Path:
    """The file of a handle in this session's blobs/, refusing anything else.

    Only a 32-hex-digit name of a regular file directly inside blobs/ is accepted: no
    paths, no symbolic links, nothing outside the session.
    """
    if not is_handle(handle):
        raise UsageError(f"{handle!r} is not a blob handle (32 lowercase hex digits)")
    folder = session_dir / BLOBS_DIR
    path = folder / handle
    try:
        st = os.lstat(path)
        folder_st = os.lstat(folder)
    except FileNotFoundError:
        raise UsageError(f"{session_dir}: no blob {handle}") from None
    if not stat.S_ISDIR(folder_st.st_mode):
        raise DataError(f"{folder} is not a directory (a symbolic link is refused)")
    if not stat.S_ISREG(st.st_mode):
        raise DataError(f"{path} is not a regular file (a symbolic link is refused)")
    return path


def open_blob(session_dir: Path, handle: str) -> IO[bytes]:
    """The payload of a handle, opened for reading after checking it hashes to its name.

    The file is opened without following links and checked through the same descriptor it
    is read from, so it cannot be swapped in between. A mismatch is a data error (corrupt).
    """
    import xxhash

    path = blob_path(session_dir, handle)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise DataError(f"cannot read ({exc.strerror})", path=str(path)) from None
    f = os.fdopen(fd, "rb")
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise DataError("not a regular file", path=str(path))
        h = xxhash.xxh3_128()
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
        if h.hexdigest() != handle:
            raise DataError("content does not match its handle (corrupt blob)", path=str(path))
        f.seek(0)
    except BaseException:
        f.close()
        raise
    return f


def session_directory(target: str) -> Path:
    """The directory of SESSION (a directory or its updates.jsonl); blobs need one."""
    from .store import Session

    if target == "-":
        raise UsageError("blobs live in a session directory; SESSION cannot be -")
    session = Session.open(target)
    return session.require_directory("blob")


# -- instruction discovery ---------------------------------------------------------------

INSTRUCTION_NAMES = ("AGENTS.md", "CLAUDE.md")
RULE_DIRS = (".claude/rules", ".cursor/rules")
RULE_SUFFIXES = (".md", ".mdc")


@dataclass(frozen=True)
class InstructionPart:
    path: str  # canonical path
    scope: str  # global | repo | dir
    order: int  # 1-based position in the prompt; later parts win on conflict
    text: str  # front matter stripped
    bytes: int  # size of the file on disk

    def as_state(self) -> dict[str, Any]:
        return {"path": self.path, "scope": self.scope, "order": self.order, "text": self.text}


@dataclass
class Discovery:
    directory: str
    root: str | None  # the repository root, when DIR is inside a git work tree
    parts: list[InstructionPart] = field(default_factory=list)
    skipped: list[dict[str, str]] = field(default_factory=list)  # {path, reason}

    def state_value(self) -> list[dict[str, Any]]:
        return [p.as_state() for p in self.parts]


def global_instruction_files(env: dict[str, str] | None = None) -> list[Path]:
    """User-level files, in prompt order: the peers' first, catty-ctx's own last (it wins)."""
    env = dict(os.environ) if env is None else env
    home = Path(env.get("HOME") or os.path.expanduser("~"))
    config = Path(env.get("XDG_CONFIG_HOME") or home / ".config")
    codex = Path(env.get("CODEX_HOME") or home / ".codex")
    own = config / "catty-ctx"
    return [codex / "AGENTS.md", home / ".claude" / "CLAUDE.md", own / "AGENTS.md", *_rule_files(own / "rules")]


def _rule_files(folder: Path) -> list[Path]:
    try:
        names = sorted(os.listdir(folder))
    except OSError:
        return []
    return [folder / n for n in names if n.endswith(RULE_SUFFIXES)]


def _directory_files(folder: Path) -> list[Path]:
    files = [folder / n for n in INSTRUCTION_NAMES]
    for rules in RULE_DIRS:
        files.extend(_rule_files(folder / rules))
    return files


def find_repo_root(directory: Path) -> Path | None:
    """The nearest ancestor (or DIR itself) holding `.git`."""
    for folder in (directory, *directory.parents):
        if (folder / ".git").exists():
            return folder
    return None


def strip_front_matter(text: str) -> str:
    """Drop a leading `---` … `---` block (rule metadata, not instructions) and a BOM."""
    text = text.lstrip("\ufeff")
    if text.startswith("---") and text[3:4] in ("\n", "\r"):
        m = re.search(r"^---[ \t]*\r?$", text[4:], flags=re.MULTILINE)
        if m:
            text = text[4 + m.end():]
    return text.strip()


def git_ignored(root: Path, paths: list[Path]) -> tuple[set[Path], str | None]:
    """Which of `paths` git ignores in the work tree at `root` (one `git check-ignore` run).

    Returns the ignored set and, when git could not answer, why (then nothing is filtered).
    """
    if not paths:
        return set(), None
    try:
        proc = subprocess.run(
            ["git", "-C", str(root), "check-ignore", "-z", "--stdin"],
            input=b"\0".join(os.fsencode(p) for p in paths) + b"\0",
            capture_output=True,
            timeout=30,
        )
    except FileNotFoundError:
        return set(), "git is not installed"
    except subprocess.TimeoutExpired:
        return set(), "git check-ignore timed out"
    if proc.returncode not in (0, 1):
        first = (proc.stderr.decode("utf-8", "replace").strip().splitlines() or ["no reason given"])[0]
        return set(), f"git check-ignore failed: {first}"
    ignored = {Path(os.fsdecode(p)) for p in proc.stdout.split(b"\0") if p}
    return {p if p.is_absolute() else root / p for p in ignored}, None


def discover_instructions(
    directory: str | os.PathLike[str] = ".",
    *,
    include_global: bool = True,
    env: dict[str, str] | None = None,
) -> Discovery:
    """Instruction files for DIR in prompt order: global → repository root → … → DIR.

    In each folder: AGENTS.md, CLAUDE.md, then `.claude/rules/*`, `.cursor/rules/*` (sorted).
    Deeper folders come later so they win. Files git ignores are skipped, a file reached
    twice (a symbolic link, the same folder) counts once at its first place, empty files add
    nothing, and rule front matter is stripped.
    """
    start = Path(directory).resolve()
    if not start.is_dir():
        raise UsageError(f"{directory}: not a directory")
    root = find_repo_root(start)
    found = Discovery(directory=str(start), root=str(root) if root else None)
    candidates: list[tuple[str, Path]] = []
    if include_global:
        candidates.extend(("global", p) for p in global_instruction_files(env))
    chain = [start]
    if root is not None:
        chain = [root]
        for name in start.relative_to(root).parts:
            chain.append(chain[-1] / name)
    for folder in chain:
        scope = "repo" if root is not None and folder == root else "dir"
        candidates.extend((scope, p) for p in _directory_files(folder))
    existing = [(scope, p) for scope, p in candidates if p.is_file()]
    ignored: set[Path] = set()
    if root is not None:
        in_repo = [p for scope, p in existing if scope != "global"]
        ignored, problem = git_ignored(root, in_repo)
        if problem:
            found.skipped.append({"path": str(root), "reason": f"ignore rules not applied: {problem}"})
    seen: set[str] = set()
    for scope, path in existing:
        canon = os.path.realpath(path)
        if path in ignored:
            found.skipped.append({"path": str(path), "reason": "ignored by git"})
            continue
        if canon in seen:
            found.skipped.append({"path": str(path), "reason": f"same file as {canon}"})
            continue
        seen.add(canon)
        try:
            raw = Path(canon).read_bytes()
        except OSError as exc:
            found.skipped.append({"path": str(path), "reason": f"cannot read ({exc.strerror})"})
            continue
        text = strip_front_matter(raw.decode("utf-8", "replace"))
        if not text:
            found.skipped.append({"path": str(path), "reason": "empty"})
            continue
        found.parts.append(InstructionPart(canon, scope, len(found.parts) + 1, text, len(raw)))
    return found


def latest_facet(events: Iterable[Event], facet: str, *, agent: str | None = None) -> Event | None:
    """The latest `state` event of a facet (of the main loop unless `agent`)."""
    latest = None
    for ev in events:
        if ev["kind"] == "state" and ev.get("facet") == facet and ev.get("agent") == agent:
            latest = ev
    return latest


def record_instructions(session: "Session", discovery: Discovery, *, lock_timeout: float = 30.0) -> Event | None:
    """Append the `instructions` state unless the latest one already equals it (idempotent).

    Read and append happen under the session lock, so two runs at once append it once.
    """
    value = discovery.state_value()
    with session.lock(lock_timeout):
        latest = latest_facet(session.events(warn=None), "instructions")
        if latest is not None and latest.get("value") == value:
            return None
        return session._append_locked([{"kind": "state", "facet": "instructions", "value": value}], warn=None)[0]


# -- the prompt-context snapshot -----------------------------------------------------------

PROMPT_CONTEXT_SCHEMA = 1
# The parts every report shows, known or not (dotted names for nested fields).
SNAPSHOT_PARTS = (
    "audience",
    "prompt_mode",
    "model",
    "agent_version",
    "persona",
    "instructions",
    "memory",
    "environment.os",
    "environment.shell",
    "environment.cwd",
    "environment.date",
    "environment.non_interactive",
    "environment.git_branch",
)
_META = ("schema", "sources")


def snapshot_value(parts: dict[str, Any], sources: dict[str, str]) -> dict[str, Any]:
    """A `prompt_context` facet value: the known parts, and where each came from.

    `parts` may be nested (`{"environment": {"cwd": …}}`) or dotted (`{"environment.cwd": …}`);
    `sources` maps a part (or a parent such as `environment`) to its origin, e.g.
    `"claude: cwd of the first record"`. Parts left out or None are unknown.
    """
    value: dict[str, Any] = {"schema": PROMPT_CONTEXT_SCHEMA}
    for key, v in parts.items():
        if v is None:
            continue
        node = value
        *path, last = key.split(".")
        for p in path:
            node = node.setdefault(p, {})
        if isinstance(v, dict) and isinstance(node.get(last), dict):
            node[last].update(v)
        else:
            node[last] = v
    value["sources"] = dict(sources)
    return value


def snapshot_event(parts: dict[str, Any], sources: dict[str, str], *, agent: str | None = None) -> dict[str, Any]:
    """The `state` event recording a prompt-context snapshot (for importers and runtimes)."""
    ev: dict[str, Any] = {"kind": "state", "facet": "prompt_context", "value": snapshot_value(parts, sources)}
    if agent:
        ev["agent"] = agent
    return ev


def _flatten(value: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, Any]]:
    for key, v in value.items():
        if not prefix and key in _META:
            continue
        name = prefix + key
        if isinstance(v, dict) and v:
            yield from _flatten(v, name + ".")
        else:
            yield name, v


def _source_of(name: str, sources: dict[str, Any]) -> str | None:
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        src = sources.get(".".join(parts[:i]))
        if isinstance(src, str):
            return src
    return None


def context_report(session: "Session", *, agent: str | None = None) -> dict[str, Any]:
    """`inspect --context`: the prompt-context snapshot, every part with its provenance.

    The latest `prompt_context` state gives the parts it records; parts it lacks are filled
    from what else the log holds (the session event's cwd and model, the latest usage's
    model, the `instructions` and `memory` facets), each naming that source; everything
    else is listed as unknown.
    """
    first: Event | None = None
    facets: dict[str, Event] = {}
    usage: Event | None = None
    wanted = ("prompt_context", "instructions", "memory")
    for ev in session.events():
        if first is None:
            first = ev
        if ev.get("agent") != agent:
            continue
        kind = ev["kind"]
        if kind == "state" and ev.get("facet") in wanted:
            facets[ev["facet"]] = ev
        elif kind == "usage":
            usage = ev
    parts: dict[str, dict[str, Any]] = {}
    snap = facets.get("prompt_context")
    snap_value = snap.get("value") if snap else None
    schema = None
    if isinstance(snap_value, dict):
        schema = snap_value.get("schema")
        sources = snap_value.get("sources") if isinstance(snap_value.get("sources"), dict) else {}
        for name, v in _flatten(snap_value):
            if v is None:
                continue
            src = _source_of(name, sources) or "recorded without a source"
            parts[name] = {"value": v, "known": True, "source": src, "seq": snap["seq"]}  # type: ignore[index]

    def fill(name: str, value: Any, source: str, seq: int) -> None:
        if name not in parts and value not in (None, "", []):
            parts[name] = {"value": value, "known": True, "source": source, "seq": seq}

    ses = first if first and first.get("kind") == "session" else None
    if usage is not None:
        fill("model", usage.get("model"), "the latest usage event", usage["seq"])
    if ses is not None:
        fill("model", ses.get("model"), "the session event", ses["seq"])
        fill("environment.cwd", ses.get("cwd"), "the session event", ses["seq"])
    ins = facets.get("instructions")
    if ins is not None and isinstance(ins.get("value"), list):
        listed = [
            {"path": i.get("path"), "order": i.get("order", n)}
            for n, i in enumerate(ins["value"], 1)
            if isinstance(i, dict)
        ]
        fill("instructions", listed, "the instructions state", ins["seq"])
    mem = facets.get("memory")
    if mem is not None:
        fill("memory", mem.get("value"), "the memory state", mem["seq"])
    for name in SNAPSHOT_PARTS:
        if name not in parts and not any(p.startswith(name + ".") for p in parts):
            parts[name] = {"value": None, "known": False, "source": None, "seq": None}
    order = {n: i for i, n in enumerate(SNAPSHOT_PARTS)}
    ordered = dict(sorted(parts.items(), key=lambda kv: (order.get(kv[0], len(order)), kv[0])))
    return {
        "path": str(session.directory or session.display),
        "session_id": ses.get("session_id") if ses else None,
        "agent": agent,
        "schema": schema if schema is not None else PROMPT_CONTEXT_SCHEMA,
        "snapshot_seq": snap["seq"] if snap else None,
        "parts": ordered,
        "unknown": [n for n, p in ordered.items() if not p["known"]],
    }


# -- announcement budgets ----------------------------------------------------------------

DESCRIPTION_LIMIT = 400  # bytes per description (reference: skill listing)
ANNOUNCE_SHARE = 0.01  # the whole listing: this share of the window (tokens × 4 bytes)
ANNOUNCED_FACETS = ("skills", "tools", "mcp")
_HEADINGS = {
    "skills": "Skills available (load one when the task calls for it):",
    "tools": "Tools available:",
    "mcp": "MCP servers connected:",
}


def clip(text: str, limit: int) -> str:
    """At most `limit` UTF-8 bytes, cut on a character boundary, marked with … when cut."""
    data = text.encode("utf-8")
    if len(data) <= limit:
        return text
    return _cut_head(data, max(0, limit - 3)).decode("utf-8") + "…"


def _entries(facet: str, value: Any) -> list[tuple[str, str]]:
    """(name, listing line) for each well-formed entry of an announced facet."""
    out: list[tuple[str, str]] = []
    if not isinstance(value, list):
        return out
    for e in value:
        if not isinstance(e, dict) or not isinstance(e.get("name"), str):
            continue
        name = e["name"]
        if facet == "mcp":
            tools = e.get("tools")
            names = [t if isinstance(t, str) else t.get("name", "") for t in tools if isinstance(t, (str, dict))] if isinstance(tools, list) else []
            desc = ", ".join(n for n in names if n)
        else:
            desc = " ".join(str(e.get("description") or "").split())
        line = f"- {name}: {clip(desc, DESCRIPTION_LIMIT)}" if desc else f"- {name}"
        if facet == "skills" and e.get("path"):
            line += f" ({e['path']})"
        out.append((name, line))
    return out


class Announcer:
    """What the model has been told about skills, tools and MCP servers, and what is new.

    The view feeds it the `state` events of those facets in order; it answers with a
    reminder item listing only entries that are new or changed (and those removed), within
    the budget. After a compaction `head` lists everything once for the rebuilt head, and
    what it listed counts as announced, so the events after the compaction do not repeat it.
    Entries that did not fit are not counted as announced: a later listing tries again.
    """

    def __init__(self, window: int = DEFAULT_WINDOW, *, share: float = ANNOUNCE_SHARE) -> None:
        self.window = window
        self.share = share
        self.announced: dict[tuple[str, str], str] = {}  # (facet, name) -> line as listed

    @property
    def budget(self) -> int:
        """Bytes the whole listing may take: share × window tokens × 4 bytes a token."""
        return int(self.window * self.share * 4)

    def feed(self, ev: Event) -> dict[str, Any] | None:
        facet = ev.get("facet")
        if facet not in ANNOUNCED_FACETS:
            return None
        return self._listing({facet: ev.get("value")}, fresh=False)

    def head(self, facets: dict[str, Any]) -> dict[str, Any] | None:
        """The listing for a rebuilt head: all current entries (nothing is announced yet)."""
        return self._listing({f: facets.get(f) for f in ANNOUNCED_FACETS if f in facets}, fresh=True)

    def _listing(self, values: dict[str, Any], *, fresh: bool) -> dict[str, Any] | None:
        budget = self.budget
        open_, close = "<system-reminder>", "</system-reminder>"
        used = len(open_) + len(close) + 2
        lines: list[str] = []
        for facet in ANNOUNCED_FACETS:
            if facet not in values:
                continue
            current = _entries(facet, values[facet])
            names = {n for n, _ in current}
            gone = sorted(n for (f, n) in self.announced if f == facet and n not in names)
            new = [(n, line) for n, line in current if self.announced.get((facet, n)) != line]
            section: list[str] = []
            skipped = 0
            heading = _HEADINGS[facet]
            for n, line in new:
                cost = len(line.encode("utf-8")) + 1 + (0 if section else len(heading.encode("utf-8")) + 1)
                if used + cost > budget:
                    skipped += 1
                    continue
                if not section:
                    section.append(heading)
                section.append(line)
                used += cost
                self.announced[(facet, n)] = line
            if skipped:
                note = f"({skipped} more {facet} not listed: over the announcement budget)"
                section.append(note)
                used += len(note) + 1
            if gone:
                note = f"No longer available ({facet}): " + clip(", ".join(gone), DESCRIPTION_LIMIT)
                section.append(note)
                used += len(note.encode("utf-8")) + 1
                for n in gone:
                    del self.announced[(facet, n)]
            lines.extend(section)
        if not lines:
            return None
        return {"role": "user", "text": open_ + "\n" + "\n".join(lines) + "\n" + close, "synthetic": "announcement"}
