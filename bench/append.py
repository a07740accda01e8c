"""Cost of the library's append (`Session.append`: the lock, the checks, summary.json, the
write, its fsync) against a bare `write` + `fsync` of the same bytes, for a small batch (one
event, inside one page) and a batch of 8 events of 3 KB (it crosses page boundaries, so its
span is recorded beside the log while it is written: docs/reliability.md#atomic-appends);
and the record's own share, the same append with the record turned off.

Run: python bench/append.py [ROUNDS]   (prints ratios; lower is better)
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)  # the project (uninstalled)

import os  # noqa: E402
import statistics  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import orjson  # noqa: E402

from catty_ctx.session import batch as batch_mod  # noqa: E402
from catty_ctx.session.create import create_session  # noqa: E402
from catty_ctx.session.store import Session  # noqa: E402


def events(n: int, size: int, tag: str) -> list[dict]:
    return [{"kind": "message", "role": "user", "id": f"{tag}-{i}", "text": "z" * size} for i in range(n)]


def per_append(folder: Path, n: int, size: int, rounds: int) -> float:
    """Median seconds of one append of N events of SIZE bytes, ROUNDS times into a new session."""
    s = folder / f"s{n}-{size}-{time.perf_counter_ns()}"
    create_session(s, session_id="b")
    session = Session.open(s)
    times = []
    for r in range(rounds):
        t = time.perf_counter()
        session.append(events(n, size, f"r{r}"), warn=None)
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def bare(folder: Path, n: int, size: int, rounds: int) -> float:
    """Median seconds of a write + fsync of the same bytes at a file's end."""
    data = b"".join(orjson.dumps({"v": 1, "seq": 1, "ts": "2026-11-01T00:00:00.000Z", **ev}) + b"\n" for ev in events(n, size, "b"))
    fd = os.open(folder / f"bare-{n}-{size}", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    times = []
    try:
        for _ in range(rounds):
            t = time.perf_counter()
            os.write(fd, data)
            os.fsync(fd)
            times.append(time.perf_counter() - t)
    finally:
        os.close(fd)
    return statistics.median(times)


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    with tempfile.TemporaryDirectory(prefix="bench-append-") as tmp:
        folder = Path(tmp)
        for label, n, size in (("1 event of 100 B", 1, 100), ("8 events of 3 KB", 8, 3000)):
            floor = bare(folder, n, size, rounds)
            marked = per_append(folder, n, size, rounds)
            page = batch_mod.PAGE
            batch_mod.PAGE = 1 << 62  # the record turned off: no batch crosses a "page"
            try:
                unmarked = per_append(folder, n, size, rounds)
            finally:
                batch_mod.PAGE = page
            print(f"{label}: append {marked * 1e3:.3f} ms = {marked / floor:.2f}x a bare write + fsync "
                  f"({floor * 1e3:.3f} ms); without the record {unmarked * 1e3:.3f} ms (record: {marked / unmarked:.2f}x)")


if __name__ == "__main__":
    main()
