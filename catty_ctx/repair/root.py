"""`repair ROOT`: every session's repair (or its check, or a dry run) as one `RootRun`, here or on
a cluster, what the sessions' plans found, and the run's exit (docs/spec.md#a-root-of-sessions)."""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from ..errors import CattyError
from ..fleet.cluster import Engine, refuse_writes
from ..fleet.runner import RootRun
from ..fleet.urls import refuse_writes as refuse_url_writes
from ..session.store import Session
from ..sources import open_session, root_sessions
from .fix import repair_session
from .plan import repair_plan


def root_row(directory: Any, *, write: bool, force: bool = False, lock_timeout: float = 30.0) -> dict[str, Any]:
    """One session's document of `repair ROOT` (its plan, applied when WRITE: what `repair S --json`
    prints), here or on a cluster worker."""
    # A writer opens the source itself (another agent's file is refused there); a check reads
    # a native session as its import.
    with (Session.open(directory) if write else open_session(directory, warn=None)) as s:
        plan = repair_session(s, lock_timeout=lock_timeout, force=force) if write else repair_plan(s, force=force)
    return plan.document(str(directory), applied=write)


def repair_root(root: str, *, check: bool = False, dry_run: bool = False, force: bool = False, lock_timeout: float = 30.0,
                allow_empty: bool = False, sessions: Iterable[Any] | None = None, engine: Engine | None = None,
                allow_remote_writes: bool = False, on_error: Callable[[Any, CattyError], None] | None = None,
                progress: Callable[[Iterator[Any]], Iterator[Any]] | None = None) -> RootRun:
    """Repair every session under ROOT (or of SESSIONS; with CHECK or DRY_RUN, only plan), on
    ENGINE's cluster when given (writing there only with ALLOW_REMOTE_WRITES; a URL ROOT is only
    read). A session that fails goes to ON_ERROR and the others go on; PROGRESS wraps the outcomes.
    With CHECK, a plan that found anything is the check's finding (exit 1, unless a failure
    outranks it)."""
    write = not (check or dry_run)
    if write and engine is not None:
        refuse_writes("repair ROOT", allow_remote_writes)
    if write:
        refuse_url_writes(root, "repair")
    found = list(sessions if sessions is not None else root_sessions(root, allow_empty=allow_empty))
    return RootRun(root_row, found, engine, on_error=on_error, progress=progress, finding=_found if check else None,
                   write=write, force=force, lock_timeout=lock_timeout)


def _found(row: dict[str, Any]) -> bool:
    return bool(row["found"])
