"""`catty-ctx repair`: find and fix what makes a session unloadable or unsendable.

This command starts without the CLI framework (see `fastpath`): a hook or a cron job checks or
repairs sessions one at a time, and typer's import would be most of such a run.
"""
from __future__ import annotations

import sys

from ..defaults import CONNECT_TIMEOUT, DEFAULT_LOCK_TIMEOUT
from ..fleet.cluster import engine_for
from ..formats.ownership import require_ours
from ..repair.fix import repair_session, repair_stream
from ..repair.plan import problem_notes, repair_plan
from ..repair.root import repair_root
from ..session.store import Session
from ..sources import open_session, resolve
from .errors import note, warn
from .fastpath import CLUSTER, TARGET_ARG, flag, parse_one, shared
from .fastpath import declare as declare_command
from .output import Column, emit, progress_iter, rows_out, show_table

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_COLUMNS = [Column("action"), Column("reason", "text"), Column("target_seq", "num"), Column("call_id", "id"),
            *(Column(k, "num") for k in ("line", "offset", "bytes"))]

# The options of `repair`, declared once (see `fastpath`); the shared ones bring their own help (None here).
PARAMS = (
    flag("check", "--check", help="Only report what is wrong; exit 1 when anything is found, 0 when clean."),
    shared("dry_run"),
    flag("force", "--force", help="Repair even when more than half of the log's lines are invalid (they all go to quarantine)."),
    shared("allow_empty"),
    shared("as_json"),
    shared("lock_timeout"),
    *CLUSTER,
    shared("allow_remote_writes"),
)
EPILOG = ("Examples: catty-ctx repair S --check; catty-ctx repair ~/sessions (a ROOT, for cron); "
          "catty-ctx import claude F | catty-ctx repair - | catty-ctx inspect -")
REPAIR_DOC = """Find and fix what makes a session unloadable or unsendable; nothing is ever deleted.

    It fixes a torn last line and invalid lines (moved to quarantine/), duplicate results,
    dangling calls, orphan and displaced results, duplicated streaming snapshots, and a
    missing or stale summary.json.

    Conversation fixes are appended as `repair` events that the view applies; the original
    events stay in the log. A ROOT repairs every session under it. `-` reads an event stream
    and writes it back on stdout with its repair events appended.

    Another agent's file (a Claude Code transcript, a Codex rollout, ...) is never touched:
    exit 65 and the `import` command that reads it. Nor is a log with more than half of its
    lines invalid, unless --force. --check and --dry-run refuse the same.

    With --scheduler, a ROOT's sessions are checked on a Dask cluster; repairing them there
    also needs --allow-remote-writes.
    """


def parse_args(args: list[str]) -> dict[str, Any] | None:
    """The keyword arguments of `run` for ARGS, or None when typer should parse them (see `fastpath.parse`)."""
    return parse_one(args, PARAMS, "target")


def declare() -> None:
    """Register `repair` on the typer application (help, completion, docs, unusual spellings), from PARAMS."""
    declare_command("repair", run, PARAMS, REPAIR_DOC, EPILOG, {"target": TARGET_ARG})


def run(target: str, check: bool = False, dry_run: bool = False, force: bool = False, allow_empty: bool = False, as_json: bool = False,
        lock_timeout: float = DEFAULT_LOCK_TIMEOUT, scheduler: str | None = None, connect_timeout: float = CONNECT_TIMEOUT,
        allow_remote_writes: bool = False) -> None:
    """Repair TARGET (with --check or --dry-run, only report what it would do)."""
    if resolve(target).is_root:
        _repair_root(target, check=check, dry_run=dry_run, force=force, allow_empty=allow_empty, as_json=as_json, lock_timeout=lock_timeout,
                     scheduler=scheduler, connect_timeout=connect_timeout, allow_remote_writes=allow_remote_writes)
        return

    # --check and --dry-run only read: a native session is read as its import would be
    with (open_session(target, warn=warn) if check or dry_run else Session.open(target)) as session:
        require_ours(session) if not (check or dry_run) else None
        if session.stdin and not (check or dry_run):
            plan = repair_stream(session, sys.stdout.buffer)
            sys.stdout.flush()
            if plan.torn is not None:
                warn(f"{session.display}: torn final line ({plan.torn[1]} bytes) dropped")
            if plan.events:
                note(f"{session.display}: repair events appended: " + ", ".join(plan.notes()))
            return
        if check or dry_run:
            plan = repair_plan(session, force=force)
        else:
            plan = repair_session(session, lock_timeout=lock_timeout, force=force)
        _render(session, plan, applied=not (check or dry_run), as_json=as_json)
    if plan.exit_code(check=check):
        raise SystemExit(plan.exit_code(check=check))


def _render(session: Any, plan: Any, *, applied: bool, as_json: bool) -> None:
    doc = plan.document(str(session.directory or session.display), applied=applied)
    if not as_json:
        verb = "repaired" if applied else "would repair"
        note(f"{doc['path']}: {verb}: " + ", ".join(plan.notes()) if plan.found else f"{doc['path']}: nothing to repair")

    def actions_table(d: dict[str, Any]) -> None:
        if d["found"]:
            show_table(d["actions"], _COLUMNS)

    emit(doc, as_json=as_json, show=actions_table, lines=doc["actions"])


def _root_cells(doc: dict[str, Any]) -> dict[str, Any]:
    """A session's row of the ROOT table: its problems as phrases."""
    return {**doc, "problems": ", ".join(problem_notes(doc["problems"]))}


def _repair_root(root: str, *, check: bool, dry_run: bool, force: bool, allow_empty: bool, as_json: bool, lock_timeout: float,
                 scheduler: str | None = None, connect_timeout: float = CONNECT_TIMEOUT, allow_remote_writes: bool = False) -> None:
    with engine_for(scheduler, connect_timeout) as engine:
        repairs = repair_root(root, check=check, dry_run=dry_run, force=force, lock_timeout=lock_timeout, allow_empty=allow_empty, engine=engine,
                          allow_remote_writes=allow_remote_writes, on_error=lambda _path, exc: warn(str(exc)),
                          progress=lambda outcomes: progress_iter(outcomes, label="sessions", total=len(repairs.sessions)))
        cols: list[str | Column] = [Column("path", "path"), Column("found", "num"), "applied", Column("problems", "text")]
        rows_out(iter(repairs), cols, as_json=as_json, key="sessions", show_rows=lambda got: show_table(map(_root_cells, got), cols))
    if repairs.exit_code():
        raise SystemExit(repairs.exit_code())  # the most severe (docs/spec.md#a-root-of-sessions)
