"""The single error path: library errors become one stderr line and their exit code.

Typer is imported only by the typer wrapper, so a command run without the CLI framework (see
`catty_ctx.cli.app.main`) shares the same messages and codes through `run_guarded`.
"""
from __future__ import annotations

import errno
import functools
import os
import sys

from ..errors import CattyError, ExitCode
from ..visible import say

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations here are strings
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])
# Errors that mean "the output cannot be written" (stdout on a full disk, `> /dev/full`).
_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


class ClosedOutput(OSError):
    """Raised on writing to a stdout that was closed before catty-ctx started (`>&-`)."""


class _ClosedStdout:
    """sys.stdout when fd 1 was closed: a write fails (exit 73); a command that prints
    nothing runs as usual."""

    encoding = "utf-8"

    def _closed(self, *args: Any) -> Any:
        raise ClosedOutput(errno.EBADF, "stdout is closed")

    write = fileno = _closed

    def flush(self) -> None:
        pass

    def isatty(self) -> bool:
        return False

    @property
    def buffer(self) -> _ClosedStdout:
        return self


def guard_closed_stdout() -> None:
    """With fd 1 closed, Python leaves sys.stdout None (a write is then an AttributeError) and
    the next file opened would take fd 1: hold fd 1 on the null device and make writes fail
    as a closed output."""
    if sys.stdout is not None:
        return
    try:
        fd = os.open(os.devnull, os.O_WRONLY)
        if fd != 1:
            os.dup2(fd, 1)
            os.close(fd)
    except OSError:
        pass
    sys.stdout = _ClosedStdout()


def _stdout_to_devnull() -> None:
    """Whatever is still buffered for stdout goes nowhere, so the flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)
        os.close(devnull)
    except OSError:
        pass


def flush_stdout(code: Any) -> Any:
    """Flush stdout before exiting; a write error there becomes the exit status (when the
    command itself succeeded), never an 'Exception ignored' at interpreter exit."""
    try:
        if sys.stdout is not None:
            sys.stdout.flush()
    except BaseException as exc:
        failed = exit_code_for(exc)
        if failed is None:
            raise
        return failed if code in (ExitCode.OK, None) else code
    return code


# Modules that may leave work for the interpreter's exit: handlers (logging's flush, the pools' joins)
# and finalizers (weakref.finalize's, a temporary directory's removal). A usage run loads none.
_LEAVE_WORK = ("logging", "weakref", "tempfile", "multiprocessing", "concurrent.futures", "asyncio")


def end_now() -> None:
    """End the process here once a command's output is written, as the program only: what is left
    is freeing its objects one by one (a usage scan's: hundreds of thousands, tens of milliseconds)
    and the interpreter's teardown, which the exit does at once. The program is told by its entry
    point (`catty_ctx.__main__`, the installed script's) having run, its own stdout and stderr, no
    other thread, and none of the modules that leave work for the exit (handlers, finalizers:
    `_LEAVE_WORK`) loaded; any other caller (a test, a library running the CLI in
    process or a script calling `cli.app.main`) returns here and exits as before. The exit status
    is flush_stdout's."""
    threading = sys.modules.get("threading")
    entry = getattr(sys.modules.get("__main__"), "__spec__", None)  # (`python -m catty_ctx`)
    if ("catty_ctx.__main__" not in sys.modules and getattr(entry, "name", None) != "catty_ctx.__main__") or sys.stdout is not sys.__stdout__ or sys.stderr is not sys.__stderr__ \
            or any(m in sys.modules for m in _LEAVE_WORK) or (threading is not None and threading.active_count() > 1):
        return
    code = flush_stdout(ExitCode.OK)
    try:
        if sys.stderr is not None:
            sys.stderr.flush()
    except BaseException:
        return  # (the ordinary exit reports it)
    os._exit(code)


def _say(line: str) -> None:
    # Messages quote paths, ids and record types from the data: a control character in them
    # is shown, not sent to the terminal (nor a newline, which would forge a line).
    say(line)


def warn(message: str) -> None:
    _say(f"catty-ctx: warning: {message}")


def note(message: str) -> None:
    """What a command did, for the user (stderr: stdout carries only data)."""
    _say(f"catty-ctx: {message}")


def exit_code_for(exc: BaseException) -> int | None:
    """Report EXC in one stderr line and return its exit code; None: not ours to swallow."""
    if isinstance(exc, CattyError):
        _say(f"catty-ctx: error: {exc}")
        return int(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        sys.stderr.write("catty-ctx: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`| head`): stop quietly, as cat and grep do.
        _stdout_to_devnull()
        return int(ExitCode.OK)
    if isinstance(exc, ClosedOutput) or (isinstance(exc, OSError) and exc.errno in _FULL):
        _stdout_to_devnull()
        sys.stderr.write(f"catty-ctx: error: cannot write output ({exc.strerror})\n")
        return int(ExitCode.CANT_CREATE)
    if isinstance(exc, Exception) and not os.environ.get("CATTY_CTX_DEBUG"):  # a bug: one line unless asked for the traceback
        _say(f"catty-ctx: error: internal error: {type(exc).__name__}: {exc} (set CATTY_CTX_DEBUG=1 for a traceback)")
        return int(ExitCode.INTERNAL)
    return None


def run_guarded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Call FN outside typer; its exit status (0 when it returns)."""
    try:
        fn(*args, **kwargs)
    except BaseException as exc:
        code = exit_code_for(exc)
        if code is None:
            raise
        return code
    return int(ExitCode.OK)


def handle_errors(fn: F) -> F:
    """Wrap a typer command so no error escapes as a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import typer

        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except BaseException as exc:
            code = exit_code_for(exc)
            if code is None:
                raise
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]  # functools.wraps keeps the wrapped signature
