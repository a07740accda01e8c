"""A command over a ROOT of sessions: each session's work here or on a cluster, the outcomes
in order, and one exit rule for every command (docs/spec.md#a-root-of-sessions).

A session that fails is reported (its one line) and skipped; the others go on. The run's exit
is the most severe code its sessions met, by the fixed order of SEVERITY, so a ROOT answers the
same whichever session failed first.
"""
from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .cluster import each
from .errors import CattyError, ExitCode

# Most severe first: a bug, output that cannot be written, a lost cluster, bad data, a busy lock
# or a failed summariser (worth trying again), a usage error, then a check's finding.
SEVERITY = (ExitCode.INTERNAL, ExitCode.CANT_CREATE, ExitCode.UNAVAILABLE, ExitCode.DATA, ExitCode.TEMP_FAIL,
            ExitCode.USAGE, ExitCode.CHECK_FAILED)


def most_severe(codes: Iterable[int]) -> int:
    """The most severe of CODES by SEVERITY (a code not in it ranks first); 0 for none."""
    rank = {int(code): i for i, code in enumerate(SEVERITY)}
    return min(codes, key=lambda c: rank.get(int(c), -1), default=0)


class RootRun:
    """FN over each of SESSIONS (here, or on ENGINE's cluster with `cluster.each`), iterated as
    the results of the sessions that worked, in order; each failure goes to ON_ERROR (its path,
    its error) and counts toward `exit_code`. PROGRESS wraps the per-session outcomes."""

    def __init__(self, fn: Callable[..., Any], sessions: Iterable[Any], engine: Any = None, *,
                 on_error: Callable[[Any, CattyError], None] | None = None,
                 progress: Callable[[Iterator[Any]], Iterator[Any]] | None = None, **kwargs: Any) -> None:
        self.fn, self.sessions, self.engine, self.kwargs = fn, sessions, engine, kwargs
        self.on_error, self.progress = on_error, progress
        self.errors: list[CattyError] = []

    def __iter__(self) -> Iterator[Any]:
        outcomes = each(self.fn, self.sessions, self.engine, **self.kwargs)
        for path, result in self.progress(outcomes) if self.progress is not None else outcomes:
            if isinstance(result, CattyError):
                self.errors.append(result)
                if self.on_error is None:
                    raise result
                self.on_error(path, result)
                continue
            yield result

    def exit_code(self, *, check_failed: bool = False) -> int:
        """The run's exit: the most severe code of its failures (and of a check's finding, when CHECK_FAILED)."""
        return most_severe([*(e.exit_code for e in self.errors), *([ExitCode.CHECK_FAILED] if check_failed else [])])
