"""Benchmark: how soon `catty-ctx mcp` (the recall server) answers `initialize`, beside a bare interpreter.

    python bench/mcp_start.py [--runs 15]

Each run starts the server as a client does (a new process, its stdin and stdout pipes), writes
the `initialize` request at once and times the answer from the start of the process; then, as a
client does on that answer, sends `notifications/initialized` and `tools/list` and times the
tools' answer too (the server's SDK loaded by then). Interleaved with runs of `python -c pass`
(so background load hits both alike). Prints the medians and the fastest, absolute and as a ratio
to the bare interpreter's start; the target is `initialize` within 0.5 s on a quiet machine.
"""
from __future__ import annotations

import sys

# This file's folder comes first on sys.path, and bench/inspect.py would shadow the stdlib's inspect.
_HERE = sys.path.pop(0)

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402

sys.path.append(_HERE)
from _util import ROOT, catty, env_with_project  # noqa: E402

SESSION = ROOT / "fixtures" / "agents" / "claude-2.1.332" / "tools-resume-compactions"
INITIALIZE = json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                         "params": {"protocolVersion": "2025-06-18", "capabilities": {"roots": {}},
                                    "clientInfo": {"name": "bench", "version": "1"}}}).encode() + b"\n"
THEN = b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'


def server_run(env: dict[str, str]) -> tuple[float, float]:
    """Seconds from the server's start to its `initialize` answer, and to its `tools/list` answer."""
    t0 = time.perf_counter()
    proc = subprocess.Popen([*catty(), "mcp", "--session", str(SESSION)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(INITIALIZE)
    proc.stdin.flush()
    answer = json.loads(proc.stdout.readline())
    initialized = time.perf_counter() - t0
    proc.stdin.write(THEN)
    proc.stdin.flush()
    listed = json.loads(proc.stdout.readline())
    tools = time.perf_counter() - t0
    proc.stdin.close()
    proc.wait()
    if answer.get("id") != 0 or "result" not in answer or listed.get("id") != 1 or len(listed["result"]["tools"]) != 4:
        sys.exit(f"unexpected answers: {answer} {listed}")
    return initialized, tools


def bare_run(env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-c", "pass"], env=env, check=True)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    opts = parser.parse_args()
    env = env_with_project()
    server_run(env)  # the page cache warm for both
    bare, inits, tools = [], [], []
    for _ in range(opts.runs):
        bare.append(bare_run(env))
        i, t = server_run(env)
        inits.append(i)
        tools.append(t)
    base = statistics.median(bare)
    print(f"load average {os.getloadavg()[0]:.2f} (1 min), {opts.runs} runs each, interleaved")
    print(f"{'':28} {'median':>8} {'fastest':>8} {'x bare':>7}")
    for name, walls in (("python -c pass", bare), ("mcp: initialize answered", inits), ("mcp: tools/list answered", tools)):
        print(f"{name:28} {statistics.median(walls):7.3f}s {min(walls):7.3f}s {statistics.median(walls) / base:6.1f}x")
    verdict = "within" if statistics.median(inits) <= 0.5 else "over"
    print(f"initialize: {statistics.median(inits):.3f} s median, {verdict} the 0.5 s target")


if __name__ == "__main__":
    main()
