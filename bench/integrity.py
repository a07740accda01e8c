"""Cost of `repair --check` and `resume` against reading the view once (`inspect`), and of
`fork` against copying the directory with shutil.copytree (which checks nothing) and
against inspect (a validated read), on one generated session.

Run: python bench/integrity.py [EVENTS]   (prints ratios; lower is better)
"""
from __future__ import annotations

import sys
from pathlib import Path

# The project (uninstalled) instead of bench/, whose inspect.py would shadow the stdlib module.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

import shutil  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402

import orjson  # noqa: E402


from catty_ctx.fork import fork, resume  # noqa: E402
from catty_ctx.repair.plan import analyse  # noqa: E402
from catty_ctx.inspect.session import inspect_session  # noqa: E402
from catty_ctx.session.store import Session  # noqa: E402


def make(path: Path, events: int) -> None:
    path.mkdir()
    with open(path / "updates.jsonl", "wb") as f:
        f.write(orjson.dumps({"v": 1, "seq": 0, "ts": "2026-11-01T00:00:00.000Z", "kind": "session", "session_id": "b"}) + b"\n")
        seq = 1
        while seq < events:
            for ev in (
                {"kind": "message", "id": f"u{seq}", "role": "user", "text": "please look at file " * 10},
                {"kind": "message", "id": f"a{seq}", "role": "assistant", "text": "reading it now " * 10},
                {"kind": "tool_call", "call_id": f"c{seq}", "name": "read_file", "args": {"path": f"src/f{seq}.py"}},
                {"kind": "tool_result", "call_id": f"c{seq}", "output": "x = 1\n" * 40, "is_error": False},
            ):
                f.write(orjson.dumps({"v": 1, "seq": seq, "ts": "2026-11-01T00:00:00.000Z", **ev}) + b"\n")
                seq += 1
    (path / "summary.json").write_bytes(b'{"schema":1,"session_id":"b"}')


def best(fn, runs: int = 3) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def main() -> None:
    events = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "s"
        make(src, events)
        s = Session.open(src)
        base = best(lambda: inspect_session(s))
        check = best(lambda: analyse(s))
        res = best(lambda: resume(s, "openai"))
        n = [0]

        def do_fork() -> None:
            n[0] += 1
            fork(src, Path(tmp) / f"f{n[0]}")

        def do_copy() -> None:
            n[0] += 1
            shutil.copytree(src, Path(tmp) / f"c{n[0]}")

        copy = best(do_copy)
        forked = best(do_fork)
        size = (src / "updates.jsonl").stat().st_size / 1e6
        print(f"session: {events} events, {size:.1f} MB")
        print(f"inspect (baseline)    {base:.3f}s")
        print(f"repair --check        {check:.3f}s  ratio {check / base:.2f}x inspect")
        print(f"resume --format openai {res:.3f}s  ratio {res / base:.2f}x inspect")
        print(f"copytree (baseline)   {copy:.3f}s")
        print(f"fork                  {forked:.3f}s  ratio {forked / copy:.2f}x copytree, {forked / base:.2f}x inspect (fork validates every event)")


if __name__ == "__main__":
    main()
