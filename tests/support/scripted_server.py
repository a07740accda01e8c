"""A real HTTP server on 127.0.0.1 that answers /chat/completions from a script of replies."""
from __future__ import annotations

import os
import threading
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

import orjson
import pytest


def sse(*deltas: str, usage: dict[str, Any] | None = None) -> tuple[int, dict[str, str], list[bytes]]:
    """A streamed answer: one chunk per delta, then (when given) a last chunk with the tokens
    the server counted and no choices, as OpenAI sends for stream_options.include_usage, then [DONE]."""
    chunks = [b"data: " + orjson.dumps({"choices": [{"index": 0, "delta": {"content": d}}]}) + b"\n\n" for d in deltas]
    if usage is not None:
        rid = f"chatcmpl-{uuid.uuid4().hex[:16]}"  # every response has its own id, as a provider's
        chunks.append(b"data: " + orjson.dumps({"id": rid, "choices": [], "usage": usage}) + b"\n\n")
    return 200, {"Content-Type": "text/event-stream"}, chunks + [b"data: [DONE]\n\n"]


def error(status: int, message: str, code: str = "error") -> tuple[int, dict[str, str], list[bytes]]:
    body = orjson.dumps({"error": {"message": message, "type": "invalid_request_error", "code": code}})
    return status, {"Content-Type": "application/json"}, [body]


def plain(content: str) -> tuple[int, dict[str, str], list[bytes]]:
    """A non-streamed answer (some compatible servers ignore stream: true)."""
    return 200, {"Content-Type": "application/json"}, [orjson.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]})]


class ScriptedServer:
    """Replies pop from `script` in order; every request body is kept in `requests`."""

    def __init__(self, script: list[tuple[int, dict[str, str], list[bytes]]]) -> None:
        self.script = list(script)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                owner.requests.append({"path": self.path, **orjson.loads(body)})
                owner.headers.append(dict(self.headers))
                status, headers, chunks = owner.script.pop(0) if owner.script else error(500, "script exhausted")
                self.send_response(status)
                for k, v in headers.items():
                    self.send_header(k, v)
                if headers.get("Content-Type") != "text/event-stream":
                    self.send_header("Content-Length", str(sum(len(c) for c in chunks)))
                self.end_headers()
                for c in chunks:
                    self.wfile.write(c)
                    self.wfile.flush()

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> "ScriptedServer":
        # A proxy set in the environment must not carry requests meant for this server.
        self._saved = {k: os.environ.get(k) for k in ("NO_PROXY", "no_proxy")}
        for k, v in self._saved.items():
            os.environ[k] = ",".join(filter(None, [v, "127.0.0.1"]))
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        for k, v in self._saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


@pytest.fixture
def endpoint(monkeypatch: pytest.MonkeyPatch) -> Callable[[list[Any]], ScriptedServer]:
    """Start a ScriptedServer for a script of replies, with the key and no retry backoff set
    for the summariser that calls it (conftest makes it every test's fixture)."""
    def start(script: list[Any]) -> ScriptedServer:
        srv = ScriptedServer(script)
        monkeypatch.setenv("OPENAI_API_KEY", "k")
        monkeypatch.setenv("CATTY_CTX_RETRY_BACKOFF", "0")
        return srv
    return start
