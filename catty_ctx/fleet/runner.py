"""A command over a ROOT of sessions: each session's work here, in forked processes of this
machine or on a cluster, the outcomes in order, and one exit rule for every command
(docs/spec.md#a-root-of-sessions).

A session that fails is reported (its one line) and skipped; the others go on. The run's exit
is the most severe code its sessions met, by the fixed order of SEVERITY, so a ROOT answers the
same whichever session failed first.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any

from ..errors import CattyError, ExitCode, NoConversation
from .cluster import each

# Most severe first: a bug, output that cannot be written, a lost cluster, bad data, a busy lock
# or a failed summariser (worth trying again), a usage error, then a check's finding.
SEVERITY = (ExitCode.INTERNAL, ExitCode.CANT_CREATE, ExitCode.UNAVAILABLE, ExitCode.DATA, ExitCode.TEMP_FAIL,
            ExitCode.USAGE, ExitCode.CHECK_FAILED)


def most_severe(codes: Iterable[int]) -> int:
    """The most severe of CODES by SEVERITY (a code not in it ranks first); 0 for none. A 0 (a
    file skipped with a note) is no code: it never hides a check's 1."""
    rank = {int(code): i for i, code in enumerate(SEVERITY)}
    return min((c for c in codes if c), key=lambda c: rank.get(int(c), -1), default=0)


def _attempt(fn: Callable[..., Any], kwargs: dict[str, Any], item: Any) -> tuple[int, Any]:
    """In a forked worker: (0, FN(item)), or (1, (message, exit code)) for bad input."""
    try:
        return 0, fn(item, **kwargs)
    except CattyError as exc:
        return 1, (str(exc), int(exc.exit_code))


class Forked:
    """Where a run's sessions go when JOBS processes of this machine share them: forked workers,
    each outcome back in item order, bad input as a `CattyError` value (as `cluster.Engine.map`).

    Each worker starts with INITIALIZER(*INITARGS) (as a `multiprocessing.Pool`'s); WAITING, when
    given, is called every 0.2 s while an outcome is awaited and before each is handed on (eval
    moves its bar there from what its workers tell). CHUNK items go to a worker at a time."""

    def __init__(self, jobs: int, *, initializer: Callable[..., None] | None = None, initargs: tuple[Any, ...] = (),
                 waiting: Callable[[], None] | None = None, chunk: int = 4) -> None:
        self.jobs, self.initializer, self.initargs, self.waiting, self.chunk = jobs, initializer, initargs, waiting, chunk

    def map(self, fn: Callable[..., Any], items: Sequence[Any], **kwargs: Any) -> Iterator[Any]:
        import multiprocessing

        with multiprocessing.get_context("fork").Pool(min(self.jobs, max(1, len(items))), self.initializer, self.initargs) as pool:
            outcomes = pool.imap(functools.partial(_attempt, fn, kwargs), items, chunksize=self.chunk)
            waiting = self.waiting
            while True:
                try:
                    kind, payload = next(outcomes) if waiting is None else outcomes.next(timeout=0.2)
                except StopIteration:
                    return
                except multiprocessing.TimeoutError:
                    if waiting is not None:
                        waiting()
                    continue
                if waiting is not None:
                    waiting()
                yield payload if kind == 0 else CattyError(payload[0], exit_code=ExitCode(payload[1]))


class Skipped(str):
    """What a session that holds no conversation gives under a ROOT (`NoConversation`'s note): no
    failure, and picklable, so it crosses a worker's boundary as a result."""


def skip_note(exc: NoConversation) -> str:
    """The one line a ROOT command says of a file that holds no conversation."""
    return f"skipped {exc.source}: it holds no conversation (no message or tool call)"


def _skipping(fn: Callable[..., Any], item: Any, **kwargs: Any) -> Any:
    try:
        return fn(item, **kwargs)
    except NoConversation as exc:
        return Skipped(skip_note(exc))


class RootRun:
    """FN over each of SESSIONS (here, in ENGINE's workers: `cluster.Engine` or `Forked`, with
    `cluster.each`), iterated as the results of the sessions that worked, in order; each failure
    goes to ON_ERROR (its path, its error) and counts toward `exit_code`. A result that FAILURE
    turns into an error (a page that says its session is unreadable) counts as that failure and
    is still yielded; one that FINDING holds true (a check that found something) makes the run's
    exit at least a check's finding. PROGRESS wraps the per-session outcomes. A session that holds
    no conversation (an agent's bookkeeping file) is skipped: its note goes to ON_ERROR as an
    error of exit 0, which the run's exit does not count."""

    def __init__(self, fn: Callable[..., Any], sessions: Iterable[Any], engine: Any = None, *,
                 on_error: Callable[[Any, CattyError], None] | None = None,
                 progress: Callable[[Iterator[Any]], Iterator[Any]] | None = None,
                 failure: Callable[[Any], CattyError | None] | None = None, finding: Callable[[Any], bool] | None = None,
                 **kwargs: Any) -> None:
        self.fn, self.sessions, self.engine, self.kwargs = fn, list(sessions), engine, kwargs
        self.on_error, self.progress, self.failure, self.finding = on_error, progress, failure, finding
        self.errors: list[CattyError] = []
        self.found = False  # a result FINDING held true

    def __iter__(self) -> Iterator[Any]:
        outcomes = each(functools.partial(_skipping, self.fn), self.sessions, self.engine, **self.kwargs)
        for path, result in self.progress(outcomes) if self.progress is not None else outcomes:
            if isinstance(result, Skipped):
                if self.on_error is not None:
                    self.on_error(path, CattyError(str(result), exit_code=ExitCode.OK))
                continue
            error = result if isinstance(result, CattyError) else self.failure(result) if self.failure is not None else None
            if error is not None:
                self._failed(path, error)
            if not isinstance(result, CattyError):
                self.found = self.found or (self.finding is not None and self.finding(result))
                yield result

    def _failed(self, path: Any, error: CattyError) -> None:
        self.errors.append(error)
        if self.on_error is None:
            raise error
        self.on_error(path, error)

    def exit_code(self, *, check_failed: bool = False) -> int:
        """The run's exit: the most severe code of its failures (and of a check's finding: FINDING's,
        or when CHECK_FAILED)."""
        return most_severe([*(e.exit_code for e in self.errors), *([ExitCode.CHECK_FAILED] if check_failed or self.found else [])])
