"""`catty-ctx append`: events from stdin onto a session's log, under its lock."""
from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Optional

import typer

from ..defaults import DEFAULT_LOCK_TIMEOUT, TOOL_LIMIT, USER_LIMIT
from ..errors import DataError, UsageError
from . import app
from .errors import handle_errors, warn
from .options import LockTimeoutOpt, MaxToolBytesOpt, MaxUserBytesOpt
from .output import write_lines


@app.command(
    "append",
    epilog="Example: echo '{\"kind\":\"message\",\"id\":\"m1\",\"role\":\"user\",\"text\":\"hi\"}' | catty-ctx append --create S",
)
@handle_errors
def append_cmd(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="A session directory (or an updates.jsonl file).")],
    create: Annotated[bool, typer.Option("--create", help="Make the session (summary.json and its session event) if it is missing.")] = False,
    window: Annotated[Optional[int], typer.Option("--window", min=1, metavar="N", help="Context window in tokens, with --create.")] = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="M", help="Model name, with --create.")] = None,
    cwd: Annotated[Optional[str], typer.Option("--cwd", metavar="DIR", help="Working directory recorded, with --create.")] = None,
    session_id: Annotated[Optional[str], typer.Option("--session-id", metavar="ID", help="Session id, with --create (default: a new UUID).")] = None,
    lock_timeout: LockTimeoutOpt = DEFAULT_LOCK_TIMEOUT,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not echo the appended events.")] = False,
    max_user_bytes: MaxUserBytesOpt = USER_LIMIT,
    max_tool_bytes: MaxToolBytesOpt = TOOL_LIMIT,
) -> None:
    """Append events read from stdin (JSON Lines: kind + fields, or full envelopes).

    Each event gets the next seq (contiguous even with concurrent writers) and a ts unless
    it has one. Every line is checked before anything is written. The appended events are
    echoed on stdout as full envelopes (an event stream), unless --quiet. Large user
    messages and tool outputs are stored in the session's blobs/ first (the event keeps a
    preview, the handle and the full size); `catty-ctx blob` prints them whole.
    """

    # start-up: the library loads when the command runs, not for --help or another command
    import orjson

    from ..blobs import externalize
    from ..jsonl import json_problem, numbered_lines
    from ..ownership import require_ours
    from ..store import LOG_NAME, Session, create_session

    pending = []
    for lineno, line in numbered_lines(sys.stdin.buffer, "<stdin>", final="kept"):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise DataError(json_problem(exc), path="<stdin>", line=lineno) from None
        if not isinstance(obj, dict) or not isinstance(obj.get("kind"), str):
            raise DataError("an event needs to be an object with a 'kind'", path="<stdin>", line=lineno)
        pending.append(obj)
    path = Path(session)
    if session == "-":
        raise UsageError("append writes to a session; SESSION cannot be -")
    exists = (path / LOG_NAME).is_file() if path.is_dir() else path.is_file()
    if not exists:
        if not create:
            raise UsageError(f"{session}: no such session (use --create to make it)")
        target = create_session(path, session_id=session_id, window=window, model=model, cwd=cwd, lock_timeout=lock_timeout)
    else:
        target = Session.open(path)
    require_ours(target)  # before its blobs: another agent's file is never written into
    # Blobs first, the events naming them last (the event is the commit point).
    pending = [externalize(ev, target.directory, user_limit=max_user_bytes, tool_limit=max_tool_bytes, warn=warn) for ev in pending]
    written = target.append(pending, lock_timeout=lock_timeout)
    if not quiet:
        write_lines(written)
