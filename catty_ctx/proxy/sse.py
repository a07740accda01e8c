"""Server-Sent Events read incrementally from the chunks a stream delivers (docs/proxy.md#recording).

The proxy hands every chunk to the client as it is and feeds a copy here: events come out as
soon as their blank line arrives, whatever the chunking.
"""
from __future__ import annotations

from collections.abc import Iterator


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
