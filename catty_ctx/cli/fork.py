"""`catty-ctx fork`: a new session from turns 1..N of another; with `--to`, a new Claude Code
or Codex session from the view of any session (`writeback`).

This command starts without the CLI framework (see `fastpath`): an agent forks a session to
retry a turn or branch a task, and typer's import would be much of such a run.
"""
from __future__ import annotations

from ..defaults import PRUNE_STRATEGIES, WRITEBACK_AGENTS
from ..errors import UsageError
from ..fork import fork
from .errors import note, warn
from .fastpath import declare as declare_command
from .fastpath import flag, parse_one, shared, value
from .output import Column, emit, show_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# The options of `fork`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    value("at_turn", "--at-turn", kind=int, metavar="N", help="Keep turns 1..N (default: all).", min=0),
    value("model", "--model", metavar="M", help="The child's model."),
    value("cwd", "--cwd", metavar="DIR", help="The child's working directory."),
    value("to", "--to", metavar="claude|codex|grok", help="Write a NEW native session of that agent (DEST: a folder, default the agent's own for the cwd).", choices=WRITEBACK_AGENTS),
    flag("repair", "--repair", help="With --to: dangling calls answered, orphans and duplicates dropped (always applied: the default)."),
    value("prune", "--prune", metavar="STRATEGY", help="With --to: old tool outputs shortened as `prune` does (cache-aware or tiered).", choices=PRUNE_STRATEGIES),
    flag("compact", "--compact", help="With --to: the span before the tail summarised, as `compact --force` does."),
    value("max_bytes", "--max-bytes", kind=int, metavar="N", help="With --to: tool outputs and images over N bytes moved out (a placeholder names the source).", min=1),
    value("session_id", "--session-id", metavar="UUID", help="With --to: the new session's id (default: a new one)."),
    shared("dry_run"),
    shared("as_json"),
    shared("agent"),
)
EPILOG = ("Examples: catty-ctx fork S S-retry --at-turn 3 --model other-model; "
          "catty-ctx fork ~/.claude/projects/P/ID.jsonl --to claude --max-bytes 200000")
FORK_DOC = """Start a new session DEST from turns 1..N of SESSION; the parent is untouched.

    The events are copied with their seq, with the segments and blobs they need; DEST's own
    session event at seq 0 records the parent (parent_session_id, forked_from_seq), and its
    summary.json is of kind "fork".

    DEST is built in a temporary directory beside it and renamed into place, so a crash
    leaves no half DEST. Symbolic links are never followed out of SESSION.

    With --to claude|codex|grok, SESSION is any session catty-ctx reads (native or catty) and DEST
    a folder (default: the agent's own folder for the session's cwd): a NEW native session is
    written there from the repaired view (--prune, --compact, --at-turn, --max-bytes choose
    what it holds); SESSION is never opened for writing and no file is ever replaced (exit 73).
    Prints the new id and the command that resumes it. See docs/writeback.md.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "session", "dest", required=1)


def declare() -> None:
    """Register `fork` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("fork", run, PARAMS, FORK_DOC, EPILOG, {
        "session": ("SESSION", "The parent session directory (with --to: any session)."),
        "dest": ("DEST", "The new session directory (must not exist, or be empty); with --to, the folder the new file goes in."),
    })


def run(session: str, dest: str | None = None, at_turn: int | None = None, model: str | None = None, cwd: str | None = None,
        to: str | None = None, repair: bool = False, prune: str | None = None, compact: bool = False, max_bytes: int | None = None,
        session_id: str | None = None, dry_run: bool = False, as_json: bool = False, agent: str | None = None) -> None:
    """Fork SESSION into DEST (with --dry-run, only say what it would copy); the result goes to stdout."""
    if to is not None:
        if agent is not None:
            raise UsageError("--agent makes a catty session of a subagent: fork SESSION DEST --agent ID, then --to from it")
        return _write_back(session, dest, to, at_turn=at_turn, model=model, cwd=cwd, prune=prune, compact=compact,
                           max_bytes=max_bytes, session_id=session_id, dry_run=dry_run, as_json=as_json)
    given = [name for name, v in (("--repair", repair), ("--prune", prune), ("--compact", compact), ("--max-bytes", max_bytes),
                                  ("--session-id", session_id)) if v]
    if given:
        raise UsageError(f"{given[0]} needs --to claude|codex|grok")
    if dest is None:
        raise UsageError("fork needs DEST (or --to claude|codex|grok)")

    result = fork(session, dest, at_turn=at_turn, model=model, cwd=cwd, dry_run=dry_run, agent=agent)
    for path in result.skipped:
        warn(f"{path}: symbolic link not followed")
    doc = result.as_dict()
    doc["dry_run"] = dry_run
    if not as_json:
        note(f"{'would fork' if dry_run else 'forked'} {session} → {dest}: {result.events} events, {result.turns} turn(s)")
    cols = [Column("dest", "path"), Column("session_id", "id"), *(Column(k, "num") for k in ("forked_from_seq", "events", "turns", "segments", "blobs"))]
    emit(doc, as_json=as_json, show=lambda d: show_table([d], cols))


def _write_back(session: str, dest: str | None, agent: str, *, dry_run: bool, as_json: bool, **options: Any) -> None:
    from ..writeback.pipeline import WritebackOptions, write_back

    result = write_back(session, dest, WritebackOptions(agent=agent, **options), dry_run=dry_run)
    doc = result.as_dict()
    if not as_json:
        what = "would write" if dry_run else "wrote"
        note(f"{what} {result.path}: {result.records} records, {result.bytes_before:,} → {result.bytes_after:,} bytes, "
             f"{result.calls_repaired} call(s) answered, {result.outputs_moved} output(s) moved out"
             + (f" ({', '.join(result.notes)})" if result.notes else ""))
        if not dry_run:
            note(f"resume it with: {result.resume}")
    cols = [Column("session_id", "id"), Column("path", "path"), Column("resume", "text"),
            *(Column(k, "num") for k in ("records", "bytes_before", "bytes_after", "calls_repaired", "outputs_moved"))]
    emit(doc, as_json=as_json, show=lambda d: show_table([d], cols))
