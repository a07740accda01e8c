"""The one target resolver: what every command and the library are given — `-`, a catty
session, an agent's own session file, a ROOT of sessions, a URL — classified once (`resolve`),
opened (`open_session`) or walked (`root_sessions`, the one ROOT walker)
(docs/architecture.md#formats-and-sources, docs/architecture.md#native-sessions).

A native session is imported in memory, as `catty-ctx import auto FILE | catty-ctx CMD -`
would: its events go to a private spool (a temporary folder of this process, removed on
close), never beside the source, and the Session keeps the source's identity (`origin`:
agent, its session id, path, cwd, title, model) for the commands to show. Such a Session is
read-only: its lock refuses, so a writer handed one stops before any write. A ROOT lists its
catty sessions and its native ones in one walk (`formats.roots`).
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

import orjson

from .errors import DataError, UsageError
from .fleet.urls import is_url, url_is_root, url_sessions
from .formats import grok
from .formats.ownership import foreign_format, native_refusal
from .formats.registry import FORMATS
from .formats.roots import NativeSource, walk
from .session.files import spool_prefix
from .session.jsonl import Warn, stderr_warning
from .session.layout import LOG_NAME
from .session.store import Session

Unit = "Path | NativeSource"  # one session of a ROOT
STDIN, SESSION, NATIVE, ROOT = "stdin", "session", "native", "root"


@dataclass(frozen=True)
class Target:
    """A command's target, classified: KIND is `stdin` (`-`), `session` (a catty session folder
    or log, or a URL naming one), `native` (another agent's session file: NATIVE) or `root` (a
    folder or URL of sessions)."""

    name: str
    kind: str
    native: NativeSource | None = None

    @property
    def is_root(self) -> bool:
        return self.kind == ROOT


def resolve(target: str | os.PathLike[str] | NativeSource) -> Target:
    """TARGET classified, by the one rule every command and the library share."""
    if isinstance(target, NativeSource):
        return Target(str(target), NATIVE, target)
    name = os.fspath(target)
    if name == "-":
        return Target(name, STDIN)
    if is_url(name):
        return Target(name, ROOT if url_is_root(name) else SESSION)
    path = Path(name)
    if path.is_dir():
        try:
            holds_log = (path / LOG_NAME).exists()
        except OSError as exc:  # (a folder that cannot be listed: named, never an internal error)
            raise DataError(f"cannot read ({exc.strerror})", path=name) from None
        if not holds_log:
            return Target(name, ROOT)
    native = native_source(path)
    return Target(name, NATIVE, native) if native is not None else Target(name, SESSION)


def is_root(target: str | os.PathLike[str]) -> bool:
    """Whether TARGET names a ROOT of sessions (`resolve(TARGET).is_root`)."""
    return resolve(target).is_root


def native_source(target: str | os.PathLike[str] | NativeSource) -> NativeSource | None:
    """TARGET as a native session (None: a catty session, `-`, a URL, or not a file)."""
    if isinstance(target, NativeSource):
        return target
    if str(target) == "-" or is_url(target):
        return None
    path = Path(target)
    if path.is_dir():  # a Grok Build session folder (catty-ctx's own log has the same name)
        return NativeSource(grok.GROK, path / LOG_NAME) if grok.is_session_dir(path) else None
    if not path.is_file():
        return None
    if path.name == LOG_NAME:
        return NativeSource(grok.GROK, path) if grok.log_is_grok(path) else None
    fmt = foreign_format(path)
    return NativeSource(fmt, path) if fmt is not None else None


def open_session(target: str | os.PathLike[str] | NativeSource, *, stdin: IO[bytes] | None = None,
                 warn: Warn | None = stderr_warning) -> Session:
    """Open TARGET for reading: a native session is imported into a private spool."""
    native = native_source(target)
    if native is None:
        session = Session.open(target, stdin=stdin)  # (native_source took every NativeSource)
        fmt = foreign_format(session.log_path) if session.stdin else None
        if fmt is not None and FORMATS[fmt].homes:  # (an agent's own transcript piped in: its import is the event stream)
            session.close()
            raise DataError(f"{FORMATS[fmt].label}, not catty-ctx events; name the file instead of -, "
                            f"or pipe its import: catty-ctx import {fmt} FILE | catty-ctx ... -", path="<stdin>")
        return session
    return import_session(native, warn=warn)


def import_session(native: NativeSource, *, warn: Warn | None = stderr_warning) -> Session:
    """NATIVE's events, imported into a private spool, as a read-only Session naming its source.
    A source the importer refuses raises its error (exit 65 and its one line), nothing written."""
    spool = tempfile.TemporaryDirectory(prefix=spool_prefix("native"))  # (its pid: see `files.clear_dead_spools`)
    log = Path(spool.name) / LOG_NAME
    try:
        report, builder = import_log(native, log, warn=warn)
    except BaseException:
        spool.cleanup()
        raise
    first = builder.session_event or {}
    fmt = FORMATS[report.format]
    origin: dict[str, Any] = {
        "format": fmt.name,
        "agent": fmt.agent,
        "label": fmt.label,
        "path": str(native.path),
        "session_id": first.get("session_id"),
        "cwd": first.get("cwd"),
        "title": builder.title or "",
        "model": builder.model or first.get("model"),
        "unread": list(report.invalid),  # (FILE:LINE of each line skipped: a check's finding, `repair.plan`)
    }
    return Session(log_path=log, directory=None, display=str(native), _spool=spool, origin=origin,
                   refusal=native_refusal(origin, str(native)))


def import_log(native: NativeSource, log: Path, *, warn: Warn | None = stderr_warning) -> tuple[Any, Any]:
    """Write NATIVE's events to LOG (a file of a private spool) as `import auto --lenient` prints
    them: a reader skips a line it cannot read (not JSON, or JSON but no object) with a warning
    naming it, as `usage` does, where `import` stops unless told (docs/spec.md#the-command-line);
    the import's report and builder."""
    from .importers.pipeline import import_events

    with open(log, "wb", buffering=1 << 20) as out:
        write = out.write
        dumps = orjson.dumps
        return import_events(native.format, native.path, lambda ev: write(dumps(ev) + b"\n"), warn=warn, session_id=native.session_id,
                             lenient=True)


class Found(list[Any]):
    """`root_sessions`' answer: the sessions, and in `unreadable` the folders and files it could not read."""

    unreadable: list[str]


def root_sessions(root: str | os.PathLike[str], *, allow_empty: bool = False, warn: Warn | None = stderr_warning) -> Found:
    """The one ROOT walker: the sessions under ROOT, catty ones (their folders, or URLs under a
    URL ROOT) and native ones (NativeSource), in walk order; none is a usage error (a cron job
    pointed at the wrong folder must not pass) unless the caller allows an empty ROOT. A folder
    or a session's file that cannot be read is named to WARN, one line each, and kept in the
    answer's `unreadable` (a check over the ROOT is then no "fine")."""
    missed: list[str] = []

    def unreadable(path: str, why: str) -> None:
        missed.append(path)
        if warn is not None:
            warn(f"{path}: cannot read ({why}); skipped")

    found = Found(url_sessions(str(root)) if is_url(root) else walk(root, unreadable))
    found.unreadable = missed
    if not found and not allow_empty:
        raise UsageError(f"no session under {root}, of catty-ctx or of an agent ({', '.join(f.agent for f in FORMATS.values() if f.homes)}) "
                         "(--allow-empty accepts an empty ROOT)")
    return found


def describe(session: Session) -> dict[str, Any]:
    """Who wrote SESSION: the agent's origin for a native one, catty-ctx's own otherwise."""
    if session.origin is not None:
        return dict(session.origin)
    return {"format": "catty", "agent": "catty-ctx", "path": str(session.directory or session.display)}

