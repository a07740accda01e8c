"""The single error path: library errors become one stderr line and their exit code."""
from __future__ import annotations

import functools
import os
import sys
from typing import Any, Callable, TypeVar

import typer

from ..errors import CattyError, ExitCode

F = TypeVar("F", bound=Callable[..., Any])
INTERNAL_ERROR = 70  # EX_SOFTWARE: a bug in catty-ctx, never bad input


def fail(message: str, code: int) -> "typer.Exit":
    sys.stderr.write(f"catty-ctx: error: {message}\n")
    return typer.Exit(int(code))


def warn(message: str) -> None:
    sys.stderr.write(f"catty-ctx: warning: {message}\n")


def note(message: str) -> None:
    """What a command did, for the user (stderr: stdout carries only data)."""
    sys.stderr.write(f"catty-ctx: {message}\n")


def handle_errors(fn: F) -> F:
    """Wrap a command so no error escapes as a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except CattyError as exc:
            raise fail(str(exc), exc.exit_code) from None
        except KeyboardInterrupt:
            sys.stderr.write("catty-ctx: interrupted\n")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except BrokenPipeError:
            # The reader went away (`| head`): stop quietly, as cat and grep do.
            try:
                devnull = os.open(os.devnull, os.O_WRONLY)
                os.dup2(devnull, sys.stdout.fileno())
            except OSError:
                pass
            raise typer.Exit(0) from None
        except typer.Exit:
            raise
        except Exception as exc:  # a bug: one line unless asked for the traceback
            if os.environ.get("CATTY_CTX_DEBUG"):
                raise
            raise fail(f"internal error: {type(exc).__name__}: {exc} (set CATTY_CTX_DEBUG=1 for a traceback)", INTERNAL_ERROR) from None

    return wrapper  # type: ignore[return-value]
