"""`catty-ctx` processes forked from one that has already imported the heavy third-party
libraries a run needs (the MCP SDK, Dask), for tests whose subject is not start-up: a server
spoken to over its stdio, a run on a cluster. Each run is still a process of its own, with the
standard streams, environment, folder and exit status its starter gave and sees.

`command()` is the argv to start instead of `python -m catty_ctx`: a small launcher (an
interpreter without site, ~10 ms) that hands its fds 0-2 (those it has open: a run started with
stdout closed has none), umask, environment and folder over a Unix socket to the forking process
of this test process, forwards SIGTERM/SIGINT/SIGHUP to the forked run and ends with its status. The forking process starts no thread; it kills a run whose
launcher went away. Runs that need another Dask or MCP configuration at import than this test
process's environment gives (DASK_* variables, a library that fails to import) start a real
interpreter instead.

Run as `forked_cli.py serve SOCKET`: the forking process; as `forked_cli.py SOCKET ARGS`: a launcher.
"""
from __future__ import annotations

import json
import os
import select
import signal
import socket
import sys

# What a run of the MCP server or on a cluster imports of the libraries, at the least.
MCP = ("mcp.server.lowlevel", "mcp.server.stdio", "mcp.shared.exceptions", "anyio", "pydantic")
DASK = ("distributed", "dask", "dask.bag")
# What any other run imports of the third-party libraries (the help and tables, the JSON and
# hashing ones), for tests whose subject is what a run does, not what it imports.
LIBRARIES = ("typer", "click", "rich.console", "rich.markdown", "rich.panel", "rich.table", "rich.traceback",
             "orjson", "msgspec.json", "xxhash", "filelock")
MESSAGE = 1 << 20


def launch(path: str, args: list[str]) -> None:
    """The launcher: the run of ARGS goes to the forking process at PATH with this process's fds 0-2."""
    given = [fd for fd in (0, 1, 2) if _is_open(fd)]  # before the socket takes the lowest free fd
    umask = os.umask(0)
    os.umask(umask)
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    conn.connect(path)
    request = json.dumps({"args": args, "env": dict(os.environ), "cwd": os.getcwd(), "fds": given, "umask": umask}).encode()
    socket.send_fds(conn, [request], given)
    pid = int(conn.recv(64))
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, lambda signum, _frame: os.kill(pid, signum))
    while True:
        try:
            answer = conn.recv(64)
            break
        except InterruptedError:
            continue
    code = int(answer) if answer else 1
    if code < 0:  # killed by a signal: so is the launcher, for its starter to see
        signal.signal(-code, signal.SIG_DFL)
        os.kill(os.getpid(), -code)
    os._exit(code)


def serve(path: str, preloaded: list[str]) -> None:
    """The forking process (PRELOADED imported): one forked run per launcher that connects; ends
    at EOF on stdin."""
    import importlib

    for name in (*preloaded, "forked_terminal"):
        importlib.import_module(name)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    listener.bind(path)
    listener.listen(64)
    # A run's end wakes the loop (SIGCHLD through a wake-up pipe): no polling while idle, and no
    # poll interval added to each run.
    woken, wake = os.pipe()
    os.set_blocking(woken, False)
    os.set_blocking(wake, False)
    signal.set_wakeup_fd(wake)
    signal.signal(signal.SIGCHLD, lambda _sig, _frame: None)
    print("ready", flush=True)
    runs: dict[int, socket.socket] = {}  # pid -> its launcher's connection
    while True:
        ready, _, _ = select.select([listener, sys.stdin, woken, *runs.values()], [], [], 1.0 if runs else None)
        if woken in ready:
            ready.remove(woken)
            try:
                while os.read(woken, 512):
                    pass
            except BlockingIOError:
                pass
        while runs:
            pid, status = os.waitpid(-1, os.WNOHANG)
            if pid == 0:
                break
            conn = runs.pop(pid, None)
            if conn is not None:
                try:
                    conn.send(str(os.waitstatus_to_exitcode(status)).encode())
                except OSError:
                    pass
                conn.close()
        for item in ready:
            if item is sys.stdin:
                if not sys.stdin.readline():
                    for pid in runs:
                        os.kill(pid, signal.SIGKILL)
                    return
            elif item is listener:
                conn, _ = listener.accept()
                message, fds, _, _ = socket.recv_fds(conn, MESSAGE, 3)
                request = json.loads(message)
                pid = os.fork()
                if pid == 0:
                    try:
                        signal.set_wakeup_fd(-1)
                        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
                        os.close(woken)
                        os.close(wake)
                        _child(request, fds, [listener, conn, *runs.values()])
                    except BaseException:  # the harness's own failure: shown, as the run's
                        import traceback

                        os.write(2, traceback.format_exc().encode())
                    finally:
                        os._exit(70)
                for fd in fds:
                    os.close(fd)
                conn.send(str(pid).encode())
                runs[pid] = conn
            else:  # a launcher went away (EOF) before its run ended: the run goes too
                for pid, conn in runs.items():
                    if conn is item:
                        try:
                            os.kill(pid, signal.SIGKILL)
                        except ProcessLookupError:
                            pass


def _is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def _child(request: dict, fds: list[int], sockets: list[socket.socket]) -> None:
    from forked_terminal import run_as_program  # (this runs in the forking process, started as a script beside it)

    for sock in sockets:
        sock.close()
    for target, fd in zip(request["fds"], fds):
        os.dup2(fd, target)
    for fd in fds:
        if fd > 2:
            os.close(fd)
    for target in {0, 1, 2} - set(request["fds"]):
        os.close(target)  # closed in the launcher: closed in the run
    os.umask(request["umask"])
    run_as_program(request["args"], request["env"], request["cwd"])


class _Forker:
    """A forking process of this test process, started at its first run (through the program
    UNDER, when given: what it drops, every run forked from it lacks too)."""

    def __init__(self, preloaded: tuple[str, ...], under: tuple[str, ...] = ()) -> None:
        import atexit
        import subprocess
        import tempfile
        from pathlib import Path

        root = Path(__file__).resolve().parent.parent.parent
        self.path = os.path.join(tempfile.mkdtemp(prefix="catty-forks-"), "s")
        self.proc = subprocess.Popen([*under, sys.executable, __file__, "serve", self.path, *preloaded], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=dict(os.environ, PYTHONPATH=str(root)))
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "ready":
            raise AssertionError("the forking process of the test runs did not start")
        atexit.register(self.close)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=60)
        except Exception:
            self.proc.kill()
            self.proc.wait()


_forkers: dict[tuple[tuple[str, ...], tuple[str, ...]], _Forker] = {}


def command(preloaded: tuple[str, ...], under: tuple[str, ...] | list[str] = ()) -> list[str]:
    """The argv prefix that runs `catty-ctx` forked from a process that imported PRELOADED (append
    the program's arguments); UNDER: the command prefix the forking process is started with
    (e.g. `setpriv` dropping a capability)."""
    key = (preloaded, tuple(under))
    forker = _forkers.get(key)
    if forker is None or forker.proc.poll() is not None:
        forker = _forkers[key] = _Forker(*key)
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), forker.path]


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3:])
    else:
        launch(sys.argv[1], sys.argv[2:])
