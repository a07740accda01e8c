"""Hostile model endpoints: real HTTP servers on loopback that drip, flood, never end, or redirect.

Each server keeps every request it was sent (path and headers), so a test can tell that a
request reached it (or, for the second server of a redirect, that none did).
"""
from __future__ import annotations

import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import orjson

CHUNK = b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": "x" * 4000}}]}) + b"\n\n"
GOOD = "<summary>\n" + "## 1. Primary Request and Intent\nKeep the build green. " * 20 + "\n</summary>"


def _forever(write: Callable[[bytes], Any], data: bytes, pause: float = 0.0) -> None:
    """Write DATA again and again until the client goes away."""
    try:
        while True:
            write(data)
            if pause:
                time.sleep(pause)
    except OSError:  # the client hung up: what a bounded client does
        pass


DRIP_PAUSE = 0.25  # seconds between two drops: shorter than any timeout the tests set, so only a total deadline ends it


def drip(h: BaseHTTPRequestHandler) -> None:
    """A valid stream, one small chunk every DRIP_PAUSE, never finished."""
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()
    small = b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": "."}}]}) + b"\n\n"
    _forever(lambda b: (h.wfile.write(b), h.wfile.flush()), small, pause=DRIP_PAUSE)


def drip_headers(h: BaseHTTPRequestHandler) -> None:
    """The status line, then one header byte every DRIP_PAUSE: the answer never starts."""
    h.wfile.write(b"HTTP/1.1 200 OK\r\nX-Slow: ")
    _forever(lambda b: (h.wfile.write(b), h.wfile.flush()), b"a", pause=DRIP_PAUSE)


def flood(h: BaseHTTPRequestHandler) -> None:
    """A valid stream of large chunks as fast as the socket takes them, never finished."""
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()
    _forever(h.wfile.write, CHUNK * 16)


def endless_line(h: BaseHTTPRequestHandler) -> None:
    """A stream whose first line never ends."""
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.end_headers()
    h.wfile.write(b"data: ")
    _forever(h.wfile.write, b"a" * 65536)


def endless_json(h: BaseHTTPRequestHandler) -> None:
    """A JSON body (no length, no stream) that never closes its string."""
    h.send_response(200)
    h.send_header("Content-Type", "application/json")
    h.end_headers()
    h.wfile.write(b'{"choices":[{"message":{"content":"')
    _forever(h.wfile.write, b"b" * 65536)


def redirect(to: str, status: int = 307) -> Callable[[BaseHTTPRequestHandler], None]:
    def answer(h: BaseHTTPRequestHandler) -> None:
        h.send_response(status)
        h.send_header("Location", to)
        h.send_header("Content-Length", "0")
        h.end_headers()
    return answer


def good(h: BaseHTTPRequestHandler) -> None:
    body = b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": GOOD}}]}) + b"\n\ndata: [DONE]\n\n"
    h.send_response(200)
    h.send_header("Content-Type", "text/event-stream")
    h.send_header("Content-Length", str(len(body)))
    h.end_headers()
    h.wfile.write(body)


class Endpoint:
    """A real HTTP server on HOST answering every POST with ANSWER (a path may have its own, in ROUTES)."""

    def __init__(self, answer: Callable[[BaseHTTPRequestHandler], None], host: str = "127.0.0.1",
                 routes: dict[str, Callable[[BaseHTTPRequestHandler], None]] | None = None) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests.append({"path": self.path, "headers": dict(self.headers)})
                (routes or {}).get(self.path, answer)(self)

            do_GET = do_POST  # noqa: N815 (a client that turned a redirect into a GET)

            def log_message(self, *args: Any) -> None:
                pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.httpd = Server((host, 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def origin(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/v1"

    def __enter__(self) -> "Endpoint":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class SilentListener:
    """A TCP port on 127.0.0.1 that accepts every connection and never says a word."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.port = self.sock.getsockname()[1]
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def __enter__(self) -> "SilentListener":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept: a close alone leaves the thread blocked in it
        except OSError:
            pass
        self.sock.close()
        self.thread.join(10)
        for c in self.accepted:
            c.close()


def no_proxy_env(**extra: str) -> dict[str, str]:
    """The environment of a catty-ctx process that reaches these servers directly."""
    env = {k: v for k, v in os.environ.items() if k.lower() not in ("http_proxy", "https_proxy", "all_proxy")}
    return {**env, "NO_PROXY": "127.0.0.1,127.0.0.2", "no_proxy": "127.0.0.1,127.0.0.2", **extra}
