"""Prompt-cache prefix reuse of `prune`'s strategies over a long session, replayed turn by turn.

A synthetic coding session (deterministic, seeded) of TURNS turns with realistic tool
outputs (file reads, test runs, greps, diffs) grows well past the window. At each real user
message the request is rebuilt from the log as it stood then and pruned; its prefix reuse is
the tokens of the longest common prefix with the previous request (canonical item equality,
what the fingerprint chain hashes) divided by the request's tokens. The mean is taken over
the requests made once the unpruned view is at least half the window. No pruning is the
upper bound of reuse (and overflows the window).

    python bench/prune_cache.py [--turns 90] [--window 200000] [--seed 7]
"""
from __future__ import annotations

import argparse
import random
import sys
import time
from pathlib import Path

# Put the project where this folder was: bench/inspect.py would shadow the stdlib's inspect.
sys.path[0] = str(Path(__file__).resolve().parent.parent)

from catty_ctx.prune.options import PruneOptions
from catty_ctx.prune.reuse import prefix_reuse
from catty_ctx.prune.pipeline import prune_items  # noqa: E402
from catty_ctx.view.fold import stream_view  # noqa: E402

WORDS = ("parse token buffer index offset config session result value error retry handler cache "
         "request stream window prefix digest segment window reader writer lock event item").split()


def _code(rng: random.Random, lines: int) -> str:
    out = []
    depth = 0
    for n in range(lines):
        w = rng.sample(WORDS, 3)
        kind = rng.random()
        if kind < 0.15:
            out.append(f"{'    ' * depth}def {w[0]}_{w[1]}(self, {w[2]}: int = {n}) -> None:")
            depth = min(depth + 1, 3)
        elif kind < 0.25 and depth:
            out.append(f"{'    ' * depth}return {w[0]}.{w[1]}({w[2]})")
            depth -= 1
        else:
            out.append(f"{'    ' * depth}{w[0]} = {w[1]}.get('{w[2]}', {rng.randint(0, 999)})  # {w[2]} {w[0]}")
    return "\n".join(out)


def _output(rng: random.Random, tool: str, turn: int) -> str:
    if tool == "read_file":
        return _code(rng, rng.randint(40, 360))
    if tool == "run_terminal_cmd":
        fails = rng.randint(0, 6)
        body = [f"tests/test_{rng.choice(WORDS)}.py::test_{rng.choice(WORDS)}_{i} {'FAILED' if i < fails else 'PASSED'}" for i in range(rng.randint(10, 120))]
        for i in range(fails):
            body.append(f"E   AssertionError: assert {rng.randint(0, 99)} == {rng.randint(0, 99)}\n" + _code(rng, rng.randint(3, 25)))
        return "\n".join(body) + f"\n{fails} failed, {len(body)} passed in {rng.random() * 9:.2f}s"
    if tool == "grep":
        return "\n".join(f"src/{rng.choice(WORDS)}.py:{rng.randint(1, 900)}: {rng.choice(WORDS)} = {rng.choice(WORDS)}()" for _ in range(rng.randint(2, 60)))
    if tool == "git_diff":
        return "\n".join(f"{rng.choice('+- ')} {line}" for line in _code(rng, rng.randint(10, 120)).splitlines())
    return f"edited src/{rng.choice(WORDS)}.py: {rng.randint(1, 40)} lines changed (turn {turn})"


def session(turns: int, window: int, seed: int) -> tuple[list[dict], list[int]]:
    """Events of the synthetic session and the index of each real user message."""
    rng = random.Random(seed)
    evs: list[dict] = [{"kind": "session", "session_id": "bench", "window": window},
                       {"kind": "message", "id": "sys", "role": "system", "text": "You are a coding agent. " * 40}]
    users = []
    tools = ["read_file"] * 4 + ["run_terminal_cmd"] * 3 + ["grep"] * 2 + ["git_diff", "edit_file", "edit_file"]
    c = 0
    for t in range(1, turns + 1):
        users.append(len(evs))
        evs.append({"kind": "message", "id": f"u{t}", "role": "user", "text": f"Turn {t}: " + " ".join(rng.choices(WORDS, k=rng.randint(8, 90)))})
        for r in range(rng.randint(1, 5)):
            evs.append({"kind": "message", "id": f"a{t}.{r}", "role": "assistant", "text": " ".join(rng.choices(WORDS, k=rng.randint(5, 120)))})
            ids = []
            for _ in range(rng.randint(1, 3)):
                c += 1
                tool = rng.choice(tools)
                ids.append((f"c{c}", tool))
                evs.append({"kind": "tool_call", "call_id": f"c{c}", "name": tool, "args": {"path": f"src/{rng.choice(WORDS)}.py", "n": c}})
            for cid, tool in ids:
                evs.append({"kind": "tool_result", "call_id": cid, "output": _output(rng, tool, t), "is_error": False})
        evs.append({"kind": "message", "id": f"a{t}.end", "role": "assistant", "text": " ".join(rng.choices(WORDS, k=rng.randint(20, 200)))})
    for seq, ev in enumerate(evs):
        ev.update(v=1, seq=seq, ts="2026-11-01T00:00:00.000Z")
    return evs, users


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--turns", type=int, default=90)
    ap.add_argument("--window", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    evs, users = session(a.turns, a.window, a.seed)
    strategies = {"none": None, "tiered": PruneOptions(strategy="tiered"), "cache-aware": PruneOptions()}
    prev: dict[str, list[bytes]] = {}
    reuse: dict[str, list[float]] = {k: [] for k in strategies}
    largest = dict.fromkeys(strategies, 0)
    batches = dict.fromkeys(strategies, 0)
    elapsed = dict.fromkeys(strategies, 0.0)
    counted = 0
    final_view = 0
    for u in users:
        view = list(stream_view(evs[: u + 1]))
        raw = sum(v.tokens for v in view)
        final_view = raw
        count = raw * 2 >= a.window
        counted += count
        for name, opts in strategies.items():
            t0 = time.perf_counter()
            if opts is None:
                req = view
            else:
                req, st = prune_items(view, opts, a.window)
                batches[name] = st.batches
            elapsed[name] += time.perf_counter() - t0
            tokens = sum(v.tokens for v in req)
            largest[name] = max(largest[name], tokens)
            if count and name in prev:
                reuse[name].append(prefix_reuse(prev[name], req).ratio)
            prev[name] = [v.canon for v in req]
    print(f"session: {a.turns} turns, {len(evs)} events, final unpruned view {final_view:,} tokens "
          f"({final_view / a.window:.2f}x the window of {a.window:,}); {counted} requests at >= half the window")
    print(f"{'strategy':<12} {'mean reuse':>10} {'vs none':>8} {'largest':>9} {'/window':>8} {'batches':>8} {'prune ms/req':>12}")
    base = sum(reuse["none"]) / max(1, len(reuse["none"]))
    for name in strategies:
        mean = sum(reuse[name]) / max(1, len(reuse[name]))
        print(f"{name:<12} {mean:>10.3f} {mean / base:>8.2f} {largest[name]:>9,} {largest[name] / a.window:>8.2f} "
              f"{batches[name] if name == 'cache-aware' else '-':>8} {elapsed[name] * 1000 / len(users):>12.1f}")


if __name__ == "__main__":
    main()
