"""`catty-ctx report`: a 2,000-turn session with 5 compactions, and a ROOT of 200 sessions.

Prints, for the long session: the page's size, its build time against `inspect --items
--json` of the same session (the fold every page needs), and Chromium's time to load and
run it (headless, the page's own clock at the end of its script, and the wall time of a
`--dump-dom` run against the same run on a blank page). For the ROOT: `report ROOT -o DIR`
against `inspect ROOT --json`. Targets from the issue: render < 2 s, page < 5 MB, ROOT < 10 s.

    python bench/report.py [--turns 2000] [--sessions 200] [--keep DIR]
"""
from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path[0] = str(Path(__file__).resolve().parent.parent)  # not bench/: its inspect.py would shadow the stdlib

from bench._util import best_of, catty, env_with_project

WORDS = ("def class return import self value error result file path test parse build token cache "
         "window context summary index segment session append view prune compact repair fork").split()
TOOLS = ("read_file", "run_terminal_cmd", "grep", "edit_file")


def _text(rng: random.Random, n: int) -> str:
    out, size = [], 0
    while size < n:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 12)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def _turns(rng: random.Random, first: int, count: int, ctx: int, window: int) -> tuple[list[dict], int]:
    """COUNT turns of user, assistant steps with tool calls and results, and a usage per step."""
    evs: list[dict] = []
    per_turn = int(window * 0.85 / 330)  # so a stage of ~333 turns reaches the threshold
    for t in range(first, first + count):
        evs.append({"kind": "message", "id": f"u{t}", "role": "user", "text": _text(rng, rng.randint(60, 300))})
        steps = rng.randint(1, 3)
        for s in range(steps):
            evs.append({"kind": "message", "id": f"a{t}.{s}", "role": "assistant", "text": _text(rng, rng.randint(30, 200))})
            calls = [f"c{t}.{s}.{k}" for k in range(rng.randint(1, 2))]
            for cid in calls:
                evs.append({"kind": "tool_call", "call_id": cid, "name": rng.choice(TOOLS), "args": {"path": f"src/{rng.choice(WORDS)}.py"}})
            for cid in calls:
                size = int(min(60_000, rng.lognormvariate(6.3, 1.1)))
                evs.append({"kind": "tool_result", "call_id": cid, "output": _text(rng, size), "is_error": rng.random() < 0.04})
            new = per_turn // steps + rng.randint(-40, 40)
            evs.append({"kind": "usage", "model": "claude-sonnet-4-5", "input": new, "output": rng.randint(60, 400),
                        "cache_read": ctx, "cache_write": rng.randint(0, 200), "reasoning": 0})
            ctx += new
        if t % 40 == 0:  # a subagent's request: counted under its agent, never on the main timeline
            evs.append({"kind": "usage", "agent": "explore-1", "model": "claude-haiku-4-5", "input": 3000, "output": 500,
                        "cache_read": 0, "cache_write": 0, "reasoning": 0})
        evs.append({"kind": "message", "id": f"a{t}.end", "role": "assistant", "text": _text(rng, rng.randint(40, 300))})
    return evs, ctx


def long_session(path: Path, *, turns: int = 2000, compactions: int = 5, seed: int = 11, window: int = 200_000) -> Path:
    """A session of TURNS turns compacted COMPACTIONS times (the last one two-pass, prefired)."""
    from catty_ctx import compact_session, create_session

    rng = random.Random(seed)
    s = create_session(path, session_id=f"long-{seed}", window=window, model="claude-sonnet-4-5")
    s.append([{"kind": "message", "id": "sys", "role": "system", "text": _text(rng, 3000)}])
    per = turns // (compactions + 1)
    ctx = 1000
    done = 0
    for stage in range(compactions + 1):
        count = per if stage < compactions else turns - done
        evs, ctx = _turns(rng, done + 1, count, ctx, window)
        s.append(evs)
        done += count
        if stage < compactions:
            last = stage == compactions - 1
            if last:
                compact_session(s, prefire=True)
            res = compact_session(s, force=True, mode="segments", two_pass=last)
            ctx = res.tokens_after or 8000
    return path


def small_root(root: Path, n: int = 200, seed: int = 5) -> Path:
    """N sessions of 20-120 turns; every tenth compacted once."""
    from catty_ctx import compact_session, create_session

    rng = random.Random(seed)
    for i in range(n):
        s = create_session(root / f"team-{i % 7}" / f"s{i:03d}", session_id=f"root-{i:03d}", window=200_000, model="claude-sonnet-4-5")
        evs, _ = _turns(rng, 1, rng.randint(20, 120), 1000, 200_000)
        s.append(evs)
        if i % 10 == 0:
            compact_session(s, force=True)
    return root


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def dump_dom(browser: str, url: str) -> tuple[float, str]:
    with tempfile.TemporaryDirectory() as profile:
        cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update", "--disable-sync",
               f"--user-data-dir={profile}", "--dump-dom", url]
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, timeout=120, check=False).stdout.decode("utf-8", "replace")
        return time.perf_counter() - t0, out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--turns", type=int, default=2000)
    ap.add_argument("--sessions", type=int, default=200)
    ap.add_argument("--keep", type=Path, default=None, help="build the inputs here and keep them")
    args = ap.parse_args()
    work = args.keep or Path(tempfile.mkdtemp(prefix="report-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    env = env_with_project()

    sess = work / "long"
    if not sess.exists():
        t0 = time.perf_counter()
        long_session(sess, turns=args.turns)
        print(f"built a {args.turns:,}-turn session with 5 compactions in {time.perf_counter() - t0:.1f} s")
    page = work / "long.html"
    build, _ = best_of(3, [*catty(), "report", str(sess), "-o", str(page)], env=env)
    base, _ = best_of(3, [*catty(), "inspect", str(sess), "--items", "--json"], env=env)
    size = page.stat().st_size
    print(f"long session: log {(sess / 'updates.jsonl').stat().st_size / 1e6:.1f} MB, page {size / 1e6:.2f} MB (target < 5 MB)")
    print(f"  build {build:.2f} s = {build / base:.2f}x inspect --items --json ({base:.2f} s)")
    browser = chromium()
    if browser is None:
        print("  chromium not installed: render time not measured")
    else:
        blank = work / "blank.html"
        blank.write_text("<!DOCTYPE html><title>blank</title><p>blank</p>")
        blank_wall = min(dump_dom(browser, blank.as_uri())[0] for _ in range(3))
        runs = [dump_dom(browser, page.as_uri()) for _ in range(3)]
        wall = min(r[0] for r in runs)
        ready = [int(m.group(1)) for _, dom in runs if (m := re.search(r'data-ready="(\d+)"', dom))]
        print(f"  chromium: script done at {min(ready) if ready else '?'} ms after navigation (target < 2000 ms); "
              f"--dump-dom wall {wall:.2f} s against {blank_wall:.2f} s for a blank page (+{wall - blank_wall:.2f} s)")

    root = work / "root"
    if not root.exists():
        t0 = time.perf_counter()
        small_root(root, args.sessions)
        print(f"built {args.sessions} sessions in {time.perf_counter() - t0:.1f} s")
    out = work / "site"
    shutil.rmtree(out, ignore_errors=True)
    site, _ = best_of(1, [*catty(), "report", str(root), "-o", str(out)], env=env)
    base_root, _ = best_of(1, [*catty(), "inspect", str(root), "--json"], env=env)
    print(f"ROOT of {args.sessions}: report -o DIR {site:.2f} s (target < 10 s) = {site / base_root:.2f}x inspect ROOT --json ({base_root:.2f} s)")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
