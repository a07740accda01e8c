"""The HTTP transport of the `openai:` summariser and the eval judge: one POST, bounded every way.

- No redirect leaves the origin (scheme, host and port) the user named: the key is sent there
  and nowhere else. A 307/308 within the origin (the body resent) is followed, up to
  `MAX_REDIRECTS`; any other redirect is refused with the place it pointed to.
- One deadline for the whole request (`--timeout`): the connection, TLS included, the answer's
  headers and all of its body. A watchdog shuts the socket when it passes, so a server that
  drips a byte a second is cut like one that stays silent.
- A cap on the answer's bytes (`--max-response-bytes`), counted as they are read: an endless
  stream, line or JSON body is cut at the cap, never held whole (http.client bounds the headers).
- Credentials in the URL (`user:password@`) are sent to that origin as Basic auth when no key
  is given, and never shown: messages name the URL through `redact.redact_url`.
- Proxies from the environment, as urllib honours them (HTTP(S)_PROXY, NO_PROXY).
"""
from __future__ import annotations

import base64
import http.client
import socket
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator

from ..redact import redact_url
from .ladder import Deterministic, Transient

MAX_REDIRECTS = 3
CHUNK = 1 << 16  # bytes read at a time from a body that is not a stream
ERROR_BODY_BYTES = 1 << 16  # of an error answer, enough for its message


def origin(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of URL: where a request may go, and a redirect may not leave."""
    parts = urllib.parse.urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = -1
    return scheme, (parts.hostname or "").lower(), port or (443 if scheme == "https" else 80)


class _Watchdog:
    """Shuts the connection's socket at the deadline: a blocked read then returns at once."""

    def __init__(self, conn: http.client.HTTPConnection, seconds: float) -> None:
        self.conn = conn
        self.fired = False
        self.timer = threading.Timer(max(seconds, 0.0), self._fire)
        self.timer.daemon = True
        self.timer.start()

    def _fire(self) -> None:
        self.fired = True
        sock = self.conn.sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def cancel(self) -> None:
        self.timer.cancel()


class Answer:
    """An answer being read: its status and headers, its body as bounded lines or bytes."""

    def __init__(self, url: str, conn: http.client.HTTPConnection, resp: http.client.HTTPResponse, watchdog: _Watchdog,
                 deadline: float, timeout: float, max_bytes: int) -> None:
        self.url = url
        self.conn, self.resp, self.watchdog = conn, resp, watchdog
        self.deadline, self.timeout, self.max_bytes = deadline, timeout, max_bytes
        self.status = resp.status
        self.read_bytes = 0

    def header(self, name: str) -> str:
        return self.resp.getheader(name) or ""

    def __enter__(self) -> Answer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.watchdog.cancel()
        self.conn.close()

    def _count(self, data: bytes) -> bytes:
        self.read_bytes += len(data)
        if self.read_bytes > self.max_bytes:
            raise Deterministic(f"{redact_url(self.url)}: answer over {self.max_bytes} bytes (--max-response-bytes), cut")
        if time.monotonic() > self.deadline:
            raise self.late()
        return data

    def late(self) -> Transient:
        return Transient(f"{redact_url(self.url)}: no complete answer within {self.timeout:g}s (--timeout)")

    def failed(self, exc: BaseException) -> Transient:
        if self.watchdog.fired or time.monotonic() > self.deadline:
            return self.late()
        return Transient(f"{redact_url(self.url)}: {type(exc).__name__}: {exc}")

    def _read(self, read: Callable[[int], bytes], size: int) -> bytes:
        """What READ(SIZE) gives, counted against the cap and the deadline; b"" at the end of a
        whole body (an end the watchdog caused is the deadline's)."""
        try:
            data = read(size)
        except (OSError, http.client.HTTPException) as exc:
            raise self.failed(exc) from None
        if not data:
            if self.watchdog.fired:
                raise self.late()
            return data
        return self._count(data)

    def lines(self) -> Iterator[bytes]:
        """The body's lines (newline kept), each and all of them within the byte cap."""
        while line := self._read(self.resp.readline, self.max_bytes - self.read_bytes + 1):
            yield line

    def body(self, limit: int | None = None) -> bytes:
        """The whole body (only its first LIMIT bytes when given: the rest is not read)."""
        out = bytearray()
        while limit is None or len(out) < limit:
            chunk = self._read(self.resp.read, CHUNK if limit is None else min(CHUNK, limit - len(out)))
            if not chunk:
                break
            out += chunk
        return bytes(out)


def _connection(url: str, timeout: float) -> tuple[http.client.HTTPConnection, str, dict[str, str]]:
    """The connection for URL (through a proxy when the environment names one), the request
    target to send, and the headers the proxy needs."""
    parts = urllib.parse.urlsplit(url)
    scheme, host, port = origin(url)
    if scheme not in ("http", "https") or not host or port < 0:
        raise Deterministic(f"{redact_url(url)}: not an http(s) URL with a host")
    path = urllib.parse.urlunsplit(("", "", parts.path or "/", parts.query, ""))
    proxy = None if urllib.request.proxy_bypass(host) else urllib.request.getproxies().get(scheme)
    if not proxy:
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        return cls(host, port, timeout=timeout), path, {}
    p = urllib.parse.urlsplit(proxy if "://" in proxy else f"http://{proxy}")
    auth = {"Proxy-Authorization": _basic(p.username, p.password or "")} if p.username is not None else {}
    if scheme == "https":  # a CONNECT tunnel through the proxy, TLS to the origin inside it
        conn = http.client.HTTPSConnection(p.hostname or "", p.port or 80, timeout=timeout)
        conn.set_tunnel(host, port, headers=auth)
        return conn, path, {}
    return http.client.HTTPConnection(p.hostname or "", p.port or 80, timeout=timeout), f"http://{host}:{port}{path}", auth


def _basic(user: str, password: str) -> str:
    pair = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def without_userinfo(url: str) -> tuple[str, str | None]:
    """URL without its `user:password@`, and the Basic authorization they make (None without)."""
    parts = urllib.parse.urlsplit(url)
    if parts.username is None:
        return url, None
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment)), _basic(parts.username, parts.password or "")


def post(url: str, body: bytes, headers: dict[str, str], *, timeout: float, max_bytes: int) -> Answer:
    """POST BODY to URL; the answer, its body unread (use it as a context manager).

    Raises Transient (unreachable, dropped, past the deadline) or Deterministic (a redirect
    refused, an answer over the cap, not an http(s) URL)."""
    deadline = time.monotonic() + timeout
    url, basic = without_userinfo(url)
    headers = dict(headers)
    if basic and "Authorization" not in headers:
        headers["Authorization"] = basic
    first = origin(url)
    for _hop in range(MAX_REDIRECTS + 1):
        left = deadline - time.monotonic()
        if left <= 0:
            raise Transient(f"{redact_url(url)}: no complete answer within {timeout:g}s (--timeout)")
        conn, target, extra = _connection(url, left)
        watchdog = _Watchdog(conn, left)
        try:
            conn.request("POST", target, body=body, headers={**headers, **extra})
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as exc:
            watchdog.cancel()
            conn.close()
            if watchdog.fired or time.monotonic() > deadline:
                raise Transient(f"{redact_url(url)}: no complete answer within {timeout:g}s (--timeout)") from None
            reason = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
            raise Transient(f"{redact_url(url)}: {reason}") from None
        answer = Answer(url, conn, resp, watchdog, deadline, timeout, max_bytes)
        if resp.status not in (301, 302, 303, 307, 308):
            return answer
        location = answer.header("Location")
        answer.close()
        target_url = urllib.parse.urljoin(url, location)
        if origin(target_url) != first:
            raise Deterministic(f"{redact_url(url)}: HTTP {resp.status} redirect to {redact_url(target_url)} not followed "
                                "(another origin: the key goes only where OPENAI_BASE_URL points)")
        if resp.status not in (307, 308):
            raise Deterministic(f"{redact_url(url)}: HTTP {resp.status} redirect not followed (it would drop the request body)")
        url = target_url
    raise Deterministic(f"{redact_url(url)}: more than {MAX_REDIRECTS} redirects")


def error_text(answer: Answer) -> str:
    """The start of an error answer's body, as text."""
    try:
        return answer.body(ERROR_BODY_BYTES).decode(errors="replace")
    except (Transient, Deterministic):
        return ""

