"""Build a large synthetic session (realistic mix of turns, tool calls and outputs), seeded."""
from __future__ import annotations

import random
from pathlib import Path

import orjson

WORDS = ("def class return import self value error result file path test parse build token cache "
         "window context summary index segment session append view prune compact repair fork").split()


def _text(rng: random.Random, n_bytes: int) -> str:
    out: list[str] = []
    size = 0
    while size < n_bytes:
        line = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 14)))
        out.append(line)
        size += len(line) + 1
    return "\n".join(out)


def build(path: Path, target_bytes: int, *, seed: int = 7, window: int = 200_000) -> Path:
    """Write SESSION/updates.jsonl of at least target_bytes; returns the log path."""
    rng = random.Random(seed)
    path.mkdir(parents=True, exist_ok=True)
    log = path / "updates.jsonl"
    seq = 0
    ts = "2026-11-01T00:00:00.000Z"

    def line(ev: dict) -> bytes:
        nonlocal seq
        full = {"v": 1, "seq": seq, "ts": ts, **ev}
        seq += 1
        return orjson.dumps(full) + b"\n"

    with open(log, "wb") as f:
        size = f.write(line({"kind": "session", "session_id": f"bench-{seed}", "window": window, "model": "bench-model"}))
        size += f.write(line({"kind": "message", "id": "sys", "role": "system", "text": _text(rng, 3000)}))
        turn = 0
        while size < target_bytes:
            turn += 1
            size += f.write(line({"kind": "message", "id": f"u{turn}", "role": "user", "text": _text(rng, rng.randint(80, 600))}))
            for step in range(rng.randint(1, 4)):
                size += f.write(line({"kind": "message", "id": f"a{turn}.{step}", "role": "assistant", "text": _text(rng, rng.randint(40, 400))}))
                calls = [f"c{turn}.{step}.{k}" for k in range(rng.randint(1, 3))]
                for cid in calls:
                    size += f.write(line({"kind": "tool_call", "call_id": cid, "name": rng.choice(["read_file", "run_terminal_cmd", "grep", "edit_file"]),
                                          "args": {"path": f"src/{rng.choice(WORDS)}.py", "limit": rng.randint(10, 400)}}))
                for cid in calls:
                    size += f.write(line({"kind": "tool_result", "call_id": cid, "output": _text(rng, int(rng.lognormvariate(7.5, 1.0))), "is_error": rng.random() < 0.05}))
                ctx = rng.randint(20_000, 150_000)
                size += f.write(line({"kind": "usage", "model": "bench-model", "input": 2000, "output": 300, "cache_read": ctx, "cache_write": 1500, "reasoning": 0}))
            size += f.write(line({"kind": "message", "id": f"a{turn}.end", "role": "assistant", "text": _text(rng, rng.randint(100, 800))}))
    return log
