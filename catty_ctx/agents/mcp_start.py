"""`catty-ctx mcp` up to its first answer: the recall server answers `initialize` itself while
the MCP SDK loads (docs/agents.md#the-recall-server).

Importing the official SDK takes most of a second, and a client may give up on a server that
is slow to answer its handshake. So the server takes its stdio (fds 0 and 1 moved to private
descriptors, the standard ones pointed at the null device and stderr, as the SDK's transport
does), starts loading the SDK in a thread, reads the first line and, when it is a well-formed
`initialize` request, answers it at once: the answer the SDK gives (tools, no list changes,
the server's name, version and instructions, the protocol version negotiated its way). Then the
SDK's server takes the wire: the first line is replayed to it (asking for the version already
agreed), and its own answer to that request is not sent again (`Wire.answered`: it is checked
against the one sent). Any other first line goes to the SDK untouched, and only the SDK answers it.
"""
from __future__ import annotations

import fcntl
import io
import os
import signal
import threading
from collections.abc import Callable
from dataclasses import dataclass
from importlib.util import find_spec
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from .._version import __version__
from ..errors import UsageError
from ..session.files import clear_dead_spools
from ..visible import one_line
from .settings import RECALL_SERVER

if TYPE_CHECKING:
    from .recall import Recall

INSTRUCTIONS = "Recall what compactions took out of this session's context: recall_search, then recall_show."
# The versions the SDK (mcp 2.x) reaches through the `initialize` handshake, oldest first: a
# requested one is agreed, any other gets the newest (tests/agents/test_mcp_start.py holds
# these equal to the SDK's).
HANDSHAKE_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
FIRST_LINE_MAX = 1 << 20  # characters: a longer first line is no handshake answered here
_REQUEST_KEYS = {"jsonrpc", "id", "method", "params"}


@dataclass
class Wire:
    """The server's stdio as the SDK's server is handed it: lines already read (REPLAY, given
    first), the rest of the input (READER), the output (WRITER), and the answer already sent
    for the first line (ANSWERED: its JSON document), which the SDK's own is checked against
    and not sent again."""

    reader: TextIO
    writer: TextIO
    replay: list[str]
    answered: dict[str, Any] | None = None


def quick_answer(line: str) -> tuple[dict[str, Any], str] | None:
    """For LINE, a well-formed `initialize` request: the answer the SDK's server gives it, and
    the line to replay to the SDK (asking for the agreed version). None for any other line."""
    try:
        request = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    if type(request) is not dict or request.keys() != _REQUEST_KEYS or request["jsonrpc"] != "2.0" or request["method"] != "initialize":
        return None
    rid, params = request["id"], request["params"]
    if type(rid) not in (int, str) or type(params) is not dict:
        return None
    asked, client = params.get("protocolVersion"), params.get("clientInfo")
    if type(asked) is not str or type(params.get("capabilities")) is not dict or type(client) is not dict \
            or type(client.get("name")) is not str or type(client.get("version")) is not str:
        return None
    agreed = asked if asked in HANDSHAKE_VERSIONS else HANDSHAKE_VERSIONS[-1]
    result = {"capabilities": {"tools": {"listChanged": False}}, "instructions": INSTRUCTIONS, "protocolVersion": agreed,
              "serverInfo": {"name": RECALL_SERVER, "version": __version__}}
    replay = line if agreed == asked else orjson.dumps({**request, "params": {**params, "protocolVersion": agreed}}).decode() + "\n"
    return {"jsonrpc": "2.0", "id": rid, "result": result}, replay


def claim_stdio() -> Wire | None:
    """The wire on private copies of fds 0 and 1, the standard fds pointed at the null device
    (input) and stderr (output): what a child or a stray print of a handler reads or writes
    misses the wire. None, and nothing changed, when either is not open or cannot be moved."""
    try:
        wire_in = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return None
    try:
        wire_out = fcntl.fcntl(1, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        os.close(wire_in)
        return None
    try:
        _divert(0, _open_null, os.O_RDONLY)
        _divert(1, _stderr_or_null, os.O_WRONLY)
    except OSError:
        for fd, wire in ((0, wire_in), (1, wire_out)):
            try:
                os.dup2(wire, fd)
            except OSError:
                pass
            os.close(wire)
        return None
    # closefd=False: a thread may still be blocked reading the input when the server ends.
    reader = io.TextIOWrapper(open(wire_in, "rb", closefd=False), encoding="utf-8", errors="replace")
    writer = io.TextIOWrapper(open(wire_out, "wb", closefd=False), encoding="utf-8")
    return Wire(reader, writer, [])


def _divert(fd: int, opener: Callable[[int], int], flags: int) -> None:
    diversion = opener(flags)
    try:
        os.dup2(diversion, fd)
    finally:
        os.close(diversion)


def _open_null(flags: int) -> int:
    return os.open(os.devnull, flags)


def _stderr_or_null(flags: int) -> int:
    try:
        return os.dup(2)
    except OSError:
        return _open_null(flags)


RunSdk = Callable[["Recall", "Wire | None"], None]  # mcp_server.run_sdk


class _Loading(threading.Thread):
    """The SDK's server (LOAD returns its `run_sdk`), imported meanwhile."""

    def __init__(self, load: Callable[[], RunSdk]) -> None:
        super().__init__(name="mcp-sdk", daemon=True)
        self.load = load
        self.failed: Exception | None = None
        self.run_sdk: RunSdk | None = None

    def run(self) -> None:
        try:
            self.run_sdk = self.load()
        except Exception as exc:  # an SDK missing or broken: said in one line, never a thread's traceback
            self.failed = exc

    def done(self) -> RunSdk:
        self.join()
        if self.run_sdk is None:
            failed = self.failed
            why = (getattr(failed, "name", None) or one_line(str(failed))) if failed is not None else "mcp"
            raise UsageError(f"the recall server needs the MCP SDK ({why}): install the extra catty-ctx[mcp]")
        return self.run_sdk


def serve(recall: Recall, load: Callable[[], RunSdk]) -> None:
    """Answer MCP requests on stdin and stdout until stdin ends, with the SDK's server LOAD
    returns (`mcp_server.run_sdk`: called in a thread while the handshake is answered). A SIGTERM or SIGHUP ends it
    too, its temporary copy of a native session removed first (the event loop is not waited
    for: its thread reading stdin may be blocked for good); one a killed server left is removed
    at the next start."""
    if find_spec("mcp") is None or find_spec("mcp_types") is None:
        raise UsageError("the recall server needs the MCP SDK (mcp): install the extra catty-ctx[mcp]")

    def stop(_sig: int, _frame: Any) -> None:
        try:
            recall.close()
        finally:
            os._exit(0)

    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, stop)
    loading = _Loading(load)
    loading.start()
    wire = claim_stdio()
    if wire is not None:
        first = wire.reader.readline(FIRST_LINE_MAX)
        if len(first) == FIRST_LINE_MAX and not first.endswith("\n"):
            first += wire.reader.readline()  # too long to be answered here: the SDK reads it whole
        quick = quick_answer(first) if first else None
        if quick is not None:
            wire.answered, first = quick
            wire.writer.write(orjson.dumps(wire.answered).decode() + "\n")
            wire.writer.flush()
        if first:
            wire.replay.append(first)
    clear_dead_spools("native")
    try:
        loading.done()(recall, wire)
    finally:
        recall.close()
