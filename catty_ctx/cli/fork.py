"""`catty-ctx fork`: a new session from turns 1..N of another.

This command starts without the CLI framework (see `fastpath`): an agent forks a session to
retry a turn or branch a task, and typer's import would be much of such a run.
"""
from __future__ import annotations

from .errors import note, warn
from .fastpath import declare as declare_command, parse_one
from .output import Column, emit, show_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The options of `fork`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    ("at_turn", ("--at-turn",), int, "N", "Keep turns 1..N (default: all).", {"min": 0}),
    ("model", ("--model",), str, "M", "The child's model."),
    ("cwd", ("--cwd",), str, "DIR", "The child's working directory."),
    ("dry_run", ("--dry-run",), None, None, None),
    ("as_json", ("--json",), None, None, None),
)
EPILOG = "Example: catty-ctx fork S S-retry --at-turn 3 --model other-model"
FORK_DOC = """Start a new session DEST from turns 1..N of SESSION; the parent is untouched.

    The events are copied with their seq, with the segments and blobs they need; DEST's own
    session event at seq 0 records the parent (parent_session_id, forked_from_seq), and its
    summary.json is of kind "fork".

    DEST is built in a temporary directory beside it and renamed into place, so a crash
    leaves no half DEST. Symbolic links are never followed out of SESSION.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session", "dest")


def declare() -> None:
    """Register `fork` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("fork", run, PARAMS, FORK_DOC, EPILOG, {
        "session": ("SESSION", "The parent session directory."), "dest": ("DEST", "The new session directory (must not exist, or be empty)."),
    })


def run(session: str, dest: str, at_turn: int | None = None, model: str | None = None, cwd: str | None = None,
        dry_run: bool = False, as_json: bool = False) -> None:
    """Fork SESSION into DEST (with --dry-run, only say what it would copy); the result goes to stdout."""
    # start-up: the library loads when the command runs, not for --help or another command
    from ..fork import fork

    result = fork(session, dest, at_turn=at_turn, model=model, cwd=cwd, dry_run=dry_run)
    for path in result.skipped:
        warn(f"{path}: symbolic link not followed")
    doc = result.as_dict()
    doc["dry_run"] = dry_run
    if not as_json:
        note(f"{'would fork' if dry_run else 'forked'} {session} → {dest}: {result.events} events, {result.turns} turn(s)")
    cols = [Column("dest", "path"), Column("session_id", "id"), *(Column(k, "num") for k in ("forked_from_seq", "events", "turns", "segments", "blobs"))]
    emit(doc, as_json=as_json, show=lambda d: show_table([d], cols))
