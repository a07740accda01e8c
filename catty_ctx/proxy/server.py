"""The proxy's HTTP server and client (docs/proxy.md).

aiohttp on both sides: one event loop serves the agents and streams each upstream answer back
chunk by chunk as it arrives, while a copy of the chunks is read on the side to record the
answer. The request path: read the body (at most the cap; past it the request is streamed
through unprocessed), parse it, record it, run the lifecycle on a copy, forward. Any failure
of catty's own processing forwards the original bytes unchanged and writes one line to
`proxy.log` and stderr. Credentials go only to the configured upstream: redirects are never
followed (a 3xx goes back to the client as it came), and no header is ever logged or recorded.
"""
from __future__ import annotations

import asyncio
import gc
import sys
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from aiohttp import ClientError, ClientSession, ClientTimeout, TCPConnector, web
from aiohttp.helpers import get_env_proxy_for_url
from yarl import URL

from ..redact import redact_text, redact_url
from ..visible import one_line
from .anthropic import ANTHROPIC
from .families import Answer, conversation_key
from .openai import CHAT, RESPONSES
from .recorder import Conversation, PendingRecord, Recorder
from .reuse import ParseCache
from .sse import Tee
from .summarize import client_headers

# Headers of one hop (connection management), never forwarded, and the ones the HTTP stack sets itself.
HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "proxy-connection", "te", "trailer",
                 "trailers", "transfer-encoding", "upgrade", "host", "content-length"})
CHUNK = 1 << 16


@dataclass(frozen=True)
class Route:
    """A path the proxy processes: the family reading it and the upstream it goes to."""

    family: Any
    upstream: str  # anthropic | openai
    count: bool = False  # a token count: the copy the conversation's next request would send, nothing recorded


ROUTES = {"/v1/messages": Route(ANTHROPIC, "anthropic"), "/v1/responses": Route(RESPONSES, "openai"),
          "/v1/chat/completions": Route(CHAT, "openai"), "/v1/messages/count_tokens": Route(ANTHROPIC, "anthropic", count=True)}


def upstream_name(path: str, headers: Any) -> str:
    """Which upstream a request goes to: its route's, else Anthropic's when it speaks Anthropic."""
    route = ROUTES.get(path)
    if route is not None:
        return route.upstream
    return "anthropic" if path.startswith("/v1/messages") or "anthropic-version" in headers or "x-api-key" in headers else "openai"


def readable_codings(accept: str) -> str:
    """ACCEPT without the codings the tee cannot read (zstd, br): gzip, deflate and identity stay."""
    kept = [c for c in accept.split(",") if c.split(";")[0].strip().lower() in ("gzip", "deflate", "identity", "*")]
    return ",".join(kept) or "identity"


@dataclass
class Prepared:
    """A request the proxy processed: the bytes to send, and how to record the answer."""

    body: bytes
    conv: Conversation
    family: Any
    stream: bool
    notes: dict[str, Any] = field(default_factory=dict)
    sent: asyncio.Event | None = None  # set once the answer's first bytes went to the client (or it failed)


# The cyclic garbage collector runs here, when an answer is out, not wherever a request's
# parse happens to allocate (`serve` turns the automatic one off): a collection of the young
# generation takes milliseconds once the parses of whole histories are alive. The same
# thresholds as the automatic collector's, counted the same way.
GC_YOUNG, GC_OLDER = 50_000, 10


def collect_garbage() -> None:
    if gc.isenabled():
        return
    young, middle, old = gc.get_count()
    if young >= GC_YOUNG:
        gc.collect(2 if old >= GC_OLDER else 1 if middle >= GC_OLDER else 0)


class Log:
    """One line per event, to ROOT/proxy.log and stderr; every line redacted."""

    def __init__(self, root: Path, quiet: bool = False) -> None:
        self.path = root / "proxy.log"
        self.quiet = quiet

    def __call__(self, message: str) -> None:
        line = f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {one_line(redact_text(message)[0])}"
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line + "\n")
        except OSError:
            pass
        if not self.quiet:
            print(f"catty-ctx proxy: {line}", file=sys.stderr, flush=True)


class Proxy:
    """The server: `start()` listens, `handle` serves every request."""

    def __init__(self, root: Path, upstreams: dict[str, str], body_cap: int, lifecycle: Any = None,
                 log: Callable[[str], None] | None = None, record: bool = True) -> None:
        self.record = record
        self.root = root
        self.upstreams = {k: v.rstrip("/") for k, v in upstreams.items()}
        self.body_cap = body_cap
        self.lifecycle = lifecycle
        self.recorder = Recorder(root)
        self.log = log or Log(root)
        self.client: ClientSession | None = None
        self.runner: web.AppRunner | None = None
        self.tasks: set[asyncio.Task[Any]] = set()
        self.parses = ParseCache()
        self.via: dict[str, tuple[Any, Any]] = {}  # upstream -> (proxy, proxy auth) from the environment, read once

    async def start(self, host: str, port: int) -> int:
        self.root.mkdir(parents=True, exist_ok=True)
        # No timeout of ours: a slow or dead upstream is the client's to give up on. The
        # environment's HTTP(S)_PROXY is read once here, not per request; no netrc: the proxy
        # never adds a credential the client did not send.
        for name, base in self.upstreams.items():
            try:
                self.via[name] = get_env_proxy_for_url(URL(base))
            except LookupError:
                pass
        self.client = ClientSession(auto_decompress=False, timeout=ClientTimeout(total=None), trust_env=False,
                                    connector=TCPConnector(limit=0), skip_auto_headers=("User-Agent", "Accept-Encoding", "Accept"))
        app = web.Application(client_max_size=0)
        app.router.add_route("*", "/{tail:.*}", self.handle)
        self.runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self.runner.setup()
        site = web.TCPSite(self.runner, host, port, reuse_address=True)
        await site.start()
        bound = self.runner.addresses
        return int(bound[0][1]) if bound else port

    async def close(self) -> None:
        for t in list(self.tasks):
            await t
        if self.runner is not None:
            await self.runner.cleanup()
        if self.client is not None:
            await self.client.close()

    # -- one request -------------------------------------------------------------------------------

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._handle(request)
        finally:
            collect_garbage()

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        head, whole = await self._read_body(request)
        route = ROUTES.get(request.path)
        prepared: Prepared | None = None
        if not whole:
            self.log(f"{request.method} {request.path}: body over the cap ({self.body_cap:,} bytes): passed through unprocessed")
        elif route is not None and request.method == "POST" and self.record:
            try:
                if route.count:
                    head = await self.count_copy(route, request, head)
                else:
                    prepared = await self.prepare(route, request, head)
            except Exception as exc:  # fail-open: the original request goes out unchanged
                self.log(f"{request.method} {request.path}: forwarded unchanged ({type(exc).__name__}: {exc})")
        data: Any = prepared.body if prepared is not None else (head if whole else self._rest(request, head))
        return await self.forward(request, upstream_name(request.path, request.headers), data, prepared)

    async def _read_body(self, request: web.Request) -> tuple[bytes, bool]:
        """The body, up to the cap: (bytes, True) when it is whole, else (the first bytes, False)."""
        declared = request.content_length
        if declared is not None and declared > self.body_cap:
            return b"", False
        parts: list[bytes] = []
        size = 0
        while True:
            chunk = await request.content.read(CHUNK)
            if not chunk:
                return b"".join(parts), True
            parts.append(chunk)
            size += len(chunk)
            if size > self.body_cap:
                return b"".join(parts), False

    async def _rest(self, request: web.Request, head: bytes) -> AsyncIterator[bytes]:
        if head:
            yield head
        while True:
            chunk = await request.content.read(CHUNK)
            if not chunk:
                return
            yield chunk

    async def prepare(self, route: Route, request: web.Request, body: bytes) -> Prepared:
        doc = orjson.loads(body)
        if not isinstance(doc, dict):
            raise ValueError("the body is not a JSON object")
        fam = route.family
        parsed, digests = self.parses.parse(fam, doc, len(body))
        agent, sid = conversation_key(fam.client, request.headers, doc, parsed.items)
        model = doc.get("model") if isinstance(doc.get("model"), str) else None
        beta = request.headers.get("anthropic-beta", "")
        window = self.lifecycle.window(model, beta) if self.lifecycle is not None else 0
        conv = self.recorder.open.get(self.recorder.key(agent, sid, parsed.items))
        if conv is None:  # first sight: the session folder is opened or made, off the loop
            conv = await asyncio.to_thread(self.recorder.conversation, agent, sid, parsed.items, model=model, window=window)
        lock = conv.runtime.setdefault("lock", asyncio.Lock())
        async with lock:
            # The request's items are written in order after what the conversation recorded
            # before (the previous answer), once this answer's first bytes are out: neither
            # the earlier writes (fsyncs) nor these delay the request. A compaction or a
            # pass 1 that needs them in the log asks for them (`PendingRecord.written`).
            pending = PendingRecord(self.recorder, conv, parsed.items, digests)
            sent = pending.gate = asyncio.Event()
            pending.task = self._after(conv, pending.flush, sent)
            out = body
            notes: dict[str, Any] = {}
            if self.lifecycle is not None:
                call = (self.upstreams[route.upstream] + request.rel_url.path_qs, client_headers(request.headers))
                try:
                    out, notes = await self.lifecycle.apply(conv, fam, doc, parsed, pending, body, beta, call)
                except BaseException:
                    sent.set()  # forwarded unchanged: what the client sent is still recorded
                    raise
        return Prepared(out, conv, fam, doc.get("stream") is True, notes, sent)

    async def count_copy(self, route: Route, request: web.Request, body: bytes) -> bytes:
        """A token count of a conversation the proxy carries counts what its next request
        would send: BODY with the conversation's repairs, compaction and prune batch applied
        (nothing recorded, nothing compacted); any other count goes as it came."""
        if self.lifecycle is None:
            return body
        doc = orjson.loads(body)
        if not isinstance(doc, dict):
            return body
        fam = route.family
        parsed, _ = self.parses.parse(fam, doc, len(body))  # (the history the conversation's last request parsed)
        agent, sid = conversation_key(fam.client, request.headers, doc, parsed.items)
        conv = self.recorder.open.get(self.recorder.key(agent, sid, parsed.items))
        if conv is None:
            return body
        async with conv.runtime.setdefault("lock", asyncio.Lock()):
            out: bytes = self.lifecycle.preview(conv, fam, doc, parsed, body)
            return out

    async def forward(self, request: web.Request, upstream: str, data: Any, prepared: Prepared | None) -> web.StreamResponse:
        try:
            return await self._forward(request, upstream, data, prepared)
        finally:
            if prepared is not None and prepared.sent is not None:
                prepared.sent.set()

    async def _forward(self, request: web.Request, upstream: str, data: Any, prepared: Prepared | None) -> web.StreamResponse:
        assert self.client is not None
        base = self.upstreams[upstream]
        url = base + request.rel_url.path_qs
        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP]
        if prepared is not None:  # the answer is read on the side: only codings the tee can undo (the client named them too)
            headers = [(k, readable_codings(v) if k.lower() == "accept-encoding" else v) for k, v in headers]
        if not isinstance(data, bytes) and request.content_length is not None:  # streamed through: the length the client declared
            headers.append(("Content-Length", str(request.content_length)))
        try:
            via, via_auth = self.via.get(upstream, (None, None))
            up_cm = self.client.request(request.method, url, headers=headers, data=data, allow_redirects=False, proxy=via, proxy_auth=via_auth)
            up = await up_cm.__aenter__()
        except (ClientError, OSError, asyncio.TimeoutError) as exc:
            self.log(f"{request.method} {request.path}: upstream {redact_url(base)} unreachable ({type(exc).__name__}: {exc})")
            return web.json_response({"type": "error", "error": {"type": "proxy_upstream_unreachable",
                                                                 "message": f"catty-ctx proxy: upstream {redact_url(base)} unreachable"}}, status=502)
        try:
            out = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in HOP:
                    out.headers.add(k, v)
            if up.content_length is not None:
                out.content_length = up.content_length
            await out.prepare(request)
            tee = Tee(prepared.family, up.headers) if prepared is not None and up.status == 200 else None
            sent = prepared.sent if prepared is not None else None
            try:
                async for chunk in up.content.iter_any():
                    await out.write(chunk)
                    if sent is not None:
                        sent.set()
                        sent = None
                    if tee is not None:
                        tee.feed(chunk)
                await out.write_eof()
            except (ConnectionResetError, ClientError) as exc:
                # Clients hang up once they have the last event, before the stream's end: what the
                # tee read is recorded if it holds a whole answer (a cut one is not: `finish`).
                self.log(f"{request.method} {request.path}: stream cut ({type(exc).__name__})")
            if tee is not None and prepared is not None:
                self._record_later(prepared.conv, tee)
            return out
        finally:
            await up_cm.__aexit__(None, None, None)

    def _after(self, conv: Conversation, work: Callable[[], object], gate: asyncio.Event | None = None) -> asyncio.Task[None]:
        """Run WORK in a thread after the conversation's earlier recording, in order, and once
        GATE is set (so its disk writes never compete with the request on its way); a failure
        is one log line."""
        previous = conv.runtime.get("recording")

        async def run() -> None:
            if previous is not None:
                await previous
            if gate is not None:
                await gate.wait()
            try:
                await asyncio.to_thread(work)
            except Exception as exc:
                self.log(f"{conv.folder.name}: recording failed ({type(exc).__name__}: {exc})")

        task = asyncio.ensure_future(run())
        conv.runtime["recording"] = task
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def _record_later(self, conv: Conversation, tee: Tee) -> None:
        def record() -> None:
            answer = tee.answer()
            if answer is None:
                self.log(f"{conv.folder.name}: the answer could not be read; not recorded")
                return
            self._record_answer(conv, answer)

        self._after(conv, record)

    def _record_answer(self, conv: Conversation, answer: Answer) -> None:
        self.recorder.record_answer(conv, answer)
        conv.save()
