"""Appending events to a session, as `catty-ctx append` does: read them, make the session when
asked, move large payloads to blobs/, then append (docs/spec.md#commands).

Blobs first, the events naming them last: the event is the commit point."""
from __future__ import annotations

from collections.abc import Callable, Iterable
from pathlib import Path
from typing import IO, Any

from .defaults import DEFAULT_LOCK_TIMEOUT, TOOL_LIMIT, USER_LIMIT
from .errors import DataError, UsageError
from .formats.ownership import require_ours
from .session.blobs import externalize, shell_results
from .session.create import create_session
from .session.events import Event
from .session.jsonl import STDIN_NAME, json_lines
from .session.layout import LOG_NAME
from .session.store import Session
from .view.boundary import append_with_repairs


def read_events(stream: IO[bytes], display: str = STDIN_NAME) -> list[dict[str, Any]]:
    """The events of a JSON Lines STREAM (blank lines skipped), each an object with a `kind`;
    the first that is not is a DataError naming DISPLAY:line."""
    pending = []
    for lineno, obj in json_lines(stream, display):
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise DataError("an event needs to be an object with a 'kind'", path=display, line=lineno)
        pending.append(obj)
    return pending


def append_events(session: str | Path, events: Iterable[dict[str, Any]], *, create: bool = False, window: int | None = None,
                  model: str | None = None, cwd: str | None = None, session_id: str | None = None,
                  lock_timeout: float = DEFAULT_LOCK_TIMEOUT, max_user_bytes: int = USER_LIMIT, max_tool_bytes: int = TOOL_LIMIT,
                  allow_duplicate_ids: bool = False, repair: bool = True, warn: Callable[[str], None] | None = None) -> list[Event]:
    """Append EVENTS to the session at SESSION (made first when CREATE and missing: its window,
    model, cwd and id), their large payloads moved to blobs/ first; with REPAIR, what the
    batch's boundary needs repaired too (`boundary.append_with_repairs`). The events written."""
    if str(session) == "-":
        raise UsageError("append writes to a session; SESSION cannot be -")
    path = Path(session)
    exists = (path / LOG_NAME).is_file() if path.is_dir() else path.is_file()
    if not exists:
        if not create:
            raise UsageError(f"{session}: no such session (use --create to make it)")
        target = create_session(path, session_id=session_id, window=window, model=model, cwd=cwd, lock_timeout=lock_timeout)
    else:
        target = Session.open(path)
    require_ours(target)  # before its blobs: another agent's file is never written into
    pending = list(events)
    # A terminal's output has its own cap (in characters): its call is in the batch or the log.
    shells = shell_results(target.log_path, pending) if target.directory is not None else set()
    where = str(target.directory.resolve()) if target.directory is not None else None
    pending = [externalize(ev, target.directory, user_limit=max_user_bytes, tool_limit=max_tool_bytes, warn=warn, shell=i in shells, display=where)
               for i, ev in enumerate(pending)]
    return append_with_repairs(target, pending, lock_timeout=lock_timeout, warn=warn, allow_duplicate_ids=allow_duplicate_ids, repair=repair)
