"""Write back: a NEW native session (Claude Code or Codex) from the view of any session.

The view is built by the existing mechanisms only, on a private working copy (the source is
read, never opened for writing): a native source is imported, `fork` cuts it (`--at-turn`),
`compact` compacts the copy, `repair`'s plan and the pairing repair answer dangling calls and
drop orphans and duplicates, `prune` shortens old outputs, `slim` moves large outputs and
images out (`--max-bytes`). `steps` turns the view into the conversation both writers take;
`claude` and `codex` turn it into the agent's records and check them as its loader would
before a byte is written. The file appears whole under a new name or not at all, and never
replaces one (`docs/writeback.md`).
"""
from __future__ import annotations

import os
import shlex
import shutil
import tempfile
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import orjson

from ..compact.pipeline import compact_session
from ..defaults import WRITEBACK_AGENTS
from ..errors import CattyError, DataError, ExitCode, UsageError, WriteError
from ..fork import fork
from ..formats.ownership import foreign_format
from ..importers.pipeline import import_to_dir
from ..prune.options import PruneOptions
from ..prune.pipeline import prune
from ..repair.fix import repaired_items
from ..repair.plan import repair_plan
from ..session.blobs import inline_images
from ..session.events import now_ts
from ..session.files import clear_dead_spools, create_exclusive, spool_prefix
from ..session.layout import LOG_NAME
from ..session.new import place_folder
from ..session.store import Session, prepare_event, session_window
from ..view.pairing import repair_items
from . import claude, codex, grok
from .slim import slim
from .steps import Step, to_steps

AGENTS = WRITEBACK_AGENTS
FILE_MODE = 0o600  # a transcript is private (the agents write theirs so)


class WriterBug(CattyError):
    """The records built fail the agent's own structural check: nothing is written."""

    exit_code = ExitCode.INTERNAL


@dataclass
class WritebackOptions:
    agent: str
    prune: str | None = None  # a prune strategy (cache-aware, tiered)
    compact: bool = False
    at_turn: int | None = None
    max_bytes: int | None = None
    model: str | None = None
    cwd: str | None = None
    session_id: str | None = None  # the new session's id (default: a new UUID)


@dataclass
class SourceView:
    """What the copy is written from: the repaired view and the facts the records name."""

    items: list[dict[str, Any]]
    origins: dict[int, tuple[str | None, str | None]]  # seq → (event id, ts)
    cwd: str
    model: str | None
    agent_version: str | None  # "claude-code 2.1.3", "codex 0.46.0"
    source_id: str | None
    notes: list[str] = field(default_factory=list)
    calls_repaired: int = 0
    outputs_moved: int = 0


@dataclass
class WritebackResult:
    agent: str
    session_id: str
    path: Path
    resume: str  # the agent's command that resumes the copy
    records: int
    bytes_before: int  # the source's log
    bytes_after: int  # the written file
    calls_repaired: int
    outputs_moved: int
    items: int
    dry_run: bool
    notes: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {k: (str(v) if isinstance(v, Path) else v) for k, v in self.__dict__.items()}


def _writer(agent: str) -> Any:
    if agent == "claude":
        return claude
    if agent == "codex":
        return codex
    if agent == "grok":
        return grok
    raise UsageError(f"unknown agent '{agent}' for --to (one of {', '.join(AGENTS)})")


# -- the working copy ------------------------------------------------------------------------


def _native_format(path: Path) -> str | None:
    return foreign_format(path) if path.is_file() else None


def _working_copy(source: str, work: Path) -> tuple[Path, str | None, int]:
    """A catty session folder holding SOURCE's events (the folder itself for a catty
    session), the source's native format (None: catty) and the bytes of its log."""
    if source == "-":
        with Session.open("-") as s:
            (work / "in").mkdir()
            shutil.copyfile(s.log_path, work / "in" / LOG_NAME)
        return work / "in", None, (work / "in" / LOG_NAME).stat().st_size
    path = Path(source)
    if not path.exists():
        raise UsageError(f"{path}: no such session")
    fmt = _native_format(path)
    if fmt is not None:
        # Outputs stay whole in the copy's events (0: never a blob); `--max-bytes` decides.
        import_to_dir(fmt, path, work / "in", user_limit=0, tool_limit=0)
        return work / "in", fmt, path.stat().st_size
    session = Session.open(path)
    if session.directory is None:  # a bare log under another name: give it a folder
        (work / "in").mkdir()
        shutil.copyfile(session.log_path, work / "in" / LOG_NAME)
        return work / "in", None, session.log_path.stat().st_size
    return session.directory, None, session.log_path.stat().st_size


def _where(source: str, fmt: str | None) -> Any:
    """How a placeholder names the full text of an item: the command that prints it from the source."""
    ref = shlex.quote(str(Path(source).resolve())) if source != "-" else "SESSION"

    def where(item: dict[str, Any]) -> str:
        seq = item.get("seq")
        if not isinstance(seq, int):
            return "not in the source's log (a synthetic item)"
        if fmt is None:
            return f"event seq {seq} of {ref}: catty-ctx inspect {ref} --seq {seq}"
        return f"event seq {seq} of the import of {ref}: catty-ctx import {fmt} {ref} | catty-ctx inspect - --seq {seq}"

    return where


def _view_items(session: Any, prune_strategy: str | None) -> tuple[list[dict[str, Any]], list[str]]:
    """The repaired view: `repair`'s plan applied in memory, then (with a strategy) `prune`'s rewrite."""
    if prune_strategy is None:
        return repaired_items(session)

    opts = PruneOptions(strategy=prune_strategy)
    problem = opts.check()
    if problem:
        raise UsageError(problem)
    plan = repair_plan(session)
    ts = now_ts()
    events = list(session.events(warn=None))
    events += [prepare_event({**ev, "ts": ts}, plan.last_seq + 1 + i) for i, ev in enumerate(plan.events)]
    window = session_window(session, events[0] if events else None)
    return [vi.item for vi in prune(events, opts, window=window)], plan.notes()


def source_view(source: str, opts: WritebackOptions, work: Path) -> tuple[SourceView, str | None, int]:
    """Build the view of SOURCE on a private copy under WORK; (view, native format, source bytes)."""
    folder, fmt, bytes_before = _working_copy(source, work)
    copy = work / "copy"
    fork(folder, copy, at_turn=opts.at_turn)  # reads FOLDER only; the cut as `fork` makes it
    notes: list[str] = []
    with Session.open(copy) as s:
        if opts.compact:
            result = compact_session(s, force=True)
            if result.status != "compacted":
                notes.append(f"compact: {result.status.replace('_', ' ')}")
        items, fixed = _view_items(s, opts.prune)
        notes += fixed
        items, fixed = repair_items(items)
        notes += fixed
        origins: dict[int, tuple[str | None, str | None]] = {}
        first: dict[str, Any] = {}
        model: str | None = None
        version: str | None = None
        for ev in s.events(warn=None):
            kind = ev["kind"]
            if ev["seq"] == 0:
                first = ev
            if ev.get("agent"):
                continue
            if kind == "message":
                origins[ev["seq"]] = (ev.get("id") if isinstance(ev.get("id"), str) else None, ev.get("ts"))
            elif kind == "tool_result":
                origins[ev["seq"]] = (None, ev.get("ts"))
            elif kind == "usage" and isinstance(ev.get("model"), str) and not ev.get("off_branch"):
                model = ev["model"]
            elif kind == "state" and ev.get("facet") == "prompt_context" and isinstance(ev.get("value"), dict):
                v = ev["value"].get("agent_version")
                version = v if isinstance(v, str) else version
        items, missing = inline_images(items, copy)
        if missing:
            notes.append(f"{missing} image(s) missing from blobs/, written as a note")
    if not any(it.get("role") in ("user", "assistant", "tool") for it in items):
        raise DataError("no conversation to write (the view holds no message)", path=source)
    view = SourceView(
        items=items,
        origins=origins,
        cwd=opts.cwd or first.get("cwd") or os.getcwd(),
        model=opts.model or model or first.get("model"),
        agent_version=version,
        source_id=first.get("parent_session_id") or first.get("session_id"),  # (the copy is a fork: its parent is the source)
        notes=notes,
        calls_repaired=sum(1 for it in items if it.get("role") == "tool" and it.get("synthetic")),
    )
    if source != "-":  # an output a catty source keeps as a blob: its note names the source
        ref = shlex.quote(str(Path(source).resolve()))
        for it in items:
            if it.get("role") == "tool" and "blob" in it and isinstance(it.get("output"), str):
                it["output"] = it["output"].replace("catty-ctx blob SESSION ", f"catty-ctx blob {ref} ")
    if opts.max_bytes is not None:
        view.items, view.outputs_moved = slim(view.items, opts.max_bytes, _where(source, fmt))
    return view, fmt, bytes_before


# -- placing the file ------------------------------------------------------------------------


def place_new_file(path: Path, data: bytes) -> None:
    """Create PATH holding DATA, durably, never replacing anything (`files.create_exclusive`):
    a failure at any point (a full disk) leaves nothing behind but what was there."""
    folder = path.parent
    if folder.exists() and not folder.is_dir():
        raise WriteError(f"{folder}: not a folder; DEST is the folder the new session goes in")
    made = [f for f in (folder, *folder.parents) if not os.path.lexists(f)]  # the folders this call creates
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        _remove_made(made)
        raise WriteError(f"{folder}: cannot create ({exc.strerror})") from None
    try:
        placed = not os.path.lexists(path) and create_exclusive(path, data, durable=True, mode=FILE_MODE)
    except OSError as exc:
        _remove_made(made)  # a full disk leaves no empty DEST behind
        raise WriteError(f"{path}: cannot write ({exc.strerror})") from None
    if not placed:
        raise WriteError(f"{path}: already exists; fork --to never overwrites a file")


def _remove_made(folders: list[Path]) -> None:
    """The folders a failed write created (deepest first), removed while empty."""
    for f in folders:
        try:
            f.rmdir()
        except OSError:
            return


def place_new_folder(path: Path, files: dict[str, bytes]) -> None:
    """Create the folder PATH holding FILES (name → bytes), durably, never over anything: built
    as a hidden sibling (which the agent's listing skips), each file fsynced, then renamed into
    place. A failure leaves nothing behind but what was there."""
    folder = path.parent
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.writing-", dir=folder))
    except OSError as exc:
        raise WriteError(f"{folder}: cannot write ({exc.strerror})") from None
    try:
        for name, data in files.items():
            create_exclusive(tmp / name, data, durable=True, mode=FILE_MODE)
        if os.path.lexists(path):
            raise WriteError(f"{path}: already exists; fork --to never overwrites a session")
        place_folder(tmp, path)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise WriteError(f"{path}: cannot write ({exc.strerror})") from None
    except WriteError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


# -- the whole step --------------------------------------------------------------------------


def write_back(source: str, dest: str | os.PathLike[str] | None, opts: WritebackOptions, *, dry_run: bool = False) -> WritebackResult:
    """Write the view of SOURCE as a new session of OPTS.agent in DEST (default: the agent's
    own folder for the source's cwd); with DRY_RUN, say what would be written and write nothing."""
    writer = _writer(opts.agent)
    if opts.max_bytes is not None and opts.max_bytes < 1:
        raise UsageError("--max-bytes must be at least 1")
    session_id = opts.session_id or (writer.new_session_id() if hasattr(writer, "new_session_id") else str(uuid.uuid4()))
    if opts.session_id is not None and not writer.valid_session_id(session_id):
        raise UsageError(f"--session-id {session_id!r}: not a UUID")
    clear_dead_spools("writeback")  # the working copies of forks killed before they cleaned up
    with tempfile.TemporaryDirectory(prefix=spool_prefix("writeback")) as tmp:
        view, _fmt, bytes_before = source_view(source, opts, Path(tmp))
    now = datetime.now(timezone.utc)
    steps: list[Step] = to_steps(view.items, view.origins)
    records = writer.records(steps, view, session_id, now)
    problems = writer.check_records(records, session_id)
    if problems:
        raise WriterBug(f"the records built for {opts.agent} fail its loader's check ({problems[0]}); nothing was written")
    data = b"".join(orjson.dumps(r) + b"\n" for r in records)
    folder = Path(dest) if dest is not None else writer.default_dest(view.cwd, now)
    path = folder / writer.file_name(session_id, now)
    if dest is not None and folder.exists() and not folder.is_dir():
        raise WriteError(f"{folder}: not a folder; DEST is the folder the new session goes in")
    existing = writer.existing(folder, session_id)
    if existing is not None:
        raise WriteError(f"{existing}: already exists; fork --to never overwrites a file")
    if not dry_run:
        if hasattr(writer, "session_files"):  # an agent whose session is a folder of files (Grok Build)
            place_new_folder(path, writer.session_files(records, steps, view, session_id, now))
        else:
            place_new_file(path, data)
    return WritebackResult(
        agent=opts.agent, session_id=session_id, path=path, resume=writer.resume_command(session_id),
        records=len(records), bytes_before=bytes_before, bytes_after=len(data), calls_repaired=view.calls_repaired,
        outputs_moved=view.outputs_moved, items=len(view.items), dry_run=dry_run, notes=view.notes,
    )
