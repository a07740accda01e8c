"""The eval's progress moves per compaction, not per session: each time a copy is compacted,
in this process or in a worker process (which says so on a queue the pool hands it)."""
from __future__ import annotations

import itertools
import queue
from collections.abc import Callable, Iterator
from typing import Any

_QUEUE: Any = None  # in a worker process: where its compactions are told


def init_worker(q: Any) -> None:
    """A pool worker's initializer: tell compactions on Q."""
    global _QUEUE
    _QUEUE = q


def worker_step() -> Callable[[], None] | None:
    """In a worker process, the callback that tells one compaction; None elsewhere."""
    q = _QUEUE
    return None if q is None else (lambda: q.put(1))


class Ticker:
    """Advances the command's bar (PROGRESS wraps an iterator and moves one step per item asked
    for) one step per compaction, never past TOTAL."""

    def __init__(self, progress: Callable[[Iterator[Any], int], Iterator[Any]] | None, total: int) -> None:
        self.total = total
        self.done = 0
        self._bar = None if progress is None else progress(itertools.repeat(None), total)
        if self._bar is not None:
            next(self._bar, None)  # the bar at 0: each later item asked for is one step

    def tick(self, n: int = 1) -> None:
        for _ in range(max(0, min(n, self.total - self.done))):
            self.done += 1
            if self._bar is not None:
                next(self._bar, None)

    def drain(self, q: Any) -> None:
        """The steps the workers have told so far."""
        while True:
            try:
                q.get_nowait()
            except queue.Empty:
                return
            self.tick()

    def close(self) -> None:
        """Every step done (a session with fewer parts, or a failed one, counts its remainder)."""
        self.tick(self.total - self.done)
        if self._bar is not None:
            self._bar.close()  # type: ignore[attr-defined]
