"""Importers: other agents' session files → catty-ctx events (docs/spec.md#import).

One module per format (`claude`, `codex`, `opencode`, `gemini`, `messages` for OpenAI and
Anthropic arrays) over one normalisation layer (`common`); `detect` names the format of a
source from its content. `import_events` streams the events to a callback (what
`catty-ctx import` prints); `import_to_dir` writes a whole session directory, built in a
temporary folder and renamed into place so a crash never leaves half a session.
"""
from __future__ import annotations

import gc
import importlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from ..errors import DataError, UsageError, WriteError
from ..formats import registry
from ..session.blobs import TOOL_LIMIT, USER_LIMIT, ShellCalls, externalize, write_blob
from ..session.create import write_summary
from ..session.events import Event
from ..session.files import new_dir_mode
from ..session.layout import PART_NAME, STAGING_SUFFIX
from ..session.new import building, check_dest_name, check_new_session_dest, missing_parents, place_new_session, remove_made
from ..session.store import new_summary
from .common import BlobSink, EventBuilder, ImportReport, Warn
from .detect import detect as detect_format  # `importers.detect` stays the submodule

FORMATS = registry.NAMES  # the format registry's names (catty_ctx/formats)
_WRITEBACK_STEP = 8 << 20
_EXTERNALIZED = ("message", "tool_result")  # the kinds `externalize` may move to blobs/
_MODULES = {name: fmt.importer for name, fmt in registry.FORMATS.items()}  # format → importer module


class _Start:
    """Handed to an importer: called once with the session's fields, it writes the session
    event (seq 0) and returns the builder for the rest."""

    def __init__(self, fmt: str, sink: Callable[[Event], object], blob_sink: BlobSink | None, report: ImportReport, strict: bool) -> None:
        self.fmt = fmt
        self.strict = strict
        self.sink = sink
        self.blob_sink = blob_sink
        self.report = report
        self.builder: EventBuilder | None = None

    def __call__(
        self,
        *,
        session_id: str,
        ts: Any = None,
        cwd: str | None = None,
        model: str | None = None,
        window: int | None = None,
        parent_session_id: str | None = None,
        source_path: Path | None = None,
    ) -> EventBuilder:
        b = EventBuilder(self.sink, report=self.report, blob_sink=self.blob_sink, strict=self.strict)
        source = {"format": self.fmt, "path": str(Path(source_path).resolve()) if source_path else self.report.source}
        b.session(session_id, ts=ts, parent_session_id=parent_session_id, cwd=cwd, model=model, window=window, source=source)
        self.builder = b
        return b


_HOLD_MAX = 10_000  # events held back before the first conversation event (a bound, not a rule)


def _converses(ev: Event) -> bool:
    """Whether EV puts conversation in the view (a system prompt, an empty message or text the
    harness wrote, such as a rollout's instructions, is none)."""
    kind = ev["kind"]
    if kind == "message":
        return ev.get("role") not in ("system", "developer") and not ev.get("synthetic") \
            and bool(ev.get("text") or ev.get("images") or ev.get("blob"))
    return kind in ("tool_call", "tool_result", "compaction")


class _ConversationGate:
    """Holds the first events (the session event, state, usage) back until one that puts
    conversation in the view arrives, so a source with none writes nothing at all: no event
    on stdout, no session folder."""

    def __init__(self, sink: Callable[[Event], object]) -> None:
        self.sink = sink
        self.held: list[Event] | None = []
        self.seen = False

    def __call__(self, ev: Event) -> None:
        if not self.seen and _converses(ev):
            self.seen = True
        held = self.held
        if held is None:
            self.sink(ev)
            return
        held.append(ev)
        if self.seen or len(held) > _HOLD_MAX:
            self.held = None
            for h in held:
                self.sink(h)

    def finish(self, source: Path) -> None:
        if not self.seen:
            raise DataError(f"no conversation in {source} (no message or tool call to import); nothing was written")


def resolve_format(fmt: str, source: Path) -> str:
    fmt = fmt.lower()
    if fmt == "auto":
        return detect_format(source)
    if fmt not in FORMATS:
        raise UsageError(f"unknown format '{fmt}' (one of {registry.names_text()}, auto)")
    return fmt


def import_events(
    fmt: str,
    source: str | os.PathLike[str],
    sink: Callable[[Event], object],
    *,
    blob_sink: BlobSink | None = None,
    lenient: bool = False,
    warn: Warn | None = None,
    session_id: str | None = None,
    strict: bool | None = None,
) -> tuple[ImportReport, EventBuilder]:
    """Import SOURCE in format FMT (or 'auto'), handing each event to `sink` in seq order.

    Without a `blob_sink`, image bytes stay inline (base64 `data`) so a stream loses nothing.
    `strict` re-validates every event (default: when CATTY_CTX_DEBUG is set).
    """
    if strict is None:
        strict = bool(os.environ.get("CATTY_CTX_DEBUG"))
    path = Path(source)
    if not path.exists():
        raise UsageError(f"{path}: no such file or directory")
    fmt = resolve_format(fmt, path)
    report = ImportReport(format=fmt, source=str(path.resolve()))
    gate = _ConversationGate(sink)
    start = _Start(fmt, gate, blob_sink, report, strict)
    module = importlib.import_module(f"{__package__}.{_MODULES[fmt]}")
    kwargs: dict[str, Any] = {"lenient": lenient, "warn": warn, "session_id": session_id}
    if _MODULES[fmt] == "messages":  # one module reads both messages dialects
        kwargs["flavour"] = fmt
    # An importer holds many small objects and makes no cycles: the cyclic collector's
    # repeated full passes over them would cost a third of the time for nothing.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        builder = module.convert(path, start, **kwargs)
    finally:
        if was_enabled:
            gc.enable()
    gate.finish(path)
    return report, builder


def summary_for(builder: EventBuilder, log_size: int) -> dict[str, Any]:
    assert builder.session_event is not None
    summary = new_summary(builder.session_event)
    summary["title"] = builder.title
    if builder.model:
        summary["model"] = builder.model
    if builder.window and not (builder.session_event or {}).get("window"):
        summary["window"] = builder.window
    summary["updated_at"] = builder.last_ts
    summary["events"] = builder.seq
    summary["last_seq"] = builder.seq - 1
    summary["log_size"] = log_size
    return summary


def import_to_dir(
    fmt: str,
    source: str | os.PathLike[str],
    out: str | os.PathLike[str],
    *,
    lenient: bool = False,
    warn: Warn | None = None,
    session_id: str | None = None,
    dry_run: bool = False,
    user_limit: int | None = None,
    tool_limit: int | None = None,
) -> ImportReport:
    """Import into a new session directory OUT (summary.json records `source`).

    Everything is written into a temporary folder beside OUT, fsynced, and renamed to OUT
    last: OUT appears whole or not at all. An existing session at OUT is never touched.
    As `append` does, a user message over `user_limit` bytes or a tool output over
    `tool_limit` bytes moves to blobs/ with a head and a tail kept inline (0: never).
    """

    user_limit = USER_LIMIT if user_limit is None else user_limit
    tool_limit = TOOL_LIMIT if tool_limit is None else tool_limit

    dest = Path(out)
    check_dest_name(dest)
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise UsageError(f"{dest}: already exists and is not empty; import writes a new session")
    check_new_session_dest(dest)
    if dry_run:
        report, _ = import_events(fmt, source, lambda ev: None, blob_sink=lambda h, d: None, lenient=lenient, warn=warn, session_id=session_id)
        return report
    parent = dest.resolve().parent
    made = missing_parents(parent)  # the folders this import makes: a failed one removes them again
    try:
        parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{dest.name}.importing-", suffix=STAGING_SUFFIX, dir=parent))
        os.chmod(staging, new_dir_mode())  # mkdtemp makes 0700: the session folder gets the umask's mode, as any other
    except OSError as exc:
        remove_made(made)
        raise WriteError(f"{dest}: cannot create ({exc.strerror})") from None
    with building(staging, dest, "cannot write", made=made):
        def blob_sink(handle: str, data: bytes) -> None:
            write_blob(staging, data)  # content-addressed: the same handle

        log_path = staging / PART_NAME
        with open(log_path, "wb", buffering=1 << 20) as log:
            dumps = orjson.dumps
            write = log.write
            fd = log.fileno()
            advise = getattr(os, "posix_fadvise", None)
            started = [0, 0]  # bytes written, bytes whose writeback has been started

            shells = ShellCalls()  # a terminal's output has its own cap; its call comes first
            where = str(dest.resolve())  # the blob note names the session as it will be, not its staging folder

            def sink(ev: Event) -> None:
                shell = shells.see(ev)
                if ev["kind"] in _EXTERNALIZED:
                    ev = externalize(ev, staging, user_limit=user_limit, tool_limit=tool_limit, warn=warn, shell=shell, display=where)
                line = dumps(ev) + b"\n"
                write(line)
                started[0] += len(line)
                if advise is not None and started[0] - started[1] >= _WRITEBACK_STEP:
                    # Start writing the flushed part to disk now (Linux starts writeback on
                    # DONTNEED without waiting), so the final fsync overlaps the parsing
                    # instead of following it.
                    log.flush()
                    advise(fd, started[1], started[0] - started[1], os.POSIX_FADV_DONTNEED)
                    started[1] = started[0]

            report, builder = import_events(fmt, source, sink, blob_sink=blob_sink, lenient=lenient, warn=warn, session_id=session_id)
            log.flush()
            os.fsync(fd)
        write_summary(staging, summary_for(builder, log_path.stat().st_size))
        place_new_session(staging, dest)
    return report
