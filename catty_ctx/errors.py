"""Exit codes (one enum) and the exceptions that carry them.

The library raises these; the CLI's single error path turns them into one stderr line
and the documented exit code (docs/spec.md#the-command-line).
"""
from __future__ import annotations

import enum


class ExitCode(enum.IntEnum):
    """The exit codes every command uses (docs/spec.md#exit-codes)."""

    OK = 0
    CHECK_FAILED = 1  # a check found problems (repair --check, compact --check)
    USAGE = 2  # bad arguments, missing paths, a config file that cannot be used
    DATA = 65  # bad input data (EX_DATAERR)
    UNAVAILABLE = 69  # the Dask scheduler cannot be reached, or lost the run (EX_UNAVAILABLE)
    INTERNAL = 70  # a bug in catty-ctx, never bad input (EX_SOFTWARE)
    CANT_CREATE = 73  # cannot write output (EX_CANTCREAT)
    TEMP_FAIL = 75  # lock busy: try again (EX_TEMPFAIL)
    INTERRUPTED = 130


# What each code means, for `--help` and the man pages (one source: the enum above).
EXIT_MEANINGS: dict[ExitCode, str] = {
    ExitCode.OK: "success",
    ExitCode.CHECK_FAILED: "a check found problems (repair --check, compact --check)",
    ExitCode.USAGE: "usage error (a bad option, a missing path, a ROOT with no session, a config file that cannot be used)",
    ExitCode.DATA: "bad input data (the message names file:line; another agent's file given to a writer)",
    ExitCode.UNAVAILABLE: "the --scheduler cannot be reached (refused, timed out) or lost the run",
    ExitCode.INTERNAL: "internal error (a bug in catty-ctx)",
    ExitCode.CANT_CREATE: "cannot write output (also a full or closed stdout)",
    ExitCode.TEMP_FAIL: "a temporary failure, worth trying again: the session lock is busy, or the summariser failed after its retries",
    ExitCode.INTERRUPTED: "interrupted",
}


class CattyError(Exception):
    """Base of every error the CLI reports as one line."""

    exit_code: ExitCode = ExitCode.DATA

    def __init__(self, message: str, *, exit_code: ExitCode | None = None) -> None:
        super().__init__(message)
        if exit_code is not None:
            self.exit_code = exit_code


class UsageError(CattyError):
    exit_code = ExitCode.USAGE


class DataError(CattyError):
    """Bad input data; names the file and line when they are known."""

    exit_code = ExitCode.DATA

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None) -> None:
        where = ""
        if path is not None:
            where = f"{path}:{line}: " if line is not None else f"{path}: "
        super().__init__(where + message)
        self.path = path
        self.line = line


class NoConversation(DataError):
    """An agent's file holding no conversation (a Claude Code file of a `summary` record alone, a
    rollout of its header alone, Gemini CLI's `logs.json`): refused when named, skipped with a
    note under a ROOT (docs/spec.md#a-root-of-sessions). WHY: what the file holds instead."""

    def __init__(self, source: object, why: str = "no message or tool call to import") -> None:
        super().__init__(f"no conversation in {source} ({why}); nothing was written")
        self.source = str(source)


class WriteError(CattyError):
    exit_code = ExitCode.CANT_CREATE


class LockBusy(CattyError):
    exit_code = ExitCode.TEMP_FAIL
