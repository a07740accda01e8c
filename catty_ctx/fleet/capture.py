"""What a task writes to stderr, kept for its outcome instead of printed where it ran.

The library prints its warnings (a torn final line) on sys.stderr as it reads. A task run on a
cluster worker, or on a local copy of a URL's session, keeps them (`capture_stderr`) so the
client prints them where the local run prints them, with the paths the user named. Per
thread: a worker may run several tasks at once.
"""
from __future__ import annotations

import sys
import threading

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class _Captured:
    """sys.stderr once a capture was asked for: a capturing thread's writes are kept; other threads' pass through."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self.local = threading.local()

    def write(self, text: str) -> int:
        buffer = getattr(self.local, "buffer", None)
        if buffer is None:
            return int(self.stream.write(text))
        buffer.append(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


class capture_stderr:
    """What this thread writes to sys.stderr meanwhile, kept in a list instead (nested captures
    each keep their own): a task's warnings travel with its outcome."""

    def __enter__(self) -> list[str]:
        if not isinstance(sys.stderr, _Captured):
            sys.stderr = _Captured(sys.stderr)
        self.local = sys.stderr.local
        self.outer = getattr(self.local, "buffer", None)
        written: list[str] = []
        self.local.buffer = written
        return written

    def __exit__(self, *exc: object) -> None:
        self.local.buffer = self.outer
