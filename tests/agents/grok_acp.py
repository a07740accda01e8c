"""Grok Build over ACP (`grok agent stdio`: JSON-RPC 2.0, one message a line), for what headless
`-p` cannot do: cancel a turn (`session/cancel`) and rewind (`_x.ai/rewind/execute`). Runs in
the loopback namespace with the runner's environment, against the same fake xAI server."""
from __future__ import annotations

import itertools
import queue
import subprocess
import threading
import time
from typing import Any, Self

import orjson

from .runner import Grok


class AcpError(AssertionError):
    pass


class GrokAcp:
    """`with GrokAcp(grok) as acp:` — `acp.request(method, params)`, `acp.notify(...)`; requests
    the agent makes of the client (permissions) are answered with the first "allow" option."""

    def __init__(self, grok: Grok, timeout: float = 60) -> None:
        self.grok = grok
        self.timeout = timeout
        self.ids = itertools.count(1)
        self.replies: dict[int, queue.Queue[dict[str, Any]]] = {}
        self.updates: list[dict[str, Any]] = []
        self.stderr = b""
        self.proc: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> Self:
        argv = self.grok.ns.wrap([str(self.grok.exe), "agent", "--always-approve", "stdio"])
        self.proc = subprocess.Popen(argv, env=self.grok.environment(), cwd=self.grok.cwd, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain, daemon=True).start()
        self.request("initialize", {"protocolVersion": 1, "clientCapabilities": {"fs": {"readTextFile": False, "writeTextFile": False},
                                                                                 "terminal": False}})
        return self

    def __exit__(self, *exc: object) -> None:
        assert self.proc is not None
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write(orjson.dumps({"jsonrpc": "2.0", **msg}) + b"\n")
        self.proc.stdin.flush()

    def _drain(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr = (self.stderr + line)[-20000:]

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            try:
                msg = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if "method" in msg and "id" in msg:  # the agent asks the client
                self._answer(msg)
            elif "method" in msg:
                self.updates.append(msg)
            elif msg.get("id") in self.replies:
                self.replies[msg["id"]].put(msg)

    def _answer(self, msg: dict[str, Any]) -> None:
        if msg["method"] == "session/request_permission":
            options = msg.get("params", {}).get("options") or []
            allow = next((o for o in options if str(o.get("kind", "")).startswith("allow")), options[0] if options else {})
            self._send({"id": msg["id"], "result": {"outcome": {"outcome": "selected", "optionId": allow.get("optionId")}}})
        else:
            self._send({"id": msg["id"], "error": {"code": -32601, "message": "method not found"}})

    def start(self, method: str, params: dict[str, Any]) -> queue.Queue[dict[str, Any]]:
        """Send a request; its reply arrives on the queue returned."""
        rid = next(self.ids)
        q: queue.Queue[dict[str, Any]] = queue.Queue()
        self.replies[rid] = q
        self._send({"id": rid, "method": method, "params": params})
        return q

    def wait(self, q: queue.Queue[dict[str, Any]]) -> Any:
        try:
            msg = q.get(timeout=self.timeout)
        except queue.Empty:
            raise AcpError(f"no reply within {self.timeout}s; grok's stderr: {self.stderr[-2000:].decode(errors='replace')}") from None
        if "error" in msg:
            raise AcpError(f"ACP error: {msg['error']}")
        return msg.get("result")

    def request(self, method: str, params: dict[str, Any]) -> Any:
        return self.wait(self.start(method, params))

    def notify(self, method: str, params: dict[str, Any]) -> None:
        self._send({"method": method, "params": params})

    def new_session(self) -> str:
        return str(self.request("session/new", {"cwd": str(self.grok.cwd), "mcpServers": []})["sessionId"])

    def prompt(self, session_id: str, text: str) -> Any:
        return self.request("session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": text}]})

    def until(self, check: Any, what: str) -> None:
        end = time.monotonic() + self.timeout
        while not check():
            if time.monotonic() > end:
                raise AcpError(f"{what} did not happen within {self.timeout}s")
            time.sleep(0.05)
