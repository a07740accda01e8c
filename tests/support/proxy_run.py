"""The proxy as a real process on 127.0.0.1 (or inside the agents' loopback namespace), and
fake upstreams for it: what the proxy tests share."""
from __future__ import annotations

import http.client
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[2]  # the checkout


def listen() -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(64)
    return s


def proxy_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


@contextmanager
def running_proxy(root: Path, upstream: str, *args: str, wrap: Any = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`catty-ctx proxy` on a free port with both upstreams at UPSTREAM; (its URL, the process)."""
    # The offline summariser unless the test names one: a fake upstream scripts every model call.
    offline = () if "--summarizer" in args else ("--summarizer", "extractive")
    argv = [sys.executable, "-m", "catty_ctx", "proxy", "--listen", "127.0.0.1:0", "--root", str(root),
            "--anthropic-upstream", upstream, "--openai-upstream", upstream, *offline, *args]
    proc = subprocess.Popen(wrap(argv) if wrap else argv, stdout=subprocess.PIPE, stderr=open(root.parent / "proxy.stderr", "ab"), env=proxy_env())
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()
        assert line.startswith("http://"), f"the proxy did not start: {(root.parent / 'proxy.stderr').read_text()[-2000:]}"
        yield line, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def post(url: str, path: str, body: bytes | Any, headers: dict[str, str] | None = None, method: str = "POST") -> tuple[int, dict[str, str], bytes, list[bytes]]:
    """(status, headers lower-cased, the whole body, the body as the chunks read) of one request."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    data = body if isinstance(body, bytes) else orjson.dumps(body)
    conn.request(method, path, body=data if method != "GET" else None,
                 headers={"Content-Type": "application/json", **(headers or {})})
    resp = conn.getresponse()
    chunks = []
    while True:
        c = resp.read1(65536)
        if not c:
            break
        chunks.append(c)
    conn.close()
    return resp.status, {k.lower(): v for k, v in resp.getheaders()}, b"".join(chunks), chunks


class Client:
    """A scripted agent: keeps its whole history, moves its breakpoint to the last block as Claude Code does.
    Given the PROXY's process, its think time after an answer lasts while the proxy has a process
    of its own running (a pass 1), as a real agent's turn outlasts it; else THINK seconds per turn."""

    def __init__(self, url: str, up: Any, sid: str, key: str = "k", proxy: subprocess.Popen[bytes] | None = None,
                 think: float = 0.05) -> None:
        self.url, self.up, self.sid, self.key, self.proxy, self.think = url, up, sid, key, proxy, think
        self.msgs: list[dict[str, Any]] = []
        self.usage: list[dict[str, int]] = []

    def send(self, reply: Any, *content: Any) -> dict[str, Any]:
        self.up.push(reply)
        self.msgs.append({"role": "user", "content": list(content)})
        body = {"model": "claude-sonnet-4-5", "max_tokens": 1000,
                "system": [{"type": "text", "text": "You are a careful coding agent.", "cache_control": {"type": "ephemeral"}}],
                "tools": [{"name": n, "description": n, "input_schema": {"type": "object"}} for n in ("Bash", "Edit", "TodoWrite")],
                "messages": [*self.msgs[:-1], {**self.msgs[-1], "content": [*content[:-1], {**content[-1], "cache_control": {"type": "ephemeral"}}]}]}
        status, _, raw, _ = post(self.url, "/v1/messages?beta=true", body, {"x-api-key": self.key, "anthropic-version": "2023-06-01",
                                                                          "x-claude-code-session-id": self.sid})
        assert status == 200, raw
        answer = orjson.loads(raw)
        self.usage.append(answer["usage"])
        self.msgs.append({"role": "assistant", "content": answer["content"]})
        if self.proxy is None:
            time.sleep(self.think)
        else:
            time.sleep(0.005)  # (a pass 1 starts once the answer went out and its request is in the log)
            end = time.monotonic() + 60
            while _has_children(self.proxy.pid) and time.monotonic() < end:
                time.sleep(0.05)
        return answer


def _has_children(pid: int) -> bool:
    """Whether process PID has a child now."""
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            if int(stat[stat.rindex(b")") + 2:].split(b" ", 2)[1]) == pid:
                return True
    return False


def result(call: dict[str, Any], output: str, is_error: bool = False) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": call["content"][-1]["id"], "content": output, "is_error": is_error}


def session_dirs(root: Path) -> list[Path]:
    return sorted(p.parent for p in root.rglob("updates.jsonl"))


def events(folder: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in (folder / "updates.jsonl").read_bytes().splitlines()]


class _Sock:
    """One connection's bytes as http.client reads a socket (its file never closed between responses)."""

    def __init__(self, f: Any) -> None:
        self.f = f
        f.close = lambda: None

    def makefile(self, *args: Any, **kw: Any) -> Any:
        return self.f


def http_bodies(data: bytes) -> list[bytes]:
    """The bodies of the HTTP responses in DATA (one connection's bytes, keep-alive and chunked framing undone)."""
    import io

    f = io.BytesIO(data)
    out = []
    while f.tell() < len(data):
        resp = http.client.HTTPResponse(_Sock(f))  # type: ignore[arg-type]
        resp.begin()
        try:
            out.append(resp.read())
        except http.client.IncompleteRead as cut:  # the client hung up once it had the last event, before the end of the framing
            out.append(cut.partial)
            break
    return out


class Relay:
    """A TCP relay in front of the proxy that keeps every byte the client receives, per
    connection: what an agent got, to compare with what the upstream sent."""

    def __init__(self, sock: socket.socket, connect: Any, target: tuple[str, int]) -> None:
        import threading

        self.sock, self.connect, self.target = sock, connect, target
        self.received: list[bytearray] = []
        self.threads: list[threading.Thread] = []
        self._threading = threading
        self.acceptor = threading.Thread(target=self._accept, daemon=True)
        self.acceptor.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self.sock.accept()
            except OSError:
                return
            up = self.connect()
            up.connect(self.target)
            kept = bytearray()
            self.received.append(kept)
            for src, dst, keep in ((client, up, None), (up, client, kept)):
                t = self._threading.Thread(target=self._pump, args=(src, dst, keep), daemon=True)
                t.start()
                self.threads.append(t)

    @staticmethod
    def _pump(src: socket.socket, dst: socket.socket, keep: bytearray | None) -> None:
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if keep is not None:
                    keep.extend(data)
                dst.sendall(data)
        except OSError:
            pass
        finally:
            try:
                dst.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    def bodies(self) -> list[bytes]:
        return [b for data in self.received for b in http_bodies(bytes(data))]

    def close(self) -> None:
        """Stop accepting: the shutdown wakes the accept (a close alone leaves the thread blocked
        in it for the life of the test process, and a process with another thread forks no worker)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self.acceptor.join(10)
