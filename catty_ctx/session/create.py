"""A session made in place (docs/spec.md#the-session-directory): its folder, its session event
(seq 0) and summary.json, idempotently; and summary.json replaced whole."""
from __future__ import annotations

import os
import uuid
from pathlib import Path
from typing import Any

from ..defaults import DEFAULT_LOCK_TIMEOUT
from ..errors import WriteError
from .jsonl import last_newline_end
from .layout import LOG_NAME, SUMMARY_NAME
from .store import Session, atomic_write, open_log_for_append, summary_document


def write_summary(directory: Path, summary: dict[str, Any]) -> None:
    atomic_write(directory / SUMMARY_NAME, summary_document(summary))


def create_session(
    directory: str | os.PathLike[str],
    *,
    session_id: str | None = None,
    window: int | None = None,
    model: str | None = None,
    cwd: str | None = None,
    parent_session_id: str | None = None,
    source: Any = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
) -> Session:
    """Make a session directory with its session event (seq 0) and summary.json.

    An existing session is opened as it is (creating is idempotent).
    """
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteError(f"{path}: cannot create session directory ({exc.strerror})") from None
    log = path / LOG_NAME
    session = Session(log_path=log, directory=path, display=str(log))
    with session.lock(lock_timeout):
        if log.exists() and last_newline_end(log) > 0:
            return session
        event: dict[str, Any] = {"kind": "session", "session_id": session_id or str(uuid.uuid4())}
        for key, value in (("parent_session_id", parent_session_id), ("cwd", cwd), ("model", model), ("window", window), ("source", source)):
            if value is not None:
                event[key] = value
        os.close(open_log_for_append(log, session.display))
        session.append_locked([event], warn=None)
    return session
