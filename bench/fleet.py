"""Benchmark: the read-heavy commands locally and on a Dask LocalCluster (`--scheduler local:2`).

Generates N small catty sessions (default 100,000) and a Claude Code tree of about 2,000
files, then times `usage`, `inspect ROOT` and `repair --check ROOT` in one process and on
`local:2` (two worker processes), checks that both give the same output, and prints
sessions per second, the cluster's start-up, and the scheduler's overhead per task
(measured with empty tasks). From the measured per-session cost and overhead it projects
the time for 10⁶ sessions on 8, 64 and 512 workers (the note in docs/fleet.md).

    python bench/fleet.py [--sessions 100000] [--claude-files 2000] [--tree DIR] [--tasks 2000]

On a machine with few free cores, run fewer sessions (--sessions 10000): the figures per
session and per task are what the projection needs.
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path, and bench/inspect.py would shadow the stdlib's.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from pathlib import Path  # noqa: E402

import orjson  # noqa: E402

sys.path.append(_HERE)
from _util import OUT, catty, env_with_project  # noqa: E402

sys.path[:0] = [str(Path(_HERE).parent), str(Path(_HERE).parent / "tests")]
from support.usage_trees import claude_tree  # noqa: E402

PROJECT_WORKERS = (8, 64, 512)


def make_sessions(root: Path, n: int) -> None:
    """N small sessions (a session event, a few turns, a usage event each), 1,000 to a folder."""
    for i in range(n):
        folder = root / f"shard-{i // 1000:04d}" / f"s{i:07d}"
        folder.mkdir(parents=True)
        events = [{"kind": "session", "session_id": f"bench-{i}", "model": "claude-sonnet-4-20250514"}]
        for t in range(3):
            events.append({"kind": "message", "id": f"u{t}", "role": "user", "text": f"step {t} of task {i}: fix the parser"})
            events.append({"kind": "message", "id": f"a{t}", "role": "assistant", "text": "done: edited parser.py and ran the tests"})
            events.append({"kind": "usage", "model": "claude-sonnet-4-20250514", "input": 1000 + t, "output": 50 + i % 7,
                           "cache_read": 400, "cache_write": 0, "reasoning": 0})
        lines = [orjson.dumps({"v": 1, "seq": seq, "ts": f"2026-11-{1 + i % 28:02d}T09:00:{seq:02d}.000Z", **ev}) for seq, ev in enumerate(events)]
        (folder / "updates.jsonl").write_bytes(b"\n".join(lines) + b"\n")


def make_claude(root: Path, files: int) -> int:
    """A Claude Code tree of about FILES logs (sessions and their subagent files)."""
    per_project = 25
    projects = max(1, round(files / (per_project * 2.5)))  # the generator writes about 2.5 files per session (subagents)
    claude_tree(root, projects=projects, sessions=per_project, turns=6, pad=100, seed=11)
    return sum(1 for _ in root.rglob("*.jsonl"))


def timed(cmd: list[str], env: dict[str, str]) -> tuple[float, bytes, int]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True)
    return time.perf_counter() - start, proc.stdout, proc.returncode


def overhead_per_task(tasks: int) -> tuple[float, float]:
    """(cluster start-up seconds, seconds per empty task) on a LocalCluster of 2 processes, one task per item."""
    from catty_ctx.fleet.cluster import Engine

    start = time.perf_counter()
    with Engine("local:2") as engine:
        engine.client()
        up = time.perf_counter() - start
        list(engine.map(abs, list(range(50)), batch=1))  # warm: the function shipped, the workers' imports done
        t0 = time.perf_counter()
        got = list(engine.map(abs, list(range(tasks)), batch=1))
        per_task = (time.perf_counter() - t0) / tasks
    assert got == list(range(tasks))
    return up, per_task


def projection(per_session: float, per_task: float, startup: float, n: int = 10**6) -> list[tuple[int, int, float]]:
    """(workers, tasks, seconds) for N sessions: the work spread over the workers, plus the
    scheduler's cost per task (it handles tasks one at a time), plus the start-up."""
    from catty_ctx.fleet.cluster import MAX_BATCH, TASKS_PER_WORKER

    out = []
    for workers in PROJECT_WORKERS:
        batch = max(1, min(MAX_BATCH, math.ceil(n / (workers * TASKS_PER_WORKER))))
        tasks = math.ceil(n / batch)
        out.append((workers, tasks, n * per_session / workers + tasks * per_task + startup))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--claude-files", type=int, default=2000)
    ap.add_argument("--tree", help="keep the generated tree here (reused when it exists)")
    ap.add_argument("--tasks", type=int, default=2000, help="empty tasks timed for the scheduler's overhead")
    args = ap.parse_args()

    OUT.mkdir(parents=True, exist_ok=True)
    tmp = None
    if args.tree:
        root = Path(args.tree)
    else:
        tmp = tempfile.mkdtemp(prefix="catty-ctx-fleet-")
        root = Path(tmp)
    try:
        if not (root / "catty").exists():
            t0 = time.perf_counter()
            make_sessions(root / "catty", args.sessions)
            n_claude = make_claude(root / "claude", args.claude_files)
            print(f"generated {args.sessions:,} sessions and a Claude tree of {n_claude:,} files in {time.perf_counter() - t0:.1f} s")
        n = sum(1 for _ in (root / "catty").glob("*/*/updates.jsonl"))
        env = env_with_project(XDG_CACHE_HOME=str(OUT / "fleet-cache"))
        cases = [("usage", ["usage", str(root), "--json", "--no-cache"], n + sum(1 for _ in (root / "claude").rglob("*.jsonl"))),
                 ("inspect ROOT", ["inspect", str(root / "catty"), "--json"], n),
                 ("repair --check ROOT", ["repair", "--check", str(root / "catty"), "--json"], n)]
        up, per_task = overhead_per_task(args.tasks)
        print(f"LocalCluster(2) start-up {up:.2f} s; scheduler overhead {per_task * 1e3:.2f} ms per task ({args.tasks:,} empty tasks)")
        print(f"{'command':22} {'units':>8} {'local s':>9} {'units/s':>9} {'local:2 s':>10} {'units/s':>9} {'ratio':>6}  same")
        costs = {}
        for name, cmd, units in cases:
            here, out_here, rc_here = timed([*catty(), *cmd], env)
            there, out_there, rc_there = timed([*catty(), *cmd, "--scheduler", "local:2"], env)
            same = (out_here, rc_here) == (out_there, rc_there)
            costs[name] = here / units
            print(f"{name:22} {units:>8,} {here:>9.2f} {units / here:>9,.0f} {there:>10.2f} {units / there:>9,.0f} {here / there:>6.2f}  {same}")
        per_session = max(costs["inspect ROOT"], costs["repair --check ROOT"])
        print(f"\nprojection for 10⁶ sessions (per-session cost {per_session * 1e3:.3f} ms measured on one core here, "
              f"{per_task * 1e3:.2f} ms scheduler overhead per task, {up:.1f} s start-up):")
        for workers, tasks, seconds in projection(per_session, per_task, up):
            print(f"  {workers:>4} workers: {tasks:>6,} tasks, about {seconds:,.0f} s ({seconds / 60:.1f} min)")
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "error")
    main()
