"""A loopback-only network namespace shared by the fake model servers and the agent CLIs.

A holder process (`unshare -n`) owns the namespace and brings `lo` up. The fake servers'
listening sockets are created inside it (a short-lived thread joins the namespace with
setns(2) just to open the socket, then ends), so the servers run as threads of the test
process while their sockets exist only in the namespace; the CLIs are started in it with
`nsenter --net`. Nothing but 127.0.0.1 inside the namespace is reachable from them.
"""
from __future__ import annotations

import ctypes
import os
import shutil
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Self

CLONE_NEWNET = 0x40000000

# Runs in the holder: `lo` up with the SIOCSIFFLAGS ioctl (no `ip` needed), then wait for the
# test process's end (stdin closes) so the namespace never outlives it.
_HOLDER = r"""
import fcntl, socket, struct, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
ifr = struct.pack("16sH14x", b"lo", 0)
flags = struct.unpack("16sH14x", fcntl.ioctl(s, 0x8913, ifr))[1]
fcntl.ioctl(s, 0x8914, struct.pack("16sH14x", b"lo", flags | 0x1))
print("ready", flush=True)
sys.stdin.read()
"""


class NamespaceUnavailable(RuntimeError):
    """This machine cannot make a loopback-only namespace (not root, no unshare/nsenter)."""


def unavailable_reason() -> str | None:
    if not sys.platform.startswith("linux"):
        return "loopback-only network namespaces need Linux"
    for tool in ("unshare", "nsenter"):
        if shutil.which(tool) is None:
            return f"{tool} (util-linux) not found"
    if os.geteuid() != 0:
        return "unshare -n needs root here"
    return None


class LoopbackNamespace:
    """`with LoopbackNamespace() as ns:` — `ns.listen()` gives a socket on 127.0.0.1 inside
    the namespace, `ns.wrap(argv)` the command line that runs argv inside it."""

    def __init__(self) -> None:
        self.holder: subprocess.Popen[str] | None = None

    def __enter__(self) -> Self:
        reason = unavailable_reason()
        if reason:
            raise NamespaceUnavailable(reason)
        self.holder = subprocess.Popen(
            ["unshare", "-n", "--", sys.executable, "-c", _HOLDER],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        )
        assert self.holder.stdout is not None
        if self.holder.stdout.readline().strip() != "ready":
            err = self.holder.stderr.read() if self.holder.stderr else ""
            self.holder.kill()
            raise NamespaceUnavailable(f"unshare -n failed: {err.strip()[-300:]}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.holder is not None:
            if self.holder.stdin:
                self.holder.stdin.close()
            try:
                self.holder.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.holder.kill()
                self.holder.wait()
            self.holder = None

    @property
    def path(self) -> Path:
        assert self.holder is not None, "namespace not entered"
        return Path(f"/proc/{self.holder.pid}/ns/net")

    def wrap(self, argv: list[str]) -> list[str]:
        return ["nsenter", f"--net={self.path}", "--", *argv]

    def listen(self, backlog: int = 64) -> socket.socket:
        """A TCP socket bound to 127.0.0.1 (free port) and listening, inside the namespace."""
        s = self.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", 0))
        s.listen(backlog)
        return s

    def socket(self) -> socket.socket:
        """A new TCP socket that belongs to the namespace (to listen on, or to connect from)."""
        result: list[socket.socket | BaseException] = []

        def open_inside() -> None:
            try:
                libc = ctypes.CDLL(None, use_errno=True)
                fd = os.open(self.path, os.O_RDONLY)
                try:
                    if libc.setns(fd, CLONE_NEWNET) != 0:
                        raise OSError(ctypes.get_errno(), "setns")
                finally:
                    os.close(fd)
                result.append(socket.socket(socket.AF_INET, socket.SOCK_STREAM))
            except BaseException as e:
                result.append(e)

        # The thread joins the namespace and ends: the test process's own threads never move.
        t = threading.Thread(target=open_inside)
        t.start()
        t.join()
        if isinstance(result[0], BaseException):
            raise result[0]
        return result[0]
