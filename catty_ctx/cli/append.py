"""`catty-ctx append`: events from stdin onto a session's log, under its lock.

This command starts without the CLI framework (see `fastpath`): an agent appends after every
step, and typer's import would be most of that run.
"""
from __future__ import annotations

import sys

from ..appending import append_events, read_events
from ..defaults import DEFAULT_LOCK_TIMEOUT, TOOL_LIMIT, USER_LIMIT
from .errors import warn
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one, shared, value
from .output import write_lines

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The options of `append`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    flag("create", "--create", help="Make the session (summary.json and its session event) if it is missing."),
    value("window", "--window", kind=int, metavar="N", help="Context window in tokens, with --create.", min=1),
    value("model", "--model", metavar="M", help="Model name, with --create."),
    value("cwd", "--cwd", metavar="DIR", help="Working directory recorded, with --create."),
    value("session_id", "--session-id", metavar="ID", help="Session id, with --create (default: a new UUID)."),
    shared("lock_timeout"),
    flag("quiet", "--quiet", "-q", help="Do not echo the appended events."),
    shared("max_user_bytes"),
    shared("max_tool_bytes"),
    flag("allow_duplicate_ids", "--allow-duplicate-ids", help="Append an event even when its id (message id, call id, usage request id) is already in the log."),
    flag("no_repair", "--no-repair",
         help="Do not answer the calls a new user turn or a cancellation leaves dangling (for a runtime that repairs itself)."),
)
APPEND_DOC = """Append events read from stdin (JSON Lines: kind + fields, or full envelopes).

    Each event gets the next seq (contiguous even with concurrent writers) and a ts unless
    it has one. Every line is checked before anything is written. The appended events are
    echoed on stdout as full envelopes (an event stream), unless --quiet. Large user
    messages and tool outputs are stored in the session's blobs/ first (the event keeps a
    preview, the handle and the full size); `catty-ctx blob` prints them whole. The batch
    lands whole or not at all; an event whose id is already in the log is skipped (said on
    stderr), so a retry after a crash or a full disk never duplicates. A user message that
    opens a new turn (or a cancellation: synthetic "interrupted") after calls left without a
    result first appends a `repair` event answering them (reason new_turn or cancelled),
    under the same lock; calls of a turn still running are never touched. --no-repair
    leaves that to the runtime.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session")


def declare() -> None:
    """Register `append` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    epilog = "Example: echo '{\"kind\":\"message\",\"id\":\"m1\",\"role\":\"user\",\"text\":\"hi\"}' | catty-ctx append --create S"
    declare_command("append", run, PARAMS, APPEND_DOC, epilog, {"session": ("SESSION", "A session directory (or an updates.jsonl file).")})


def run(session: str, create: bool = False, window: int | None = None, model: str | None = None, cwd: str | None = None,
        session_id: str | None = None, lock_timeout: float = DEFAULT_LOCK_TIMEOUT, quiet: bool = False,
        max_user_bytes: int = USER_LIMIT, max_tool_bytes: int = TOOL_LIMIT, allow_duplicate_ids: bool = False, no_repair: bool = False) -> None:
    """Check the events on stdin, then append them to SESSION (made with --create); echo them unless QUIET."""
    written = append_events(session, read_events(sys.stdin.buffer), create=create, window=window, model=model, cwd=cwd,
                            session_id=session_id, lock_timeout=lock_timeout, max_user_bytes=max_user_bytes,
                            max_tool_bytes=max_tool_bytes, allow_duplicate_ids=allow_duplicate_ids, repair=not no_repair, warn=warn)
    if not quiet:
        write_lines(written)
