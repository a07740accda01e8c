"""Runs of the program on a pseudo-terminal, each in a process forked from one that has already
imported the libraries help and tables are drawn with (typer, click, rich): the exit code and
what the terminal shows are a fresh process's, without an interpreter and those imports per run.

The forking process is started once per test process (`run`), as a script: it reads one JSON
request a line on stdin and answers each with one JSON line on stdout. It starts no thread, so
a fork of it is as safe as a fresh process. Each run gets its own pseudo-terminal, environment,
working folder and standard streams, and its code runs as `python -m catty_ctx` runs it.
"""
from __future__ import annotations

import atexit
import io
import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

TIMEOUT = 120.0
# The imports every run would otherwise pay for (the third-party ones: the program's own stay
# the run's, as a fresh process imports them).
PRELOADED = ("typer", "click", "rich.console", "rich.markdown", "rich.panel", "rich.table", "rich.traceback")


def _exit_code(exc: SystemExit) -> int:
    """The status the interpreter ends with on this SystemExit."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    print(exc.code, file=sys.stderr)
    return 1


def _child(req: dict[str, Any], primary: int, secondary: int, pipe: tuple[int, int] | None) -> None:
    """In the forked process: the streams, environment and folder of the request, then the program."""
    given = os.open(req["stdin"] or os.devnull, os.O_RDONLY)
    on_tty = req["tty"]
    os.dup2(given, 0)
    os.dup2(secondary if on_tty in ("both", "stdout") else pipe[1], 1)  # type: ignore[index]
    os.dup2(secondary if on_tty in ("both", "stderr") else pipe[1], 2)  # type: ignore[index]
    for fd in {given, primary, secondary, *(pipe or ())}:
        if fd > 2:
            os.close(fd)
    run_as_program(req["args"], req["env"], req["cwd"])


def run_as_program(args: list[str], env: dict[str, str], cwd: str | None) -> None:
    """In a forked process whose fds 0-2 are the run's: ENV, CWD and fresh standard streams over
    those fds (buffered as an interpreter buffers them), then `catty-ctx ARGS` as `python -m
    catty_ctx` runs it, and the process ends with its status. Never returns."""
    import runpy
    import traceback

    os.environ.clear()
    os.environ.update(env)
    if cwd:
        os.chdir(cwd)
    sys.path[0] = os.getcwd()  # as `python -m` puts it
    enc, errors = sys.stdout.encoding, sys.stdout.errors
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))

    def writer(fd: int, errors: str, by_line: bool) -> io.TextIOWrapper:
        raw = open(fd, "wb", buffering=0 if unbuffered else -1, closefd=False)
        return io.TextIOWrapper(raw, encoding=enc, errors=errors, line_buffering=by_line and not unbuffered, write_through=unbuffered)

    def stream(fd: int, make: Any) -> Any:  # as the interpreter starts: no stream over a closed fd
        try:
            os.fstat(fd)
        except OSError:
            return None
        return make()

    sys.stdin = sys.__stdin__ = stream(0, lambda: open(0, encoding=enc, errors=errors, closefd=False))
    sys.stdout = sys.__stdout__ = stream(1, lambda: writer(1, errors, os.isatty(1)))
    sys.stderr = sys.__stderr__ = stream(2, lambda: writer(2, "backslashreplace", True))
    sys.argv = ["catty-ctx", *args]
    code = 0
    try:
        runpy.run_module("catty_ctx", run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        code = _exit_code(exc)
    except BaseException:  # an uncaught error: its traceback and exit 1, as the interpreter ends
        traceback.print_exc()
        code = 1
    try:
        atexit._run_exitfuncs()
    except BaseException:
        pass
    os._exit(_flushed(code) & 0xFF)


def _flushed(code: int) -> int:
    """CODE once the standard streams are flushed as the interpreter flushes them at its end: a
    stdout that cannot take what is left in its buffer is reported and makes the status 120."""
    import traceback

    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if stream is None or getattr(stream, "closed", False) is True:
            continue
        try:
            stream.flush()
        except Exception as exc:
            code = 120
            if name == "stdout" and sys.stderr is not None and not sys.stderr.closed:
                try:
                    print(f"Exception ignored in: {stream!r}", file=sys.stderr)
                    traceback.print_exception(exc, file=sys.stderr)
                    sys.stderr.flush()
                except Exception:
                    pass
    return code


def _serve_one(req: dict[str, Any]) -> dict[str, Any]:
    import pty
    import tty

    primary, secondary = pty.openpty()
    if req["raw"]:
        tty.setraw(secondary)
    pipe = os.pipe() if req["tty"] != "both" else None
    pid = os.fork()
    if pid == 0:
        try:
            _child(req, primary, secondary, pipe)
        finally:
            os._exit(70)
    os.close(secondary)
    if pipe is not None:
        os.close(pipe[1])
    got = {primary: b"", **({pipe[0]: b""} if pipe else {})}
    open_fds = set(got)
    deadline = time.monotonic() + TIMEOUT
    while open_fds:
        ready, _, _ = select.select(list(open_fds), [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            os.kill(pid, signal.SIGKILL)
            break
        for fd in ready:
            try:
                chunk = os.read(fd, 1 << 16)
            except OSError:  # the terminal closes when the program ends
                chunk = b""
            if chunk:
                got[fd] += chunk
            else:
                open_fds.discard(fd)
    _, status = os.waitpid(pid, 0)
    for fd in got:
        os.close(fd)
    return {"code": os.waitstatus_to_exitcode(status), "tty": got[primary].decode("latin-1"),
            "other": got[pipe[0]].decode("latin-1") if pipe else ""}


def main() -> None:
    import importlib

    for name in PRELOADED:
        importlib.import_module(name)

    for line in sys.stdin:
        sys.stdout.write(json.dumps(_serve_one(json.loads(line))) + "\n")
        sys.stdout.flush()


class _Forker:
    """The forking process of this test process, started at its first run."""

    proc: subprocess.Popen[str] | None = None

    @classmethod
    def ask(cls, req: dict[str, Any]) -> dict[str, Any]:
        if cls.proc is None or cls.proc.poll() is not None:
            root = Path(__file__).resolve().parent.parent.parent
            cls.proc = subprocess.Popen([sys.executable, __file__], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                        env=dict(os.environ, PYTHONPATH=str(root)))
            atexit.register(cls.close)
        assert cls.proc.stdin is not None and cls.proc.stdout is not None
        cls.proc.stdin.write(json.dumps(req) + "\n")
        cls.proc.stdin.flush()
        answer = cls.proc.stdout.readline()
        if not answer:
            raise AssertionError("the forking process of the terminal runs ended")
        return json.loads(answer)  # type: ignore[no-any-return]

    @classmethod
    def close(cls) -> None:
        """End the forking process (its stdin closed: it ends after the run in hand)."""
        if cls.proc is not None and cls.proc.stdin is not None:
            cls.proc.stdin.close()
            try:
                cls.proc.wait(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                cls.proc.kill()
                cls.proc.wait()


def run(args: tuple[str, ...] | list[str], *, env: dict[str, str], tty: str = "both", cwd: Path | None = None,
        raw: bool = False, stdin: Path | None = None) -> tuple[int, bytes, bytes]:
    """Run `catty-ctx ARGS` in environment ENV (the whole of it) with TTY ("both", "stdout" or "stderr")
    on a new pseudo-terminal and the other stream, if any, on a pipe; RAW: the terminal translates no
    newline. (exit code, what the terminal showed, what the pipe got)."""
    answer = _Forker.ask({"args": list(args), "env": env, "tty": tty, "cwd": str(cwd) if cwd else None, "raw": raw,
                          "stdin": str(stdin) if stdin else None})
    return answer["code"], answer["tty"].encode("latin-1"), answer["other"].encode("latin-1")


if __name__ == "__main__":
    main()
