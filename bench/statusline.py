"""Benchmark: `catty-ctx statusline` on a 50 MB Claude Code transcript, beside a bare interpreter.

    python bench/statusline.py [--mb 50] [--runs 15]

Builds a Claude Code home with one session of about MB megabytes (turns of a user prompt, an
assistant response in several content-block lines repeating its usage, a large tool result,
and a compaction every 200 turns), then times, interleaved with `python -c pass` (so background
load hits both alike): the cold run (no state: the whole transcript read once), warm runs on
the unchanged transcript, warm runs each after one more turn was appended (only those bytes
are read), and a run whose kept day cost has expired (the usage ledger asked again, once a
minute, in a process the status line starts and does not wait for: this run pays for the start). Prints the medians, wall and CPU (user + system: steadier on a shared machine),
and each one's ratio to the bare start-up; the target for the warm runs is a few interpreter
start-ups.
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path, and bench/inspect.py would shadow the stdlib's inspect.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import json  # noqa: E402
import random  # noqa: E402
import resource  # noqa: E402
import shutil  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from datetime import datetime, timedelta, timezone  # noqa: E402
from pathlib import Path  # noqa: E402

sys.path.append(_HERE)
from _util import OUT, catty, env_with_project  # noqa: E402

SESSION = "5e551011-0000-4000-8000-00000000be4c"


def turn(rng: random.Random, n: int, t: datetime, pad: int) -> list[bytes]:
    """One turn of a Claude Code transcript: prompt, a response of three block lines, a tool result."""
    base = {"isSidechain": False, "userType": "external", "cwd": "/home/user/project", "sessionId": SESSION, "version": "2.1.332"}
    stamp = t.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    usage = {"input_tokens": rng.randint(1, 50), "cache_creation_input_tokens": rng.randint(0, 4000),
             "cache_read_input_tokens": rng.randint(10_000, 150_000), "output_tokens": rng.randint(10, 3000)}
    lines = [{**base, "type": "user", "uuid": f"u{n}", "timestamp": stamp, "message": {"role": "user", "content": f"step {n}: go on"}}]
    for b in range(3):
        lines.append({**base, "type": "assistant", "uuid": f"a{n}.{b}", "timestamp": stamp, "requestId": f"req_{n:08d}",
                      "message": {"id": f"msg_{n:08d}", "role": "assistant", "model": "claude-sonnet-4-5-20250929",
                                  "content": [{"type": "text", "text": "x" * 200}], "usage": usage}})
    lines.append({**base, "type": "user", "uuid": f"r{n}", "timestamp": stamp, "toolUseResult": {"stdout": "y" * (pad // 2)},
                  "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{n}", "content": "z" * pad}]}})
    if n % 200 == 199:
        lines.append({**base, "type": "system", "subtype": "compact_boundary", "uuid": f"c{n}", "timestamp": stamp,
                      "compactMetadata": {"trigger": "auto", "preTokens": 160_000}})
    return [json.dumps(line).encode() + b"\n" for line in lines]


def build(home: Path, mb: float) -> Path:
    path = home / "projects" / "-home-user-project" / f"{SESSION}.jsonl"
    if path.exists() and path.stat().st_size >= mb * 1e6:
        return path
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = random.Random(7)
    t = datetime.now(timezone.utc) - timedelta(hours=6)
    with open(path, "wb") as f:
        n = 0
        while f.tell() < mb * 1e6:
            f.writelines(turn(rng, n, t, 12_000))
            n += 1
            t += timedelta(seconds=1)
    return path


def wall(cmd: list[str], env: dict[str, str], stdin: bytes | None = None) -> tuple[float, float]:
    """Wall and CPU seconds (user + system) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, input=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, check=True)
    took = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return took, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--mb", type=float, default=50.0)
    ap.add_argument("--runs", type=int, default=15)
    args = ap.parse_args()
    home = OUT / "statusline-home"
    cache = OUT / "statusline-cache"
    transcript = build(home, args.mb)
    env = env_with_project(XDG_CACHE_HOME=str(cache), CATTY_CTX_MIRRORS=str(home / "mirrors"))
    payload = json.dumps({"session_id": SESSION, "transcript_path": str(transcript), "cwd": "/home/user/project",
                          "model": {"id": "claude-sonnet-4-5-20250929", "display_name": "Sonnet 4.5"}}).encode()
    line = [*catty(), "statusline"]
    bare = [sys.executable, "-c", "pass"]
    rng = random.Random(11)
    n = 10**6
    folder = cache / "catty-ctx" / "statusline"

    shutil.rmtree(cache, ignore_errors=True)
    cold = wall(line, env, payload)
    times: dict[str, list[tuple[float, float]]] = {"bare start-up (python -c pass)": [], "warm, transcript unchanged": [],
                                     "warm, one turn appended": [], "day cost asked again (a process started)": []}
    for _ in range(args.runs):
        times["bare start-up (python -c pass)"].append(wall(bare, env))
        times["warm, transcript unchanged"].append(wall(line, env, payload))
        with open(transcript, "ab") as f:
            f.writelines(turn(rng, n, datetime.now(timezone.utc), 12_000))
        n += 1
        times["warm, one turn appended"].append(wall(line, env, payload))
    for _ in range(max(3, args.runs // 5)):
        for kept in folder.glob("today-*.json"):
            kept.unlink()
        times["day cost asked again (a process started)"].append(wall(line, env, payload))
    out = subprocess.run(line, input=payload, capture_output=True, env=env, check=True).stdout.decode().strip()
    base = [statistics.median(run[k] for run in times["bare start-up (python -c pass)"]) for k in (0, 1)]
    print(f"transcript: {transcript.stat().st_size / 1e6:.1f} MB; line: {out}")
    print(f"{'median of ' + str(args.runs) + ' runs':<42} {'wall':>9} {'ratio':>7} {'cpu':>10} {'ratio':>7}")
    for name, runs in {"cold (first run: the whole transcript)": [cold], **times}.items():
        m = [statistics.median(run[k] for run in runs) for k in (0, 1)]
        print(f"{name:<42} {m[0] * 1000:6.1f} ms {m[0] / base[0]:6.1f}x {m[1] * 1000:7.1f} ms {m[1] / base[1]:6.1f}x")


if __name__ == "__main__":
    main()
