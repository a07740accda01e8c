"""The HTTP part the fake model servers share: a threaded server on a socket the caller
opens (inside the loopback namespace), every request recorded, Server-Sent Events out."""
from __future__ import annotations

import socket
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar
from urllib.parse import parse_qs, urlsplit

import orjson


@dataclass
class Request:
    """One request as the server received it."""

    method: str
    path: str  # without the query
    query: dict[str, list[str]]
    headers: dict[str, str]  # names lower-cased
    body: bytes
    json: Any = None  # the body decoded, when it is JSON

    @property
    def route(self) -> str:
        return f"{self.method} {self.path}"


@dataclass
class Response:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)  # written and flushed one by one


def json_response(obj: Any, status: int = 200) -> Response:
    return Response(status, {"Content-Type": "application/json"}, [orjson.dumps(obj)])


def sse_event(event: str, data: Any) -> bytes:
    return b"event: " + event.encode() + b"\ndata: " + orjson.dumps(data) + b"\n\n"


def sse_response(events: list[tuple[str, Any]]) -> Response:
    return Response(200, {"Content-Type": "text/event-stream", "Cache-Control": "no-cache"},
                    [sse_event(e, d) for e, d in events])


Handler = Callable[[Request], Response]


class FakeHTTPServer:
    """Serves `routes` ("METHOD /path" -> handler) on `sock` in a background thread; every
    request is appended to `requests` before it is answered. An unknown route gets a 404
    (recorded too, so a test can see what a client asked for that nobody expected)."""

    def __init__(self, sock: socket.socket, routes: dict[str, Handler]) -> None:
        self.routes = routes
        self.requests: list[Request] = []
        self.errors: list[str] = []  # handler exceptions, kept for the test to assert on
        self._lock = threading.Lock()
        owner = self

        class _Handler(BaseHTTPRequestHandler):
            def _serve(self) -> None:
                parts = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                try:
                    decoded = orjson.loads(body) if body else None
                except orjson.JSONDecodeError:
                    decoded = None
                req = Request(self.command, parts.path, parse_qs(parts.query),
                              {k.lower(): v for k, v in self.headers.items()}, body, decoded)
                with owner._lock:
                    owner.requests.append(req)
                handler = owner.routes.get(req.route)
                try:
                    resp = handler(req) if handler else json_response(
                        {"type": "error", "error": {"type": "not_found_error", "message": f"no route {req.route}"}}, 404)
                except Exception as e:  # noqa: BLE001 - a broken script must show up in the test, not hang the client
                    owner.errors.append(f"{req.route}: {e!r}")
                    resp = json_response({"type": "error", "error": {"type": "api_error", "message": repr(e)}}, 500)
                self.send_response(resp.status)
                for k, v in resp.headers.items():
                    self.send_header(k, v)
                if resp.headers.get("Content-Type") != "text/event-stream":
                    self.send_header("Content-Length", str(sum(len(c) for c in resp.chunks)))
                self.end_headers()
                try:
                    for c in resp.chunks:
                        self.wfile.write(c)
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    pass

            do_GET = do_POST = do_PUT = do_DELETE = _serve

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(sock.getsockname(), _Handler, bind_and_activate=False)
        self.httpd.socket.close()
        self.httpd.socket = sock
        self.httpd.server_address = sock.getsockname()
        self.httpd.daemon_threads = True
        self._thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


R = TypeVar("R")


@dataclass
class Until(Generic[R]):
    """A script entry that waits, as a model would, for what a client gains while it works (an MCP
    server's tools, which an agent lists once the server has started): while `ready` is false of a
    request, it answers with `wait()` (a short command the client runs, then it asks again) and stays
    at the head of the script, at most `tries` times; once true (or the tries spent) the next entry
    answers that request. In place of one fixed sleep long enough for a loaded machine."""

    ready: Callable[[Request], bool]
    wait: Callable[[], Any]
    tries: int = 150


class ScriptedModel(FakeHTTPServer, Generic[R]):
    """A model server: each call of `model_route` takes the next script entry (a reply, or a
    function of the Request returning one, or an `Until`); the script spent, `fallback` answers and
    `unscripted` counts it. `calls` are those requests in order, `bodies()` their JSON."""

    model_route: str

    def __init__(self, sock: socket.socket, routes: dict[str, Handler], script: Iterable[R | Callable[[Request], R]],
                 fallback: R | Callable[[Request], R]) -> None:
        self.script: deque[R | Callable[[Request], R] | Until[R]] = deque(script)
        self.fallback = fallback
        self.unscripted = 0
        self._script_lock = threading.Lock()
        super().__init__(sock, routes)

    def push(self, *replies: R | Callable[[Request], R] | Until[R]) -> None:
        with self._script_lock:
            self.script.extend(replies)

    @property
    def calls(self) -> list[Request]:
        return [r for r in self.requests if r.route == self.model_route]

    def bodies(self) -> list[Any]:
        return [r.json for r in self.calls]

    def next_reply(self, req: Request) -> R:
        with self._script_lock:
            while self.script and isinstance(head := self.script[0], Until):
                if head.tries > 0 and not head.ready(req):
                    head.tries -= 1
                    return head.wait()  # type: ignore[no-any-return]
                self.script.popleft()
            entry = self.script.popleft() if self.script else None
            if entry is None:
                self.unscripted += 1
                entry = self.fallback
        return entry(req) if callable(entry) else entry  # type: ignore[return-value]
