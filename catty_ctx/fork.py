"""Fork and resume (docs/design.md#m11; docs/design.md#w7, #w10).

`fork` copies turns 1..N of a session into a new one that records its parent: the copied
events keep their seq, the child's own `session` event takes seq 0, and the segments and
blobs the copy needs come along, so compaction hints resolve inside the child. It is built
in a temporary directory beside DEST and renamed into place: a crash leaves no half DEST.
`resume` hands on the repaired view in a provider's format, validated before it is printed.
"""
from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .defaults import RESUME_FORMAT, RESUME_FORMATS
from .errors import DataError, UsageError, WriteError
from .formats.ownership import require_ours
from .repair.fix import repaired_items
from .repair.plan import rebuild_summary
from .session.blobs import inline_images, is_handle
from .session.create import write_summary
from .session.events import is_real_user, now_ts
from .session.jsonl import stderr_warning
from .session.layout import PART_NAME, STAGING_SUFFIX, SUMMARY_NAME
from .session.new import building, check_dest_name, check_new_session_dest, place_new_session
from .session.segments import INDEX_FILES, is_segment_name, read_index, segment_span, write_index
from .session.store import Session
from .subagents import open_agent
from .view import providers
from .view.boundary import repair_count, repair_new_head
from .view.fold import SHAPE_AND_TURN_MARKERS, plan_view, scan_markers
from .view.pairing import repair_items

FORMATS = RESUME_FORMATS
_TMP_MARK = ".fork-"


# -- resume --------------------------------------------------------------------------------


def require_resumable(session: Session) -> None:
    """A session directory is resumable only when it holds summary.json (as grok-build rules)."""
    if session.directory is not None and session.origin is None and not (session.directory / SUMMARY_NAME).is_file():
        raise UsageError(
            f"{session.directory}: not resumable (no {SUMMARY_NAME}); "
            f"'catty-ctx repair {session.directory}' rebuilds it from the log"
        )


def resume(session: Session, fmt: str = RESUME_FORMAT) -> tuple[Any, list[str]]:
    """The repaired view, ready to send: a list of items, or an OpenAI / Anthropic document.

    Returns the output and what was repaired or left out on the way (short phrases)."""

    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}' (one of {', '.join(FORMATS)})")
    require_resumable(session)
    items, notes = repaired_items(session)
    # The log's repairs cover what it records; the in-memory pass covers what the view makes
    # of it (a result that arrived after a compaction folded its call) and drops empty messages.
    items, fixed = repair_items(items)
    notes += fixed
    if not any(it.get("role") != "system" for it in items):
        # Nothing to send: a request of no message is refused by every provider.
        raise DataError("no conversation to resume (the view holds no message)", path=session.display)
    if fmt == "items":
        providers.validate_items(items)
        return items, notes
    # A provider gets the image itself: blobs become base64 data (not "[image <handle>]").
    items, missing = inline_images(items, session.directory)
    if missing:
        notes.append(f"{missing} image{'s' if missing > 1 else ''} missing or corrupt in blobs/, sent as a note")
    build, validate = providers.FORMATS[fmt]
    doc = build(items)
    validate(doc)
    return doc, notes


# -- fork ----------------------------------------------------------------------------------


@dataclass
class ForkResult:
    dest: Path
    session_id: str
    parent_session_id: str | None
    forked_from_seq: int
    events: int
    turns: int
    blobs: int = 0
    segments: int = 0  # segment files copied (the index files are rebuilt, not counted)
    segments_left_out: int = 0  # segments reaching past the fork point
    skipped: list[str] = field(default_factory=list)  # symlinks not followed
    repairs: int = 0  # calls and results the child's first repair event fixed

    def as_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}


def _cut_seq(session: Session, at_turn: int | None) -> tuple[int | None, int]:
    """The first seq left out (None: keep everything) and the turns kept."""

    markers = list(scan_markers(session.log_path, SHAPE_AND_TURN_MARKERS))
    plan = plan_view(markers)
    # A turn on the live branch: a real user message of the main loop that no rewind removed.
    turns = [ev["seq"] for ev in markers if is_real_user(ev) and not plan.is_excluded(ev["seq"])]
    if at_turn is None or at_turn >= len(turns):
        if at_turn is not None and at_turn > len(turns):
            raise UsageError(f"--at-turn {at_turn}: the session has {len(turns)} turn(s)")
        return None, len(turns)
    return turns[at_turn], at_turn


def _blob_refs(obj: Any, out: set[str]) -> None:
    """Every blob handle an event names (tool outputs, messages, images), at any depth."""

    if isinstance(obj, dict):
        for k, v in obj.items():
            if k == "blob" and isinstance(v, str) and is_handle(v):
                out.add(v)
            else:
                _blob_refs(v, out)
    elif isinstance(obj, list):
        for v in obj:
            _blob_refs(v, out)


def _copy_tree_no_links(src: Path, dst: Path, skipped: list[str]) -> int:
    """Copy regular files and folders; a symlink is never followed (it is reported instead)."""
    n = 0
    dst.mkdir(parents=True, exist_ok=True)
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        target = dst / entry.name
        if entry.is_symlink():
            skipped.append(str(Path(entry.path)))
        elif entry.is_dir(follow_symlinks=False):
            n += _copy_tree_no_links(Path(entry.path), target, skipped)
        elif entry.is_file(follow_symlinks=False):
            shutil.copy2(entry.path, target, follow_symlinks=False)
            n += 1
    return n


def _clear_stale_temps(dest: Path) -> None:
    """Remove temporary trees earlier forks to DEST left behind when they were killed."""
    for p in dest.parent.glob(f".{dest.name}{_TMP_MARK}*.tmp"):
        try:
            pid = int(p.name.rsplit(".", 2)[-2].rsplit("-", 1)[-1])
            os.kill(pid, 0)
            continue  # its fork is still running
        except (ValueError, IndexError):
            continue
        except ProcessLookupError:
            shutil.rmtree(p, ignore_errors=True)
        except PermissionError:
            continue


def fork(
    source: str | os.PathLike[str],
    dest: str | os.PathLike[str],
    *,
    at_turn: int | None = None,
    model: str | None = None,
    cwd: str | None = None,
    session_id: str | None = None,
    dry_run: bool = False,
    agent: str | None = None,
) -> ForkResult:
    """Copy turns 1..at_turn (all when None) of SOURCE into a new session at DEST; with AGENT,
    of that subagent's own conversation (`subagents`): the child's parent is SOURCE's session."""
    session = open_agent(source, agent, warn=stderr_warning)  # (a line of a native source it skips is named)
    if session.origin is not None and session.origin.get("directory"):  # a subagent: its blobs and segments are its parent's
        parent_dir = Path(session.origin["directory"])
    elif session.origin is not None:  # another agent's session, imported in memory: the child is a catty session
        parent_dir = session.log_path.parent
    else:
        parent_dir = session.require_directory("fork")
        require_ours(session)
    if session.log_path.is_symlink():
        raise UsageError(f"{session.log_path}: is a symbolic link; fork never follows links out of the session")
    dest = Path(dest)
    check_dest_name(dest)
    if dest.is_symlink() or (dest.exists() and (not dest.is_dir() or any(dest.iterdir()))):
        raise UsageError(f"{dest}: already exists and is not empty; fork needs a new or empty DEST")
    check_new_session_dest(dest)
    cut, turns = _cut_seq(session, at_turn)
    first = session.first_event()
    if first is None or first.get("kind") != "session":
        raise DataError("no session event at seq 0", path=session.display)
    child_id = session_id or str(uuid.uuid4())
    result = ForkResult(dest, child_id, first.get("session_id"), -1, 0, turns)
    if not dest.parent.is_dir():
        raise WriteError(f"{dest.parent}: no such directory")
    if not dry_run:
        _clear_stale_temps(dest)
    tmp = dest.parent / f".{dest.name}{_TMP_MARK}{uuid.uuid4().hex[:8]}-{os.getpid()}{STAGING_SUFFIX}"
    with building(tmp, dest, "cannot write the fork"):
        if not dry_run:
            tmp.mkdir()
        _build(session, parent_dir, tmp, first, result, cut=cut, model=model, cwd=cwd, dry_run=dry_run)
        if dry_run:
            return result
        place_new_session(tmp, dest)
    # The child's first boundary: what its view needs to be sent is written in its log (a
    # turn the parent had not closed keeps its running calls as they are).
    with Session.open(dest) as child:
        result.repairs = repair_count(repair_new_head(child, "fork", closed_only=cut is None))
    return result


def _build(
    session: Session,
    parent_dir: Path,
    tmp: Path,
    first: dict[str, Any],
    result: ForkResult,
    *,
    cut: int | None,
    model: str | None,
    cwd: str | None,
    dry_run: bool,
) -> None:

    child_event = dict(first.items())
    child_event["session_id"] = result.session_id
    sub = session.origin if session.origin is not None and session.origin.get("format") == "subagent" else None
    parent_id = sub["parent_session_id"] if sub is not None else first.get("session_id")
    child_event["parent_session_id"] = parent_id
    child_event["ts"] = now_ts()
    if model is not None:
        child_event["model"] = model
    if cwd is not None:
        child_event["cwd"] = cwd
    # The fork point: the last parent seq the child holds (fixed first, so a concurrent
    # append to the parent is not half taken, and the session event can be written first).
    last_seq = (cut if cut is not None else session.next_seq()) - 1
    # A subagent's fork point is the parent's seq of its last event copied.
    child_event["forked_from_seq"] = sub["seqs"][last_seq - 1] if sub is not None and last_seq > 0 else last_seq
    result.forked_from_seq = child_event["forked_from_seq"]
    result.parent_session_id = parent_id
    blobs: set[str] = set()
    segments_named: set[str] = set()  # by the compactions the child holds
    facts: dict[str, Any] = {"title": "", "model": None}
    # Named .part until the tree is complete, so a ROOT walk never takes a killed fork's
    # leftovers for a session.
    out = None if dry_run else open(tmp / PART_NAME, "wb", buffering=1 << 20)
    try:
        if out is not None:
            out.write(orjson.dumps(child_event) + b"\n")
        result.events = 1
        for ev in session.events():
            seq = ev["seq"]
            if seq > last_seq:
                break
            if seq == 0:
                continue  # replaced by the child's own session event
            line = orjson.dumps(ev)
            if b'"blob"' in line:
                _blob_refs(ev, blobs)
            if ev["kind"] == "message" and not facts["title"] and ev.get("role") == "user" and not ev.get("synthetic") and not ev.get("agent"):
                facts["title"] = ev.get("text", "")
            elif ev["kind"] == "usage" and not ev.get("agent") and ev.get("model"):
                facts["model"] = ev["model"]
            elif ev["kind"] == "compaction" and isinstance(ev.get("segment"), str):
                segments_named.add(ev["segment"])
            if out is not None:
                out.write(line + b"\n")
            result.events += 1
        if out is None:
            return
        out.flush()
        os.fsync(out.fileno())
    finally:
        if out is not None:
            out.close()
    # (A subagent's segments are the ones its compactions name: the parent's spans are the main loop's.)
    _copy_segments(parent_dir, tmp, result, last_seq=-1 if sub is not None else last_seq, named=segments_named)
    result.blobs = _copy_blobs(parent_dir, tmp, blobs, result.skipped)
    if (parent_dir / "quarantine").is_dir():  # its index lists the seq gaps the copied events may have
        _copy_tree_no_links(parent_dir / "quarantine", tmp / "quarantine", result.skipped)
    facts.update(first=child_event, last_ts=now_ts(), last_seq=last_seq)
    summary = rebuild_summary(facts, None, (tmp / PART_NAME).stat().st_size)
    parent_summary = session.summary() or {}
    if not summary["title"] and parent_summary.get("title"):
        summary["title"] = parent_summary["title"]
    if model is None and parent_summary.get("model") and not facts["model"]:
        summary["model"] = parent_summary["model"]
    summary["window"] = parent_summary.get("window") or summary["window"]
    summary.update(session_kind="fork", forked_at=child_event["ts"], forked_from_seq=child_event["forked_from_seq"], parent_session_id=parent_id)
    if sub is not None:
        summary["parent_agent"] = sub["agent"]
    if model is not None:
        summary["model"] = model
    write_summary(tmp, summary)


def _copy_segments(parent_dir: Path, tmp: Path, result: ForkResult, *, last_seq: int, named: set[str]) -> None:
    """Copy the segments the child may hold: one a compaction of the child names, or one that
    ends at or before the fork point. A segment reaching past it would let `segment grep` on
    the child find text from after the fork: it is left out (its events up to the fork point
    are in the child's log). The index is rebuilt from the segments copied."""
    src = parent_dir / "segments"
    if src.is_symlink():
        result.skipped.append(str(src))
        return
    if not src.is_dir():
        return
    rows = {r["file"]: r for r in read_index(parent_dir) if isinstance(r.get("file"), str)}
    dst = tmp / "segments"
    dst.mkdir()
    kept_rows = []
    for entry in sorted(os.scandir(src), key=lambda e: e.name):
        if entry.is_symlink():
            result.skipped.append(entry.path)
        elif entry.name in INDEX_FILES:
            continue  # rebuilt below, from the segments the child holds
        elif is_segment_name(entry.name) and entry.is_file(follow_symlinks=False):
            span = segment_span(Path(entry.path), rows.get(entry.name))
            if entry.name in named or (span is not None and span[1] <= last_seq):
                shutil.copy2(entry.path, dst / entry.name, follow_symlinks=False)
                result.segments += 1
                if entry.name in rows:
                    kept_rows.append(rows[entry.name])
            else:
                result.segments_left_out += 1
        elif entry.is_dir(follow_symlinks=False):
            _copy_tree_no_links(Path(entry.path), dst / entry.name, result.skipped)
        elif entry.is_file(follow_symlinks=False):
            shutil.copy2(entry.path, dst / entry.name, follow_symlinks=False)
    if kept_rows or any((src / name).is_file() for name in INDEX_FILES):
        write_index(dst, kept_rows)


def _copy_blobs(parent_dir: Path, tmp: Path, handles: set[str], skipped: list[str]) -> int:
    src = parent_dir / "blobs"
    if not handles or src.is_symlink() or not src.is_dir():
        return 0
    (tmp / "blobs").mkdir()
    n = 0
    for h in sorted(handles):
        p = src / h
        if p.is_symlink():
            skipped.append(str(p))
        elif p.is_file():
            shutil.copy2(p, tmp / "blobs" / h, follow_symlinks=False)
            n += 1
    return n
