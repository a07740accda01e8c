"""`catty-ctx fork`: a new session from turns 1..N of another."""
from __future__ import annotations

from typing import Annotated, Optional

import typer

from . import app
from .errors import handle_errors, note, warn
from .options import DryRunOpt, JsonOpt
from .output import Column, emit, show_table


@app.command("fork", epilog="Example: catty-ctx fork S S-retry --at-turn 3 --model other-model")
@handle_errors
def fork_cmd(
    session: Annotated[str, typer.Argument(metavar="SESSION", help="The parent session directory.")],
    dest: Annotated[str, typer.Argument(metavar="DEST", help="The new session directory (must not exist, or be empty).")],
    at_turn: Annotated[Optional[int], typer.Option("--at-turn", metavar="N", min=0, help="Keep turns 1..N (default: all).")] = None,
    model: Annotated[Optional[str], typer.Option("--model", metavar="M", help="The child's model.")] = None,
    cwd: Annotated[Optional[str], typer.Option("--cwd", metavar="DIR", help="The child's working directory.")] = None,
    dry_run: DryRunOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Start a new session DEST from turns 1..N of SESSION; the parent is untouched.

    The events are copied with their seq, with the segments and blobs they need; DEST's own
    session event at seq 0 records the parent (parent_session_id, forked_from_seq), and its
    summary.json is of kind "fork".

    DEST is built in a temporary directory beside it and renamed into place, so a crash
    leaves no half DEST. Symbolic links are never followed out of SESSION.
    """
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
