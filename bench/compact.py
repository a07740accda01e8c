"""Benchmark: extractive compaction of a 100,000-event session (target: <= 3 s).

Prints the compaction time and its ratio to one plain streaming pass over the same view
(`inspect`'s work), the baseline every command pays. Run: python bench/compact.py [EVENTS]
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path and its inspect.py would shadow the stdlib's.
sys.path.pop(0)

import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from catty_ctx.compact.pipeline import compact_session  # noqa: E402
from catty_ctx.inspect.session import inspect_session  # noqa: E402
from catty_ctx.session.store import Session, new_summary
from catty_ctx.session.create import write_summary  # noqa: E402

TARGET_S = 3.0


def make_session(directory: Path, n_events: int) -> None:
    """A realistic mix: user turns, assistant steps with calls and results, usage, state."""
    lines: list[bytes] = []
    seq = 0

    def put(ev: dict) -> None:
        nonlocal seq
        lines.append(orjson.dumps({"v": 1, "seq": seq, "ts": "2026-11-01T00:00:00.000Z", **ev}) + b"\n")
        seq += 1

    first = {"kind": "session", "session_id": "bench", "window": 200_000, "model": "m"}
    put(first)
    put({"kind": "message", "id": "sys", "role": "system", "text": "You are a coding agent."})
    turn = 0
    while seq < n_events:
        turn += 1
        put({"kind": "message", "id": f"u{turn}", "role": "user", "text": f"Step {turn}: fix `module_{turn % 50}.parse_item` and keep the API stable."})
        for k in range(3):
            cid = f"c{turn}-{k}"
            put({"kind": "message", "id": f"a{turn}-{k}", "role": "assistant", "text": f"Looking at src/module_{turn % 50}.py, attempt {k}."})
            name = ("read_file", "edit_file", "run_terminal_cmd")[k]
            args = {"path": f"src/module_{turn % 50}.py"} if k < 2 else {"command": "pytest -q"}
            put({"kind": "tool_call", "call_id": cid, "name": name, "args": args})
            put({"kind": "tool_result", "call_id": cid, "output": "x = 1\n" * 40, "is_error": k == 2 and turn % 7 == 0})
        put({"kind": "usage", "model": "m", "input": 1000, "output": 100, "cache_read": 50_000, "cache_write": 0})
        if turn % 10 == 0:
            put({"kind": "state", "facet": "todos", "value": [{"text": f"task {turn}", "status": "in_progress"}]})
    (directory / "updates.jsonl").write_bytes(b"".join(lines))
    write_summary(directory, new_summary({**first, "ts": "2026-11-01T00:00:00.000Z"}))


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    tmp = Path(tempfile.mkdtemp(prefix="catty-bench-"))
    try:
        s = tmp / "s"
        s.mkdir()
        make_session(s, n)
        size = (s / "updates.jsonl").stat().st_size
        t0 = time.perf_counter()
        inspect_session(Session.open(s))
        base = time.perf_counter() - t0
        t0 = time.perf_counter()
        res = compact_session(Session.open(s), force=True)
        took = time.perf_counter() - t0
        art = (s / res.artifact).stat().st_size if res.artifact else 0
        Session.open(s).append([{"kind": "message", "id": "more", "role": "user", "text": "one more turn"}])
        copy = tmp / "copy"
        shutil.copytree(s, copy)
        t0 = time.perf_counter()
        compact_session(Session.open(copy), force=True)  # the second round: a head + one turn
        second = time.perf_counter() - t0
        shutil.rmtree(copy)
        fresh = tmp / "seg"
        fresh.mkdir()
        make_session(fresh, n)
        t0 = time.perf_counter()
        seg = compact_session(Session.open(fresh), force=True, mode="segments")
        took_seg = time.perf_counter() - t0
        print(f"events={n} log={size / 1e6:.1f} MB artifact={art / 1e6:.1f} MB summary={res.summary_chars} chars")
        print(f"baseline (one view pass, inspect): {base:.3f} s")
        print(f"extractive compaction:             {took:.3f} s  ratio {took / base:.2f}x  target <= {TARGET_S:.0f} s: {'ok' if took <= TARGET_S else 'MISSED'}")
        print(f"  same, segments mode (verbose):   {took_seg:.3f} s  ratio {took_seg / base:.2f}x  ({seg.segment}, capped at 512 KiB)")
        print(f"  next round (head + one turn):    {second:.3f} s  ratio {second / base:.2f}x  (still reads the whole log once)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
