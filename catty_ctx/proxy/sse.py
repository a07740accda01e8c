"""Server-Sent Events read incrementally from the chunks a stream delivers (docs/proxy.md#recording).

The proxy hands every chunk to the client as it is and feeds a copy here: events come out as
soon as their blank line arrives, whatever the chunking. `Tee` reads a whole answer so, for
the recorder and for the upstream summariser alike.
"""
from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

import orjson

from .families import Answer


class SSEReader:
    """`feed(chunk)` yields (event name, data) for each event completed by CHUNK."""

    def __init__(self) -> None:
        self._buf = b""
        self._event = ""
        self._data: list[bytes] = []

    def feed(self, chunk: bytes) -> Iterator[tuple[str, bytes]]:
        self._buf += chunk
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                return
            line = self._buf[:nl].rstrip(b"\r")
            self._buf = self._buf[nl + 1:]
            if not line:
                if self._data:
                    yield self._event, b"\n".join(self._data)
                self._event, self._data = "", []
            elif line.startswith(b"data:"):
                self._data.append(line[5:].lstrip(b" ") if line[5:6] == b" " else line[5:])
            elif line.startswith(b"event:"):
                self._event = line[6:].strip().decode("utf-8", "replace")
            # comments (":") and other fields are not needed to record the answer

    def close(self) -> Iterator[tuple[str, bytes]]:
        """The last event when the stream ended without its blank line."""
        if self._buf:
            yield from self.feed(b"\n")
        if self._data:
            yield self._event, b"\n".join(self._data)
            self._event, self._data = "", []


class Tee:
    """An answer of FAMILY read as it comes (the server's side copy of one, a summary request's):
    SSE events read as they come, a JSON body kept to its end (decompressed when the upstream
    compressed it). `error`: why the answer could not be read, when it could not."""

    def __init__(self, family: Any, headers: Any) -> None:
        self.reader = family.reader()
        self.sse = "text/event-stream" in (headers.get("Content-Type") or "")
        self.events = SSEReader()
        self.parts: list[bytes] = []
        enc = (headers.get("Content-Encoding") or "").lower()
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS) if enc == "gzip" else zlib.decompressobj() if enc == "deflate" else None
        self.unreadable = enc not in ("", "identity", "gzip", "deflate")
        self.error: Exception | None = None
        self.header_id = headers.get("request-id")  # (Anthropic's: the agent's transcript names the call by it)

    def feed(self, chunk: bytes) -> int:
        """Read CHUNK; the number of events it completed."""
        if self.unreadable or self.error is not None:
            return 0
        events = 0
        try:
            if self.inflate is not None:
                chunk = self.inflate.decompress(chunk)
            if self.sse:
                for name, data in self.events.feed(chunk):
                    self.reader.event(name, data)
                    events += 1
            else:
                self.parts.append(chunk)
        except Exception as exc:  # the client has its bytes already; only the record is lost
            self.error = exc
        return events

    def answer(self) -> Answer | None:
        if self.unreadable or self.error is not None:
            return None
        if self.sse:
            for name, data in self.events.close():
                self.reader.event(name, data)
        else:
            doc = orjson.loads(b"".join(self.parts))
            if isinstance(doc, dict):
                self.reader.document(doc)
        result: Answer | None = self.reader.finish()
        if result is not None and isinstance(self.header_id, str) and self.header_id:
            result.header_id = self.header_id
        return result
