"""The single error path: library errors become one stderr line and their exit code.

Typer is imported only by the typer wrapper, so a command run without the CLI framework (see
`catty_ctx.cli.main`) shares the same messages and codes through `run_guarded`.
"""
from __future__ import annotations

import functools
import os
import sys

from ..errors import CattyError, ExitCode

TYPE_CHECKING = False  # typing costs milliseconds at start-up; annotations here are strings
if TYPE_CHECKING:
    from typing import Any, Callable, TypeVar

    F = TypeVar("F", bound=Callable[..., Any])


def warn(message: str) -> None:
    sys.stderr.write(f"catty-ctx: warning: {message}\n")


def note(message: str) -> None:
    """What a command did, for the user (stderr: stdout carries only data)."""
    sys.stderr.write(f"catty-ctx: {message}\n")


def exit_code_for(exc: BaseException) -> int | None:
    """Report EXC in one stderr line and return its exit code; None: not ours to swallow."""
    if isinstance(exc, CattyError):
        sys.stderr.write(f"catty-ctx: error: {exc}\n")
        return int(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        sys.stderr.write("catty-ctx: interrupted\n")
        return int(ExitCode.INTERRUPTED)
    if isinstance(exc, BrokenPipeError):
        # The reader went away (`| head`): stop quietly, as cat and grep do.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except OSError:
            pass
        return 0
    if isinstance(exc, Exception) and not os.environ.get("CATTY_CTX_DEBUG"):  # a bug: one line unless asked for the traceback
        sys.stderr.write(f"catty-ctx: error: internal error: {type(exc).__name__}: {exc} (set CATTY_CTX_DEBUG=1 for a traceback)\n")
        return int(ExitCode.INTERNAL)
    return None


def run_guarded(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> int:
    """Call FN outside typer; its exit status (0 when it returns)."""
    try:
        fn(*args, **kwargs)
    except BaseException as exc:  # noqa: BLE001 - exit_code_for says which ones are ours
        code = exit_code_for(exc)
        if code is None:
            raise
        return code
    return 0


def handle_errors(fn: F) -> F:
    """Wrap a typer command so no error escapes as a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        import typer

        try:
            return fn(*args, **kwargs)
        except typer.Exit:
            raise
        except BaseException as exc:  # noqa: BLE001 - exit_code_for says which ones are ours
            code = exit_code_for(exc)
            if code is None:
                raise
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]
